/* test_verbs_reason.c - what an RDMA peer's REJECT says (rd_v_reject_reason): its private data
 * is written by whoever answered the connection, before any key is proved, and the reason
 * goes into the user's error line, so only printable ASCII gets there (before 2026-12-07 it
 * went as it came: escape sequences and a newline to forge a line). */
#include "check.h"

#include "transport/rd_verbs.h"

#include <string.h>

static void t_our_reason_as_sent(void)
{
    char out[200];
    static const char pd[] = "RDPrbusy: another sender is being served";
    CHECK_EQ_U(rd_v_reject_reason(pd, sizeof pd - 1, out, sizeof out), strlen(pd) - 4);
    CHECK(strcmp(out, "busy: another sender is being served") == 0);
}

static void t_control_bytes_are_replaced(void)
{
    char out[200];
    static const char pd[] = "RDPrno\033[2J\033]0;owned\007\nrdsend: done\xc3\xa9";
    rd_v_reject_reason(pd, sizeof pd - 1, out, sizeof out);
    CHECK(strcmp(out, "no?[2J?]0;owned??rdsend: done??") == 0);
}

static void t_not_ours_nor_too_long(void)
{
    char out[8];
    CHECK_EQ_U(rd_v_reject_reason("XXXXreason", 10, out, sizeof out), 0);
    CHECK(out[0] == '\0');
    CHECK_EQ_U(rd_v_reject_reason("RDPr", 4, out, sizeof out), 0);
    CHECK_EQ_U(rd_v_reject_reason(NULL, 40, out, sizeof out), 0);
    CHECK_EQ_U(rd_v_reject_reason("RDPrabcdefghijkl", 16, out, sizeof out), 7);   /* cut to fit */
    CHECK(strcmp(out, "abcdefg") == 0);
    CHECK_EQ_U(rd_v_reject_reason("RDPrab\0cd", 9, out, sizeof out), 2);           /* up to a NUL */
}

int main(void)
{
    RUN(t_our_reason_as_sent);
    RUN(t_control_bytes_are_replaced);
    RUN(t_not_ours_nor_too_long);
    return check_summary();
}

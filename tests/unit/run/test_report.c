/* test_report.c - the progress line's ETA (run/rd_report): seconds as M:SS, and a rate so low
 * that the ETA is past any int (a stalled transfer of a big file) clamped, not converted. */
#include "check.h"

#include "run/rd_report.h"

#include <math.h>

#define CASE_TIMEOUT_S 10

static void t_eta(void)
{
    char e[32];
    rd_format_eta(125.9, e, sizeof e);
    CHECK_STR_EQ(e, " ETA 2:05");
    rd_format_eta(0.4, e, sizeof e);
    CHECK_STR_EQ(e, " ETA 0:00");
    rd_format_eta(RD_ETA_MAX_S - 1, e, sizeof e);
    CHECK_STR_EQ(e, " ETA 5999:59");
    /* 1 TiB left at 1 byte in 3 s: 3.3e12 s, past INT_MAX (the cast was undefined) */
    rd_format_eta(3.3e12, e, sizeof e);
    CHECK_STR_EQ(e, " ETA >6000:00");
    rd_format_eta(INFINITY, e, sizeof e);
    CHECK_STR_EQ(e, " ETA >6000:00");
    rd_format_eta(NAN, e, sizeof e);
    CHECK_STR_EQ(e, " ETA >6000:00");
}

int main(void)
{
    check_watchdog(CASE_TIMEOUT_S);
    RUN(t_eta);
    return check_summary();
}

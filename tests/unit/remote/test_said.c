/* test_said.c - what an agent says after setup (rdr_said.h) and rdcp's notes inside its log
 * lines (rdc_note.h), parsed as the initiators act on them: the exact lines the agent and the
 * tree roles write, and the hostile ones atoi and sscanf took before 2026-12-07 (a wrapped
 * exit status of 0 from "4294967296", negative or "inf" seconds, "3junk" as 3). */
#include "check.h"

#include "copy/rdc_note.h"
#include "remote/rdr_line.h"
#include "remote/rdr_said.h"

#include <stdio.h>
#include <string.h>

/* parse a line as rdr_watch splits it */
static enum rdr_said_kind said(const char *line, struct rdr_said *s, char *buf, size_t n)
{
    snprintf(buf, n, "%s", line);
    char *w[8];
    return rdr_said_parse(w, rdr_split(buf, w, 8), s);
}

static void t_the_agents_own_lines(void)
{
    char buf[512], line[512];
    struct rdr_said s;
    char *h = rdr_hex_str("rdrecv: transfer broken");
    snprintf(line, sizeof line, RDR_SAID_EXIT_FMT, "recv", 4, 0, h);
    CHECK_EQ_I(said(line, &s, buf, sizeof buf), RDR_SAID_EXIT);
    CHECK(strcmp(s.role, "recv") == 0);
    CHECK_EQ_I(s.code, 4);
    CHECK_EQ_I(s.killed, 0);
    CHECK(strcmp(s.text, "rdrecv: transfer broken") == 0);
    rdr_said_free(&s);
    free(h);
    snprintf(line, sizeof line, RDR_SAID_EXIT_FMT, "cmd", 141, 1, "-");
    CHECK_EQ_I(said(line, &s, buf, sizeof buf), RDR_SAID_EXIT);
    CHECK_EQ_I(s.code, 141);
    CHECK_EQ_I(s.killed, 1);
    CHECK(strcmp(s.text, "") == 0);
    rdr_said_free(&s);
    snprintf(line, sizeof line, RDR_SAID_STAT_FMT, "recv", 1073741824ULL, 0.512345, "tcp,-3-streams");
    CHECK_EQ_I(said(line, &s, buf, sizeof buf), RDR_SAID_STAT);
    CHECK_EQ_U(s.bytes, 1073741824ULL);
    CHECK(s.seconds > 0.512344 && s.seconds < 0.512346);
    CHECK(strcmp(s.word, "tcp,-3-streams") == 0);
    rdr_said_free(&s);
    /* the transport word goes to the terminal in the summary: no escape sequence gets there */
    CHECK_EQ_I(said("stat recv 10 1.0 tcp\033]0;owned\007", &s, buf, sizeof buf), RDR_SAID_STAT);
    char tr[96];
    rdr_stat_transport(s.word, tr, sizeof tr);
    CHECK(strcmp(tr, "tcp?]0;owned?") == 0);
    rdr_said_free(&s);
    CHECK_EQ_I(said("closed", &s, buf, sizeof buf), RDR_SAID_CLOSED);
    CHECK_EQ_I(said("manifest 6162", &s, buf, sizeof buf), RDR_SAID_MANIFEST);
    CHECK(strcmp(s.word, "6162") == 0);
    CHECK_EQ_I(said("listed", &s, buf, sizeof buf), RDR_SAID_LISTED);
    CHECK_EQ_I(said("root 6162", &s, buf, sizeof buf), RDR_SAID_ROOT);
    CHECK(strcmp(s.word, "6162") == 0);
    /* a source host's "names at DST's top" that are no such name: a path, the directory
     * itself or its parent, a NUL, nothing, not hex, one over NAME_MAX */
    static const char *const bad_roots[] = { "root 612f62", "root 2f", "root 2e", "root 2e2e", "root 6100",
                                             "root 00", "root ", "root 6", "root zz", "root 61 62" };
    for (size_t i = 0; i < sizeof bad_roots / sizeof *bad_roots; i++)
        CHECK_EQ_I(said(bad_roots[i], &s, buf, sizeof buf), RDR_SAID_OTHER);
    char long_root[8 + 2 * 256 + 1] = "root ";
    for (int i = 0; i < 256; i++)
        strcat(long_root, "61");
    char big[1024];
    CHECK_EQ_I(said(long_root, &s, big, sizeof big), RDR_SAID_OTHER);
    long_root[5 + 2 * 255] = '\0';
    CHECK_EQ_I(said(long_root, &s, big, sizeof big), RDR_SAID_ROOT);
    CHECK_EQ_I(said("note 1b5b324a6869", &s, buf, sizeof buf), RDR_SAID_NOTE);
    CHECK(strcmp(s.text, "\\033[2Jhi") == 0);   /* no escape reaches the terminal */
    rdr_said_free(&s);
}

/* A role ended and its status is garbled: a failure (255), never 0 and never a chosen kill. */
static void t_a_garbled_exit_is_a_failure(void)
{
    static const char *lines[] = {
        "exit recv 4294967296 0 -",   /* atoi: 0, a success */
        "exit recv -1 0 -",
        "exit recv 256 0 -",
        "exit recv 4 2 -",            /* atoi: 2, "killed", so no failure named */
        "exit recv abc 0 -",          /* atoi: 0 */
        "exit recv +4 0 -",
        "exit recv 4 -0 -",
    };
    char buf[128];
    struct rdr_said s;
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        CHECK_EQ_I(said(lines[i], &s, buf, sizeof buf), RDR_SAID_EXIT);
        CHECK_EQ_I(s.code, RDR_SAID_CODE_MAX);
        CHECK_EQ_I(s.killed, 0);
        rdr_said_free(&s);
    }
    CHECK_EQ_I(said("exit recv 4 0 zz", &s, buf, sizeof buf), RDR_SAID_EXIT);   /* text not hex */
    CHECK_EQ_I(s.code, 4);
    CHECK(s.text && strcmp(s.text, "(a malformed message)") == 0);
    rdr_said_free(&s);
}

static void t_bad_lines_are_other(void)
{
    static const char *lines[] = {
        "stat recv 10 nan -", "stat recv 10 inf -", "stat recv 10 -1 -", "stat recv 10 1e300 -",
        "stat recv -10 1 -", "stat recv 18446744073709551616 1 -", "stat recv 10 0x10 -",
        "stat recv 10 1", "log zz", "log 414", "note", "exit recv 4 0", "closed now", "hello", "",
    };
    char buf[128];
    struct rdr_said s;
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        CHECK_EQ_I(said(lines[i], &s, buf, sizeof buf), RDR_SAID_OTHER);
        CHECK(s.text == NULL);
        rdr_said_free(&s);
    }
}

static void t_rdcp_notes_as_written(void)
{
    char line[256];
    struct rdc_note o;
    snprintf(line, sizeof line, RDC_NOTE_SENT_FMT, 20000ULL, 12ULL, 663000000ULL, 3ULL, 1ULL, 3.25);
    line[strlen(line) - 1] = '\0';   /* the agent's log line has no newline */
    CHECK_EQ_I(rdc_note_parse(line, &o), RDC_NOTE_SENT);
    CHECK_EQ_U(o.v[0], 20000);
    CHECK_EQ_U(o.v[2], 663000000);
    CHECK_EQ_U(o.v[4], 1);
    CHECK(o.secs == 3.25);
    snprintf(line, sizeof line, RDC_NOTE_PROGRESS_FMT, 5ULL, 6ULL, 7ULL);
    line[strlen(line) - 1] = '\0';
    CHECK_EQ_I(rdc_note_parse(line, &o), RDC_NOTE_PROGRESS);
    CHECK_EQ_U(o.v[1], 6);
    CHECK_EQ_I(rdc_note_parse("@rdcp made 612f62", &o), RDC_NOTE_MADE);
    CHECK(strcmp(o.text, "612f62") == 0);
    CHECK_EQ_I(rdc_note_parse("@rdcp notdir", &o), RDC_NOTE_NOTDIR);
    CHECK_EQ_I(rdc_note_parse("rdcp: cannot open 'x'", &o), RDC_NOTE_TEXT);
    CHECK(strcmp(o.text, "cannot open 'x'") == 0);
    CHECK_EQ_I(rdc_note_parse("@other thing", &o), RDC_NOTE_TAGGED);
}

static void t_rdcp_bad_notes_are_for_nobody(void)
{
    static const char *lines[] = {
        "@rdcp progress 1 2 3junk", "@rdcp progress 1 2 -3", "@rdcp progress 1 2", "@rdcp progress 1  2 3",
        "@rdcp progress 1 2 3 ", "@rdcp total 1 99999999999999999999", "@rdcp sent 1 2 3 4 5 nan",
        "@rdcp recv 1 2 3 4 5 -1", "@rdcp recv 1 2 3 4 5", "@rdcp made -", "@rdcp made 612", "@rdcp made 612F",
        "@rdcp made ", "@rdcp notdir ", "@rdcp",
    };
    struct rdc_note o;
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        CHECK_EQ_I(rdc_note_parse(lines[i], &o), RDC_NOTE_TAGGED);
        CHECK_EQ_U(o.v[0] + o.v[1] + o.v[2], 0);
    }
}

int main(void)
{
    RUN(t_the_agents_own_lines);
    RUN(t_a_garbled_exit_is_a_failure);
    RUN(t_bad_lines_are_other);
    RUN(t_rdcp_notes_as_written);
    RUN(t_rdcp_bad_notes_are_for_nobody);
    return check_summary();
}

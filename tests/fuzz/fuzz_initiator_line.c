/* fuzz_initiator_line.c - what rdpipe's and rdcp's initiators read from an agent after setup,
 * parsed and never acted on.
 *
 * The input is the byte stream on the initiator's end of an agent's control link (a remote
 * host, possibly hostile). It goes through the initiator's line reader (rdr_chan_fill /
 * rdr_chan_line from a memfd), is split as rdr_watch splits it, and every line is handed to
 *   - rdr_said_parse: closed, note, log, stat, exit, manifest, root, listed (rdr_said.h);
 *   - for a log line, rdc_note_parse: rdcp's "@rdcp ..." notes (rdc_note.h);
 *   - for a stat line's transport word, rdr_stat_transport (printable ASCII only).
 * Checked: kinds and fields in range (an exit status 0..255, killed 0 or 1, seconds finite in
 * [0, 1e9]); every text printable, with no control byte; a name made is non-empty lower-case
 * hex of whole bytes; what parses, written back with the writers' own formats, parses to the
 * same values. And from the input's first bytes, the lines an honest agent and honest tree
 * roles write always parse to what they were written from.
 */
#include "copy/rdc_note.h"
#include "remote/rdr_line.h"
#include "remote/rdr_said.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fz_check.h"

static int printable(const char *t)
{
    for (const unsigned char *p = (const unsigned char *)t; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-6 + 1e-12 * fabs(a);
}

/* A note that parsed, written back with its writer's format, parses to the same values. */
static void note_round_trip(const struct rdc_note *o)
{
    char line[512];
    const unsigned long long *v = o->v;
    switch (o->kind) {
    case RDC_NOTE_PROGRESS:
        snprintf(line, sizeof line, RDC_NOTE_PROGRESS_FMT, v[0], v[1], v[2]);
        break;
    case RDC_NOTE_TOTAL:
        snprintf(line, sizeof line, RDC_NOTE_TOTAL_FMT, v[0], v[1]);
        break;
    case RDC_NOTE_SENT:
        snprintf(line, sizeof line, RDC_NOTE_SENT_FMT, v[0], v[1], v[2], v[3], v[4], o->secs);
        break;
    case RDC_NOTE_RECV:
        snprintf(line, sizeof line, RDC_NOTE_RECV_FMT, v[0], v[1], v[2], v[3], v[4], o->secs);
        break;
    default:
        return;
    }
    line[strlen(line) - 1] = '\0';
    struct rdc_note back;
    CHECK(rdc_note_parse(line, &back) == o->kind);
    CHECK(memcmp(back.v, o->v, sizeof o->v) == 0);
    CHECK(near(back.secs, o->secs));
}

static void check_note(const char *text)
{
    struct rdc_note o;
    enum rdc_note_kind k = rdc_note_parse(text, &o);
    CHECK(k >= RDC_NOTE_TEXT && k <= RDC_NOTE_MADE);
    CHECK(k == o.kind);
    if (k == RDC_NOTE_TEXT || k == RDC_NOTE_MADE)
        CHECK(o.text != NULL && o.text >= text && o.text <= text + strlen(text));
    if (k == RDC_NOTE_MADE) {
        size_t n = strlen(o.text);
        CHECK(n > 0 && n % 2 == 0 && strspn(o.text, "0123456789abcdef") == n);
        char *name = rdr_unhex(o.text, NULL);
        CHECK(name != NULL);
        free(name);
    }
    if (k == RDC_NOTE_SENT || k == RDC_NOTE_RECV)
        CHECK(isfinite(o.secs) && o.secs >= 0 && o.secs <= RDR_SAID_SECONDS_MAX);
    if (k == RDC_NOTE_TEXT || k == RDC_NOTE_TAGGED || k == RDC_NOTE_NOTDIR || k == RDC_NOTE_MADE)
        CHECK(o.v[0] == 0 && o.v[4] == 0 && o.secs == 0);
    note_round_trip(&o);
}

static void check_line(char *line)
{
    char *w[8];
    int n = rdr_split(line, w, 8);
    struct rdr_said s;
    enum rdr_said_kind k = rdr_said_parse(w, n, &s);
    CHECK(k >= RDR_SAID_OTHER && k <= RDR_SAID_LISTED && k == s.kind);
    switch (k) {
    case RDR_SAID_NOTE:
    case RDR_SAID_LOG:
        CHECK(s.text && printable(s.text));
        if (k == RDR_SAID_LOG)
            check_note(s.text);
        break;
    case RDR_SAID_EXIT:
        CHECK(s.role && s.text && printable(s.text));
        CHECK(s.code >= 0 && s.code <= RDR_SAID_CODE_MAX && (s.killed == 0 || s.killed == 1));
        break;
    case RDR_SAID_STAT: {
        CHECK(s.role && s.word && !s.text);
        CHECK(isfinite(s.seconds) && s.seconds >= 0 && s.seconds <= RDR_SAID_SECONDS_MAX);
        char tr[64];
        rdr_stat_transport(s.word, tr, sizeof tr);
        CHECK(strlen(tr) < sizeof tr);
        for (const char *q = tr; *q; q++)
            CHECK(*q >= 0x20 && *q < 0x7f);
        /* written back by the agent's format, it says the same */
        char again[256], buf[256], *w2[8];
        snprintf(again, sizeof again, RDR_SAID_STAT_FMT, "r", s.bytes, s.seconds, "t");
        snprintf(buf, sizeof buf, "%s", again);
        struct rdr_said b;
        CHECK(rdr_said_parse(w2, rdr_split(buf, w2, 8), &b) == RDR_SAID_STAT);
        CHECK(b.bytes == s.bytes && near(b.seconds, s.seconds));
        rdr_said_free(&b);
        break;
    }
    case RDR_SAID_MANIFEST:
        CHECK(s.word && !s.text);
        break;
    case RDR_SAID_ROOT: {
        /* a name the stream can write at DST's top, and nothing else */
        CHECK(s.word && !s.text);
        size_t len;
        char *name = rdr_unhex(s.word, &len);
        CHECK(name && len >= 1 && len <= NAME_MAX && strlen(name) == len && !strchr(name, '/') &&
              strcmp(name, ".") && strcmp(name, ".."));
        free(name);
        break;
    }
    default:
        CHECK(!s.text);
        break;
    }
    rdr_said_free(&s);
}

/* The lines an honest agent and honest tree roles write, from values taken from the input:
 * they parse to those values. */
static void honest(const uint8_t *d, size_t size)
{
    uint8_t b[48] = { 0 };
    memcpy(b, d, size < sizeof b ? size : sizeof b);
    unsigned long long v[5];
    for (int i = 0; i < 5; i++) {
        memcpy(&v[i], b + 8 * i, 8);
        v[i] >>= b[40] % 64;   /* small numbers too */
    }
    double secs = (double)(v[0] % 1000000000000ULL) / 1e3;   /* up to 1e9 s, in ms */
    char line[512], buf[512], *w[8];
    struct rdr_said s;

    char text[9];
    memcpy(text, b + 41, 7);
    text[7] = '\0';
    char *h = rdr_hex_str(text);
    int code = b[0], killed = b[1] & 1;
    snprintf(line, sizeof line, RDR_SAID_EXIT_FMT, "send", code, killed, h);
    CHECK(rdr_said_parse(w, rdr_split(line, w, 8), &s) == RDR_SAID_EXIT);
    CHECK(s.code == code && s.killed == killed && strcmp(s.role, "send") == 0);
    char *shown = rdr_printable(text, strlen(text));
    CHECK(strcmp(s.text, shown) == 0);
    free(shown);
    rdr_said_free(&s);

    snprintf(line, sizeof line, RDR_SAID_STAT_FMT, "recv", v[1], secs, "tcp,-2-streams");
    CHECK(rdr_said_parse(w, rdr_split(line, w, 8), &s) == RDR_SAID_STAT);
    CHECK(s.bytes == v[1] && near(s.seconds, secs));
    rdr_said_free(&s);

    /* an @rdcp note goes as the hex of a log line */
    struct rdc_note o;
    snprintf(line, sizeof line, RDC_NOTE_RECV_FMT, v[0], v[1], v[2], v[3], v[4], secs);
    line[strlen(line) - 1] = '\0';
    char *lh = rdr_hex_str(line);
    snprintf(buf, sizeof buf, "log %s", lh);
    free(lh);
    CHECK(rdr_said_parse(w, rdr_split(buf, w, 8), &s) == RDR_SAID_LOG);
    CHECK(rdc_note_parse(s.text, &o) == RDC_NOTE_RECV);
    CHECK(memcmp(o.v, v, sizeof v) == 0 && near(o.secs, secs));
    rdr_said_free(&s);

    snprintf(line, sizeof line, RDC_NOTE_PROGRESS_FMT, v[2], v[3], v[4]);
    line[strlen(line) - 1] = '\0';
    CHECK(rdc_note_parse(line, &o) == RDC_NOTE_PROGRESS && o.v[0] == v[2] && o.v[2] == v[4]);

    if (text[0]) {
        snprintf(line, sizeof line, RDC_NOTE_MADE_FMT, h);
        line[strlen(line) - 1] = '\0';
        CHECK(rdc_note_parse(line, &o) == RDC_NOTE_MADE && strcmp(o.text, h) == 0);
    }
    free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0) {
        fd = memfd_create("fuzz-initiator-line", MFD_CLOEXEC);
        CHECK(fd >= 0);
    }
    honest(data, size);
    CHECK(ftruncate(fd, 0) == 0);
    CHECK(size == 0 || pwrite(fd, data, size, 0) == (ssize_t)size);
    CHECK(lseek(fd, 0, SEEK_SET) == 0);
    struct rdr_chan ch;
    rdr_chan_init(&ch, fd, -1);
    while (!ch.eof) {
        CHECK(rdr_chan_fill(&ch) != -1);   /* a memfd never says "would block" */
        char *line;
        while (rdr_chan_line(&ch, &line)) {
            check_line(line);
            free(line);
        }
    }
    rdr_chan_free(&ch);
    return 0;
}

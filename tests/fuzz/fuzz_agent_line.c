/* fuzz_agent_line.c - rdpipe's control-channel text, parsed and never acted on.
 *
 * The input is the byte stream an agent reads from its SSH channel's stdin. It goes through
 * the agent's own line reader (rdr_chan_fill / rdr_chan_line, from a memfd: no network, no
 * child), and every complete line is handed to
 *   - rdp_agent_parse, the agent's instruction parser (seg/key/manifest/next/...), and for a
 *     seg line that names a role, rdr_role_argv (what the agent would start for it),
 *   - rdr_link_setup_line, the initiator's parser of the agent's replies (hello/port/...):
 *     an address that is not an IP address is "-", a port outside 1..65535 none,
 *   - rdr_parse_segment (+ rdr_plan over the lines so far), the pipeline spec parser,
 *   - rdr_unhex on every word, with a rdr_hex round trip, and rdr_unhex_text (what the
 *     initiator shows of an agent's text: no control byte left),
 *   - rdc_manifest_parse on every word: rdcp --resume's manifest entries, which the
 *     destination sends and the source reads (rdc_tree.h), with a round trip through
 *     rdc_manifest_line.
 * Checked: decoded values round-trip, enums stay in range, a role is a row of the table and
 * its argv starts with that row's tool and argument (never a program the line names), nothing
 * leaks.
 */
#include "copy/rdc_tree.h"
#include "pipe/rdp_agent.h"
#include "engine/rd_lanes.h"
#include "transport/rd_session.h"
#include "remote/rdr_line.h"
#include "remote/rdr_link.h"
#include "remote/rdr_role.h"
#include "remote/rdr_spec.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fz_check.h"

#define MAX_SEGS 8

/* rdr_dest_check is newer than this target may be: used when the library has it */
int rdr_dest_check(const char *dest, char *err, int errlen) __attribute__((weak));

static int is_hex_word(const char *w)
{
    if (strcmp(w, "-") == 0)
        return 1;
    size_t n = strlen(w);
    if (n % 2)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)w[i]))
            return 0;
    return 1;
}

/* rdr_unhex accepts exactly the hex words, and rdr_hex gives them back (in lower case). */
static void hex_round_trip(const char *w)
{
    size_t n = 0;
    char *bytes = rdr_unhex(w, &n);
    CHECK((bytes != NULL) == is_hex_word(w));
    if (!bytes)
        return;
    CHECK(bytes[n] == '\0');
    char *again = rdr_hex(bytes, n);
    CHECK(again != NULL);
    if (strcmp(w, "-") == 0 || w[0] == '\0') {
        CHECK(n == 0 && strcmp(again, "-") == 0);
    } else {
        CHECK(strlen(again) == strlen(w));
        for (size_t i = 0; again[i]; i++)
            CHECK(again[i] == tolower((unsigned char)w[i]));
    }
    free(again);
    /* shown to the user (rdr_unhex_text): no C0 or DEL byte, no C1 (0xc2 0x80-0x9f) and no
     * lone 0x80-0x9f byte survives, and what is kept is the input's */
    char *shown = rdr_unhex_text(w);
    CHECK(shown != NULL);
    if (shown) {
        size_t k = strlen(shown);
        CHECK(k <= 4 * n);
        for (size_t i = 0; i < k; i++) {
            unsigned char c = (unsigned char)shown[i];
            CHECK(c >= 0x20 && c != 0x7f);
            if (c >= 0x80 && c <= 0x9f)
                CHECK(i > 0 && (unsigned char)shown[i - 1] != 0xc2);
            if (c >= 0x80 && c <= 0xbf)
                CHECK(i > 0 && (unsigned char)shown[i - 1] >= 0x80);   /* a continuation */
        }
        free(shown);
    }
    free(bytes);
}

/* A manifest entry that parses is written back by rdc_manifest_line into one that parses to
 * the same entry (a path or tmp name is cut at a NUL, as the parser keeps it). */
static void manifest_word(const char *w)
{
    struct rdc_manifest_entry e, again;
    if (rdc_manifest_parse(w, &e))
        return;
    CHECK(e.path != NULL && e.tmp != NULL);
    char *line = rdc_manifest_line(&e);
    CHECK(line != NULL);
    CHECK(rdc_manifest_parse(line, &again) == 0);
    CHECK(again.kind == e.kind && again.size == e.size && again.mtime_s == e.mtime_s);
    CHECK(again.mtime_ns == e.mtime_ns && memcmp(again.hash, e.hash, 16) == 0);
    CHECK(strcmp(again.path, e.path) == 0 && strcmp(again.tmp, e.tmp) == 0);
    free(again.path);
    free(again.tmp);
    free(line);
    free(e.path);
    free(e.tmp);
}

/* What the agent would start for a role: the table's tool (beside us or in PATH), its
 * argument, the convention's options, then exactly the seg line's words. */
static void role_argv(const struct rdp_agent_msg *m)
{
    const struct rdr_role *r = m->role;
    static const char *const opts[] = { "--encrypt", "--compress=3", NULL };
    char **v = rdr_role_argv(r, m->transport, m->encrypt ? opts : NULL, "host", "1", m->cmd, m->cmd_len);
    CHECK(v != NULL);
    const char *base = strrchr(v[0], '/');
    CHECK(strcmp(base ? base + 1 : v[0], r->tool) == 0);
    CHECK(strcmp(v[1], r->arg) == 0 && strcmp(v[2], "--transport") == 0 && v[3] == m->transport);
    int n = 4;
    if (m->encrypt) {   /* the stream's options come right after the transport */
        CHECK(strcmp(v[4], "--encrypt") == 0 && strcmp(v[5], "--compress=3") == 0);
        n = 6;
    }
    n += r->end == RDR_ROLE_RECEIVES ? 2 : 4;
    size_t words = 0;
    for (size_t i = 0; i < m->cmd_len; i++)
        if (i == 0 || m->cmd[i - 1] == '\0')
            words++;
    for (size_t i = 0; i < words; i++, n++) {
        CHECK(v[n] != NULL && v[n] >= m->cmd && v[n] < m->cmd + m->cmd_len);
        CHECK(v[n] == m->cmd || v[n][-1] == '\0');
    }
    CHECK(v[n] == NULL);
    rdr_role_argv_free(v);
}

static void agent_line(const char *line)
{
    char *copy = strdup(line);
    CHECK(copy != NULL);
    struct rdp_agent_msg m;
    enum rdp_agent_op op = rdp_agent_parse(copy, &m);
    CHECK(op == m.op && op >= RDP_OP_IGNORE && op <= RDP_OP_BAD);
    switch (op) {
    case RDP_OP_SEG:
        CHECK(m.cmd != NULL && m.path != NULL);
        CHECK(m.kind >= RDR_CMD && m.kind <= RDR_ROLE);
        CHECK(m.in >= RDR_IN_NONE && m.in <= RDR_IN_RECV);
        CHECK(m.out >= RDR_OUT_NONE && m.out <= RDR_OUT_SEND);
        CHECK(m.transport != NULL && m.cmd[m.cmd_len] == '\0');
        CHECK((m.kind == RDR_ROLE) == (m.role != NULL));
        CHECK(m.lanes <= RD_MAX_LANES);   /* "lanes=N": 1..64 or refused; 0 when not said */
        CHECK(m.streams <= RD_MAX_STREAMS);
        if (m.role) {
            CHECK(m.role >= rdr_roles && m.role < rdr_roles + RDR_NROLES);
            CHECK(rdr_role_find(m.role->name) == m.role);
            if (m.role->end == RDR_ROLE_RECEIVES)
                CHECK(m.in == RDR_IN_RECV && m.out == RDR_OUT_NONE);
            else
                CHECK(m.in == RDR_IN_NONE && m.out == RDR_OUT_SEND);
            role_argv(&m);
        }
        break;
    case RDP_OP_KEY:
    case RDP_OP_MANIFEST:
        CHECK(m.arg[0] != NULL && m.arg[0][0] != '\0');
        break;
    case RDP_OP_NEXT:
        CHECK(m.arg[0] && m.arg[1] && m.arg[2]);
        break;
    default:
        CHECK(m.cmd == NULL && m.path == NULL && m.role == NULL);
        break;
    }
    free(m.cmd);
    free(m.path);
    free(copy);
}

static void link_line(const char *line)
{
    char *copy = strdup(line);
    CHECK(copy != NULL);
    char *w[8];
    int n = rdr_split(copy, w, 8);
    CHECK(n >= 0 && n <= 8);
    for (int i = 0; i < n; i++) {
        CHECK(w[i][0] != '\0' && strchr(w[i], ' ') == NULL);
        hex_round_trip(w[i]);
        manifest_word(w[i]);
    }
    if (n > 0) {
        struct rdr_link l;
        memset(&l, 0, sizeof l);
        l.rfd = l.wfd = -1;
        int taken = rdr_link_setup_line(&l, w, n);
        CHECK(taken == 0 || taken == 1);
        CHECK(memchr(l.srv, '\0', sizeof l.srv) && memchr(l.cli, '\0', sizeof l.cli));
        /* an address or "-", a port or none: what becomes the next hop and is shown */
        CHECK(l.port >= 0 && l.port <= 65535);
        for (const char *a = l.srv; *a; a++)
            CHECK(*a > 0x20 && *a < 0x7f);
        for (const char *a = l.cli; *a; a++)
            CHECK(*a > 0x20 && *a < 0x7f);
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0) {
        fd = memfd_create("fuzz-agent-line", MFD_CLOEXEC);
        CHECK(fd >= 0);
    }
    CHECK(ftruncate(fd, 0) == 0);
    CHECK(size == 0 || pwrite(fd, data, size, 0) == (ssize_t)size);
    CHECK(lseek(fd, 0, SEEK_SET) == 0);

    struct rdr_chan ch;
    rdr_chan_init(&ch, fd, -1);
    struct rdr_seg segs[MAX_SEGS];
    int nsegs = 0;
    char err[256];
    size_t got = 0;
    while (!ch.eof) {
        ssize_t r = rdr_chan_fill(&ch);
        CHECK(r != -1);   /* a memfd never says "would block" */
        char *line;
        while (rdr_chan_line(&ch, &line)) {
            got += strlen(line) + 1;
            CHECK(strchr(line, '\n') == NULL);
            agent_line(line);
            link_line(line);
            if (rdr_dest_check) {
                err[0] = '\0';
                if (rdr_dest_check(line, err, sizeof err))
                    CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
            }
            if (nsegs < MAX_SEGS) {
                err[0] = '\0';
                if (rdr_parse_segment(line, &segs[nsegs], err, sizeof err) == 0) {
                    CHECK(segs[nsegs].host != NULL && segs[nsegs].text != NULL);
                    nsegs++;
                } else {
                    CHECK(err[0] != '\0');
                    rdr_seg_free(&segs[nsegs]);
                }
            }
            free(line);
        }
    }
    CHECK(got <= size);
    if (nsegs > 0) {
        struct rdr_seg *plan = NULL;
        int nplan = 0;
        if (rdr_plan(segs, nsegs, size & 1, &plan, &nplan, err, sizeof err) == 0) {
            CHECK(nplan >= nsegs && nplan <= nsegs + 2);
            free(plan);
        }
    }
    for (int i = 0; i < nsegs; i++)
        rdr_seg_free(&segs[i]);
    rdr_chan_free(&ch);
    return 0;
}

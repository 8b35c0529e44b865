/* test_line.c - remote/rdr_line's channel: the lines an agent link carries, read as the
 * initiator reads them (rdr_watch_pump: fill until it would block, then take the lines).
 *
 * A burst of complete lines bigger than the channel's buffer (an rdcp --resume manifest of
 * 40,000 files with long names, about 7 MB) must arrive whole; until 2026-11-27 the buffer's
 * limit, meant for a line that never ends, ended the channel instead ("lost the connection
 * to the agent", exit 255). A line that never ends still ends it. And the text an agent says
 * is shown with its control bytes escaped (rdr_unhex_text).
 */
#include "remote/rdr_line.h"
#include "remote/rdr_link.h"

#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>

#define NLINES 40000

static char *line_of(int i)
{
    char *s;
    if (asprintf(&s, "m %08d-%0150d", i, i) < 0)
        abort();
    return s;
}

/* the initiator's loop over one channel: fill until it would block or is full, take lines */
static int pump(struct rdr_chan *c, int *got, int *bad)
{
    while (rdr_chan_fill(c) > 0)
        ;
    char *line;
    while (rdr_chan_line(c, &line)) {
        char *want = line_of(*got);
        if (strcmp(line, want) != 0)
            (*bad)++;
        (*got)++;
        free(want);
        free(line);
    }
    return c->eof;
}

/* a regular file never blocks: every fill reads, so the buffer fills with complete lines */
static void t_burst_from_file(void)
{
    int fd = memfd_create("lines", MFD_CLOEXEC);
    CHECK_OR(fd >= 0, return);
    for (int i = 0; i < NLINES; i++) {
        char *s = line_of(i);
        CHECK(dprintf(fd, "%s\n", s) > 0);
        free(s);
    }
    lseek(fd, 0, SEEK_SET);
    struct rdr_chan c;
    rdr_chan_init(&c, fd, -1);
    int got = 0, bad = 0;
    for (int rounds = 0; rounds < 100000 && !pump(&c, &got, &bad); rounds++)
        ;
    CHECK_EQ_U(got, NLINES);
    CHECK_EQ_U(bad, 0);
    rdr_chan_free(&c);
    close(fd);
}

static void *writer(void *arg)
{
    int fd = *(int *)arg;
    for (int i = 0; i < NLINES; i++) {
        char *s = line_of(i);
        if (dprintf(fd, "%s\n", s) < 0)
            abort();
        free(s);
    }
    close(fd);
    return NULL;
}

/* a pipe fed by another thread, non-blocking as the agents' links are */
static void t_burst_from_pipe(void)
{
    int p[2];
    CHECK_OR(pipe2(p, O_CLOEXEC) == 0, return);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    pthread_t t;
    CHECK_OR(pthread_create(&t, NULL, writer, &p[1]) == 0, return);
    struct rdr_chan c;
    rdr_chan_init(&c, p[0], -1);
    int got = 0, bad = 0;
    while (!pump(&c, &got, &bad))
        usleep(got < NLINES ? 0 : 1000);
    pthread_join(t, NULL);
    CHECK_EQ_U(got, NLINES);
    CHECK_EQ_U(bad, 0);
    rdr_chan_free(&c);
    close(p[0]);
}

/* a peer that never ends its line: the channel ends once the line passes the limit */
static void t_endless_line(void)
{
    int fd = memfd_create("endless", MFD_CLOEXEC);
    CHECK_OR(fd >= 0, return);
    CHECK(dprintf(fd, "m first\n") > 0);
    char block[65536];
    memset(block, 'x', sizeof block);
    for (size_t n = 0; n < 3 * RDR_MAX_LINE; n += sizeof block)
        CHECK(write(fd, block, sizeof block) == (ssize_t)sizeof block);
    CHECK(dprintf(fd, "\nm after\n") > 0);
    lseek(fd, 0, SEEK_SET);
    struct rdr_chan c;
    rdr_chan_init(&c, fd, -1);
    int lines = 0;
    for (int rounds = 0; rounds < 1000 && !c.eof; rounds++) {
        while (rdr_chan_fill(&c) > 0)
            ;
        char *line;
        while (rdr_chan_line(&c, &line)) {
            lines++;
            free(line);
        }
    }
    CHECK(c.eof);
    CHECK_EQ_U(lines, 1);   /* the first line; never the one after the endless one */
    CHECK(c.cap <= 2 * RDR_MAX_LINE);
    rdr_chan_free(&c);
    close(fd);
}

/* text an agent says, as the initiator shows it */
static void t_unhex_text(void)
{
    static const struct { const char *raw, *shown; } cases[] = {
        { "plain text: 42%", "plain text: 42%" },
        { "\033[2J\033[1;31mFAKE\033[0m", "\\033[2J\\033[1;31mFAKE\\033[0m" },
        { "one\nrdpipe: forged\r", "one\\012rdpipe: forged\\015" },
        { "bell\a del\x7f tab\t", "bell\\007 del\\177 tab\\011" },
        { "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80" },
        { "c1 csi \xc2\x9b" "2J lone \x9b" "2J", "c1 csi \\302\\2332J lone \\2332J" },
        { "overlong \xc0\xaf cut \xe6\x97", "overlong \\300\\257 cut \\346\\227" },
        { "surrogate \xed\xa0\x80 big \xf4\x90\x80\x80", "surrogate \\355\\240\\200 big \\364\\220\\200\\200" },
        { "a name shown as a\\000b", "a name shown as a\\000b" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *hex = rdr_hex(cases[i].raw, strlen(cases[i].raw));
        char *t = hex ? rdr_unhex_text(hex) : NULL;
        CHECK_OR(t, free(hex); continue);
        if (strcmp(t, cases[i].shown) != 0)
            check_fail_at(__FILE__, __LINE__, "case %zu: shown as \"%s\", want \"%s\"", i, t, cases[i].shown);
        free(t);
        free(hex);
    }
    CHECK(rdr_unhex_text("4") == NULL);   /* malformed hex, as rdr_unhex */
}

/* The agent's hello and port replies: the next hop connects to what they say, and -v shows
 * it, so only an IP address and a port in 1..65535 are taken (before 2026-12-07 any word, and
 * atoi's reading of the port: "-1", "70000", "99999999999"). */
static void link_reply(struct rdr_link *l, const char *line)
{
    char buf[256], *w[8];
    snprintf(buf, sizeof buf, "%s", line);
    memset(l, 0, sizeof *l);
    rdr_link_setup_line(l, w, rdr_split(buf, w, 8));
}

static void t_link_hello_and_port(void)
{
    struct rdr_link l;
    link_reply(&l, "hello 10.0.0.9 10.0.0.1 42");
    CHECK(l.hello && strcmp(l.srv, "10.0.0.9") == 0 && strcmp(l.cli, "10.0.0.1") == 0);
    link_reply(&l, "hello fe80::1%eth0 fd77::2 42");
    CHECK(strcmp(l.srv, "fe80::1%eth0") == 0 && strcmp(l.cli, "fd77::2") == 0);
    link_reply(&l, "hello - - -");
    CHECK(l.hello && strcmp(l.srv, "-") == 0);
    link_reply(&l, "hello evil.example\033]0;x\007 10.0.0.1%x 42");
    CHECK(l.hello && strcmp(l.srv, "-") == 0 && strcmp(l.cli, "-") == 0);
    link_reply(&l, "hello fe80::1% ::1%a\033b 42");
    CHECK(strcmp(l.srv, "-") == 0 && strcmp(l.cli, "-") == 0);
    link_reply(&l, "port 40001");
    CHECK_EQ_I(l.port, 40001);
    static const char *bad[] = { "port -1", "port 0", "port 65536", "port 99999999999", "port 4x", "port +5", "port" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        link_reply(&l, bad[i]);
        CHECK_EQ_I(l.port, 0);
    }
}

int main(void)
{
    RUN(t_link_hello_and_port);
    RUN(t_unhex_text);
    RUN(t_burst_from_file);
    RUN(t_burst_from_pipe);
    RUN(t_endless_line);
    return check_summary();
}

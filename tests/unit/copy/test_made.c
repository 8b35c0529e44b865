/* test_made.c - the names a tree receiver reports it made (rdc_rcv_report_made), which the next
 * source host's run refuses to replace: every name, one line each, whatever the buffer does. */
#include "check.h"

#include "copy/rdc_recv.h"
#include "copy/rdc_recv_int.h"
#include "copy/rdc_set.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* n names of len characters ("n0000001...") made by a receiver; what it reports on stderr
 * read back: each line once, in the form, no NUL anywhere. Lines of 32 bytes (10-character
 * names) end exactly at the 64 KiB buffer's end: the line after it lost its name before
 * 2026-11-29 (its newline became snprintf's NUL). */
static void report_round_trip(unsigned n, unsigned len)
{
    char dir[] = "/tmp/rdpipe-made.XXXXXX", out[] = "/tmp/rdpipe-made-out.XXXXXX";
    CHECK_OR(mkdtemp(dir) != NULL, return);
    int fd = mkstemp(out);
    CHECK_OR(fd >= 0, return);
    struct rdc_rcv *r = rdc_rcv_new(dir, 1, 0, 0, 1);
    CHECK_OR(r != NULL, return);
    char name[64];
    for (unsigned i = 0; i < n; i++) {
        snprintf(name, sizeof name, "n%0*u", (int)len - 1, i);
        rdc_set_add(&r->made_files, name);
    }
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    rdc_rcv_report_made(r);
    dup2(saved, STDERR_FILENO);
    close(saved);
    off_t size = lseek(fd, 0, SEEK_END);
    char *buf = malloc((size_t)size + 1);
    CHECK_OR(buf && pread(fd, buf, (size_t)size, 0) == size, return);
    buf[size] = '\0';
    CHECK_EQ_U(strlen(buf), (unsigned long)size);   /* no NUL inside */
    unsigned lines = 0, bad = 0;
    char want_prefix[] = "@rdcp made ";
    for (char *l = buf, *e; *l; l = e + 1) {
        e = strchr(l, '\n');
        if (!e)
            break;
        lines++;
        bad += strncmp(l, want_prefix, strlen(want_prefix)) != 0 ||
               (size_t)(e - l) != strlen(want_prefix) + 2 * len;
    }
    CHECK_EQ_U(lines, n);
    CHECK_EQ_U(bad, 0);
    free(buf);
    rdc_rcv_free(r);
    close(fd);
    unlink(out);
    rmdir(dir);
}

static void t_lines_that_fill_the_buffer_exactly(void) { report_round_trip(3000, 10); }
static void t_odd_lengths(void) { report_round_trip(5000, 13); }

int main(void)
{
    RUN(t_lines_that_fill_the_buffer_exactly);
    RUN(t_odd_lengths);
    return check_summary();
}

/* rd_stdfd.c - see rd_stdfd.h. */
#include "util/rd_stdfd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned closed_at_start;
static int stdout_errno, stdout_said;

void rd_stdout_failed(int e, int said)
{
    if (!stdout_errno)
        stdout_errno = e;
    stdout_said |= said;
}

/* What stdio still holds for stdout (--help, --version, a table) is written at exit; a
 * failure there (a full disk, a reader gone) must not end in exit 0, as with GNU tools. */
static void flush_stdout(void)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout) && !stdout_errno)
        return;
    int e = errno ? errno : stdout_errno;
    if (!stdout_said)
        fprintf(stderr, "%s: cannot write stdout: %s\n", program_invocation_short_name,
                e ? strerror(e) : "write error");
    _exit(5);
}

void rd_stdfd_reserve(void)
{
    atexit(flush_stdout);
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        /* O_PATH: the number is taken, but reading or writing it fails as on a closed fd;
         * without O_CLOEXEC, so a command rdpipe starts finds it closed too. open returns
         * the lowest free number: this one, as every lower one is open by now */
        int got = open("/dev/null", O_PATH);
        if (got < 0)
            got = open("/", O_PATH);
        if (got < 0)
            _exit(5);   /* no way to say so: stderr may be the one closed */
        if (got != fd) {   /* cannot happen while the lower ones are open; be sure */
            dup2(got, fd);
            close(got);
        }
        closed_at_start |= 1u << fd;
    }
}

int rd_stdfd_was_closed(int fd)
{
    return fd >= 0 && fd <= 2 && (closed_at_start >> fd) & 1;
}

/* clock_ahead.c - an LD_PRELOAD shim for kills.sh: CLOCK_REALTIME reads CLOCK_AHEAD_S seconds
 * ahead of the real one. A deadline computed from it and waited for against the kernel's
 * wall clock then lies that far in the future, as if the wall clock had been stepped back
 * that much (NTP at boot, a resumed VM, `date -s`) just after it was computed: the wait
 * lasts that much longer. Waits against CLOCK_MONOTONIC do not notice. Every other clock and
 * call goes through.
 *   cc -shared -fPIC -o clock_ahead.so clock_ahead.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

int clock_gettime(clockid_t id, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    if (!real)
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real(id, ts);
    const char *ahead = getenv("CLOCK_AHEAD_S");
    if (rc == 0 && ahead && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
        ts->tv_sec += atol(ahead);
    return rc;
}

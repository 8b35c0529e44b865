#include "util/rd_clock.h"

#include <errno.h>
#include <limits.h>
#include <time.h>

double rd_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void rd_deadline_ns(struct timespec *ts, long long ns)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(ns / 1000000000LL);
    ts->tv_nsec += (long)(ns % 1000000000LL);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int rd_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, const struct timespec *deadline)
{
    return pthread_cond_clockwait(cond, mu, CLOCK_MONOTONIC, deadline);
}

/* Not pthread_clockjoin_np: ThreadSanitizer (GCC 12's) does not see that join, and takes
 * the next thread given the same id for a duplicate. The joins it serves end a thread that
 * is stopping: a try every millisecond costs nothing there. */
int rd_join_until(pthread_t t, const struct timespec *deadline)
{
    for (;;) {
        int rc = pthread_tryjoin_np(t, NULL);
        if (rc != EBUSY)
            return rc;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > deadline->tv_sec || (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec))
            return ETIMEDOUT;
        struct timespec nap = { 0, 1000000L };
        nanosleep(&nap, NULL);
    }
}

int rd_ms_until(double deadline)
{
    if (deadline < 0)
        return -1;
    double left = (deadline - rd_now()) * 1000;
    return left <= 0 ? 0 : left >= INT_MAX ? INT_MAX : (int)left + 1;
}

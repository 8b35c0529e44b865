#include "util/rd_clock.h"

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

int rd_join_until(pthread_t t, const struct timespec *deadline)
{
    return pthread_clockjoin_np(t, NULL, CLOCK_MONOTONIC, deadline);
}

int rd_ms_until(double deadline)
{
    if (deadline < 0)
        return -1;
    double left = (deadline - rd_now()) * 1000;
    return left <= 0 ? 0 : left >= INT_MAX ? INT_MAX : (int)left + 1;
}

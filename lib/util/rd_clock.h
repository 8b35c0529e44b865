/* rd_clock.h - the one clock every layer uses: monotonic seconds as a double.
 * At the bottom of the stack, so that transports and tools need not include the report. */
#ifndef RD_CLOCK_H
#define RD_CLOCK_H

#include <pthread.h>

double rd_now(void);
struct timespec;
/* CLOCK_MONOTONIC now plus ns nanoseconds: the deadline of rd_cond_wait_until and
 * rd_join_until. Never the wall clock: stepped back an hour (NTP at boot, a resumed VM,
 * `date -s`) during a 2 s wait, that wait would last an hour. */
void rd_deadline_ns(struct timespec *ts, long long ns);
/* pthread_cond_timedwait and pthread_timedjoin_np against an rd_deadline_ns deadline:
 * 0, or ETIMEDOUT once it passed. */
int rd_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, const struct timespec *deadline);
int rd_join_until(pthread_t t, const struct timespec *deadline);
/* Milliseconds until the rd_now() deadline, for poll: -1 (forever) when deadline < 0, 0 once
 * it passed, else rounded up (a wait never ends just before it) and at most INT_MAX. */
int rd_ms_until(double deadline);

#endif

/* rd_clock.h - the one clock every layer uses: monotonic seconds as a double.
 * At the bottom of the stack, so that transports and tools need not include the report. */
#ifndef RD_CLOCK_H
#define RD_CLOCK_H

double rd_now(void);
struct timespec;
/* CLOCK_REALTIME now plus ns nanoseconds: the deadline of a pthread timed wait or join. */
void rd_deadline_ns(struct timespec *ts, long long ns);
/* Milliseconds until the rd_now() deadline, for poll: -1 (forever) when deadline < 0, 0 once
 * it passed, else rounded up (a wait never ends just before it) and at most INT_MAX. */
int rd_ms_until(double deadline);

#endif

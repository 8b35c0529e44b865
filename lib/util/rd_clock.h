/* rd_clock.h - the one clock every layer uses: monotonic seconds as a double.
 * At the bottom of the stack, so that transports and tools need not include the report. */
#ifndef RD_CLOCK_H
#define RD_CLOCK_H

double rd_now(void);
struct timespec;
/* CLOCK_REALTIME now plus ns nanoseconds: the deadline of a pthread timed wait or join. */
void rd_deadline_ns(struct timespec *ts, long long ns);

#endif

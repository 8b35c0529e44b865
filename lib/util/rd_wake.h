/* rd_wake.h - stopping a thread that may sit in a blocking read or write (a stuck stdin, a
 * consumer that stopped reading) by waking it, never by cancelling it: cancellation could land
 * inside a producer's or consumer's own code (rdcp's) and leave its state half changed.
 *
 * The stopper sets the stop flag the thread checks and calls rd_wake_join, which sends
 * RD_WAKE_SIGNAL (its handler does nothing and is installed without SA_RESTART, so the
 * blocked call returns EINTR) until the thread has ended. The IO loops of rd_io treat EINTR
 * with the flag set as "stop now". */
#ifndef RD_WAKE_H
#define RD_WAKE_H

#include <pthread.h>
#include <stdatomic.h>

/* Install the no-op handler (idempotent); before the threads that may be woken start. */
void rd_wake_install(void);
/* The thread that may be woken: make sure the wake signal is not blocked in it (threads
 * inherit their creator's mask). */
void rd_wake_unblock(void);
/* Wake t once out of a blocking call (its stop flag set by the caller); t must not have been
 * joined yet. A wake can land just before the call: whoever kicks, kicks again. */
void rd_wake_kick(pthread_t t);
/* Set *stop, then wake t every 50 ms until it has ended, and join it. */
void rd_wake_join(pthread_t t, atomic_int *stop);

#endif

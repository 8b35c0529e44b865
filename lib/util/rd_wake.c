#include "util/rd_wake.h"

#include "util/rd_clock.h"

#include <signal.h>
#include <string.h>
#include <time.h>

#define WAKE_EVERY_NS 50000000L   /* a wake can land just before the call it was meant for */

static int wake_signal(void)
{
    return SIGRTMIN + 1;   /* a real-time signal of our own: nothing else sends it */
}

static void on_wake(int sig)
{
    (void)sig;
}

static void install_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_wake;   /* no SA_RESTART: the blocked read or write returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(wake_signal(), &sa, NULL);
}

void rd_wake_install(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_handler);
}

void rd_wake_unblock(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, wake_signal());
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

void rd_wake_kick(pthread_t t)
{
    pthread_kill(t, wake_signal());
}

void rd_wake_join(pthread_t t, atomic_int *stop)
{
    atomic_store(stop, 1);
    for (;;) {
        pthread_kill(t, wake_signal());
        struct timespec ts;
        rd_deadline_ns(&ts, WAKE_EVERY_NS);
        if (rd_join_until(t, &ts) == 0)
            return;
    }
}

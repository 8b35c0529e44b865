#include "util/rd_interrupt.h"

#include "util/rd_clock.h"
#include "util/rd_error.h"
#include "util/rd_thread.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define POKE_EVERY_NS 100000000L

static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rd_interrupt_hook hook;   /* under hook_lock */
static atomic_int got_signal;

static sigset_t watched;   /* set once by rd_interrupt_install, before the watcher starts */

/* The three, less any the tool was started with ignored: `nohup`'s SIGHUP, the SIGINT of a
 * shell script's background job. A blocked signal is queued even when ignored, so watching
 * one of those would end the tool on a signal it was meant to ignore. */
static void watch_set(sigset_t *set)
{
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
    sigemptyset(set);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction now;
        if (sigaction(sigs[i], NULL, &now) == 0 && now.sa_handler != SIG_IGN)
            sigaddset(set, sigs[i]);
    }
}

const char *rd_interrupt_name(int signo)
{
    return signo == SIGINT ? "SIGINT" : signo == SIGTERM ? "SIGTERM" : signo == SIGHUP ? "SIGHUP" : "a signal";
}

void rd_interrupt_record(struct rd_errctx *ctx, int signo)
{
    struct rd_errctx *mine = rd_errctx_bind(ctx);
    rd_fail(RD_ESTREAM, "interrupted by %s", rd_interrupt_name(signo));
    rd_errctx_bind(mine);
}

/* Die by signo: its default action, delivered to this thread. */
static _Noreturn void die(int signo)
{
    fflush(stderr);
    signal(signo, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, signo);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(signo);
    _exit(128 + signo);   /* not reached: the default action of all three ends the process */
}

/* the hook, if one is set: 1 when it stops the stream itself */
static int call_hook(int signo)
{
    pthread_mutex_lock(&hook_lock);
    int graceful = hook.fn ? hook.fn(hook.ctx, signo) : 0;
    pthread_mutex_unlock(&hook_lock);
    return graceful;
}

static void *watcher_main(void *arg)
{
    (void)arg;
    sigset_t set = watched;
    rd_thread_name("rd-signals");
    rd_errctx_bind(NULL);   /* it outlives whichever transfer started it: never its context */
    int signo;
    while (sigwait(&set, &signo) != 0)
        ;
    atomic_store(&got_signal, signo);
    if (!call_hook(signo))
        die(signo);   /* no stream yet: nobody to tell */
    /* the stream is stopping: the tool dies by the signal once it has (rd_interrupt_finish),
     * unless it takes longer than the grace or the user insists */
    double end = rd_now() + RD_INTERRUPT_GRACE_MS / 1000.0;
    for (;;) {
        struct timespec wait = { 0, POKE_EVERY_NS };
        int again = sigtimedwait(&set, NULL, &wait);
        if (again > 0 || rd_ms_until(end) == 0 || (again < 0 && errno != EAGAIN && errno != EINTR)) {
            rd_warn("interrupted by %s before the peer could be told", rd_interrupt_name(signo));
            die(signo);
        }
        call_hook(signo);
    }
    return NULL;
}

int rd_interrupt_install(void)
{
    watch_set(&watched);
    sigset_t old;
    if (pthread_sigmask(SIG_BLOCK, &watched, &old))
        return -1;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = rd_thread_create(&t, &attr, watcher_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return -1;
    }
    return 0;
}

void rd_interrupt_set(rd_interrupt_fn fn, void *ctx, struct rd_interrupt_hook *prev)
{
    pthread_mutex_lock(&hook_lock);
    if (prev)
        *prev = hook;
    hook = (struct rd_interrupt_hook){ fn, ctx };
    pthread_mutex_unlock(&hook_lock);
}

void rd_interrupt_restore(const struct rd_interrupt_hook *prev)
{
    pthread_mutex_lock(&hook_lock);
    hook = *prev;
    pthread_mutex_unlock(&hook_lock);
}

int rd_interrupted(void)
{
    return atomic_load(&got_signal);
}

void rd_interrupt_finish(void)
{
    int signo = rd_interrupted();
    if (signo)
        die(signo);
}

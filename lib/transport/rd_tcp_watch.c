/* rd_tcp_watch.c - see rd_tcp_watch.h. Apart from rd_tcp.c because the peer's window is only
 * in <linux/tcp.h>'s struct tcp_info, which cannot share a file with glibc's <netinet/tcp.h>. */
#include "transport/rd_tcp_watch.h"

#include "util/rd_error.h"
#include "util/rd_thread.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/socket.h>
#include <time.h>

#define WATCH_EVERY_MS 500

#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS 44   /* Linux 6.15; before it the kernel refuses it and keeps 120 s */
#endif

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rd_tcp_watched *watched;   /* under lock */
static int started;                      /* under lock */

/* Waiting on a closed window (lifted) or not. While lifted, a close is abortive (SO_LINGER 0):
 * a process killed meanwhile leaves no orphaned socket that the kernel keeps probing for
 * minutes with its unsent data, now that the timeout is off; its peer gets a reset at once.
 * rd_tcp_watch_remove puts the connection back first, so our own closes stay graceful.
 * And the window probes come at least every half timeout (TCP_RTO_MAX_MS): the kernel doubles
 * their interval up to 2 minutes while a pause lasts, so a host that vanished an hour into one
 * was noticed only after two of those, up to 4 minutes; now after about the timeout, as with
 * an open window. */
static void set_lifted(struct rd_tcp_watched *w, int lifted)
{
    int uto = lifted ? 0 : w->user_timeout_ms;
    struct linger lg = { .l_onoff = lifted, .l_linger = 0 };
    setsockopt(w->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof uto);
    setsockopt(w->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    if (lifted) {
        int was = 0, cap = w->user_timeout_ms / 2;
        socklen_t len = sizeof was;
        if (getsockopt(w->fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &was, &len) == 0 && was > 0) {
            cap = cap < 1000 ? 1000 : cap > was ? was : cap;   /* the kernel takes 1 s at least */
            if (setsockopt(w->fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &cap, sizeof cap) == 0)
                w->rto_max_ms = was;
        }
    } else if (w->rto_max_ms) {
        setsockopt(w->fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &w->rto_max_ms, sizeof w->rto_max_ms);
        w->rto_max_ms = 0;
    }
    w->lifted = lifted;
}

static void look_at(struct rd_tcp_watched *w)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    if (getsockopt(w->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) ||
        len < offsetof(struct tcp_info, tcpi_snd_wnd) + sizeof ti.tcpi_snd_wnd)
        return;   /* before Linux 5.4: no window here, and the timeout counts only unanswered probes */
    int closed = ti.tcpi_snd_wnd == 0;
    if (closed != w->lifted)
        set_lifted(w, closed);
    if (w->lifted && ti.tcpi_probes >= 2 && ti.tcpi_last_ack_recv >= (unsigned)w->user_timeout_ms &&
        !atomic_exchange(&w->silent, 1))
        shutdown(w->fd, SHUT_RDWR);
}

static void *watcher_main(void *arg)
{
    (void)arg;
    rd_thread_name("rd-tcp-watch");
    rd_errctx_bind(NULL);   /* it outlives whichever transfer started it: never its context */
    for (;;) {
        struct timespec ts = { 0, WATCH_EVERY_MS * 1000000L };
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&lock);
        for (struct rd_tcp_watched *w = watched; w; w = w->next)
            look_at(w);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

void rd_tcp_watch_add(struct rd_tcp_watched *w, int fd, int user_timeout_ms)
{
    w->fd = fd;
    w->user_timeout_ms = user_timeout_ms;
    w->lifted = 0;
    w->rto_max_ms = 0;
    atomic_store(&w->silent, 0);
    pthread_mutex_lock(&lock);
    if (!started) {
        pthread_attr_t attr;
        pthread_t t;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        started = rd_thread_create(&t, &attr, watcher_main, NULL) == 0;
        pthread_attr_destroy(&attr);
    }
    w->next = watched;
    watched = w;
    pthread_mutex_unlock(&lock);
}

void rd_tcp_watch_remove(struct rd_tcp_watched *w)
{
    pthread_mutex_lock(&lock);
    for (struct rd_tcp_watched **p = &watched; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    if (w->lifted)
        set_lifted(w, 0);
    pthread_mutex_unlock(&lock);
}

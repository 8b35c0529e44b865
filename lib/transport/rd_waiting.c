/* rd_waiting.c - see rd_waiting.h.
 *
 * The accept loop (the caller's thread) owns the set: it accepts, starts, stops and reaps the
 * handshake threads, prints every line and keeps the throttle's table. A handshake thread
 * touches only its own job, and under w->lock its `done` flag; the accept loop sets `stop`
 * under the same lock, so a job is either finished (and its outcome counts) or stopped (and
 * its outcome is ignored, but for a peer it had turned away just before: see finish_gone),
 * never both.
 *
 * The accept loop never waits for a handshake thread while connections arrive: a stopped job
 * moves to `gone` (its socket shut down, so its thread ends at once) and is joined once its
 * thread says it is done. So new connections are taken from the listen queue as fast as the
 * loop gets the CPU (a full queue makes the kernel drop a SYN, which its sender sends again
 * only a second later). */
#include "transport/rd_waiting.h"
#include "util/rd_clock.h"

#include "util/rd_error.h"
#include "wire/rd_proto.h"
#include "transport/rd_session.h"
#include "transport/rd_tcp.h"
#include "util/rd_thread.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define STACK_BYTES (512u << 10)   /* a handshake needs a few KiB; sanitizer builds more */
#define ACCEPT_PAUSE_S 0.1         /* after a failed accept (out of descriptors): no busy loop */
#define RD_WAITING_NET (RD_THROTTLE_ADDR + 4)   /* a network: an address and "/64" */
#define ACCEPT_BATCH 64            /* connections accepted in a row before looking at the rest */

/* What a connection did before its handshake started. EARLY_STRIPE and HANDED_ON are left
 * untouched for the next set on the listener (see `early`). */
enum { SPOKE, SILENT, HUNG_UP, EARLY_STRIPE, HANDED_ON };

struct job {
    struct rd_waiting *w;
    struct rd_transport *tp;
    pthread_t th;
    double since;       /* arrival */
    double delay;       /* the throttle's wait: the handshake starts at since + delay */
    double deadline;    /* since + delay + cfg.deadline_ms: shut down from the accept loop */
    unsigned fails;     /* its address's failures when it arrived, for the line */
    char src[RD_THROTTLE_ADDR];
    char net[RD_WAITING_NET];   /* src's network (net_of) */
    unsigned char *arg, *result;
    int stop, done;     /* under w->lock: set by the accept loop / by the thread */
    int past_first;     /* under w->lock, by the thread: past first_word, the socket is read */
    int said;           /* the accept loop's: its line is out (dropped, timed out) */
    /* set by the thread before done */
    int first;          /* SPOKE, SILENT, HUNG_UP, EARLY_STRIPE, HANDED_ON */
    int rc;
    char msg[512];
};

struct rd_waiting {
    struct rd_waiting_cfg cfg;
    struct rd_listener *lis;      /* the one rd_waiting_next accepts from */
    pthread_mutex_t lock;
    pthread_cond_t cond;          /* stop flags, for threads in the throttle's wait */
    int wake[2];                  /* a thread that finished writes a byte */
    int quit[2];                  /* written once by stop_all: threads still in first_word end */
    int quitting;                 /* under lock: set with it */
    double accept_after;
    struct job *j[RD_WAITING_MAX];      /* pending, in arrival order */
    unsigned n;
    struct {                            /* the addresses of the pending, and how many each */
        char addr[RD_THROTTLE_ADDR];
        unsigned n;
    } src[RD_WAITING_MAX];
    unsigned nsrc;
    struct job *gone[RD_WAITING_MAX];   /* stopped, their threads not joined yet */
    unsigned ngone;
    double said_since;                  /* say(): the window its lines count in */
    unsigned said, unsaid;
};

/* A line about a stranger's connection. A flood makes hundreds a second, which would fill a
 * log: at most SAY_MAX in each SAY_WINDOW_S, then one line for the rest. */
#define SAY_MAX 20
#define SAY_WINDOW_S 10.0
static void say_unsaid(struct rd_waiting *w)
{
    if (w->unsaid)
        rd_warn("... and %u more lines about connections in the last %.0f s (not shown)", w->unsaid, SAY_WINDOW_S);
    w->unsaid = 0;
}

static void say(struct rd_waiting *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct rd_waiting *w, const char *fmt, ...)
{
    double now = rd_now();
    if (now - w->said_since >= SAY_WINDOW_S) {
        say_unsaid(w);
        w->said_since = now;
        w->said = 0;
    }
    if (w->said >= SAY_MAX) {
        w->unsaid++;
        return;
    }
    w->said++;
    char line[2048];   /* a job's message is 512 bytes, and a peer's address */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rd_warn("%s", line);
}

/* Connections that reached the listener in the instant between a session's ACCEPT (sent by
 * its handshake thread) and the accept loop's noticing that the session won, or while the
 * set was being stopped: the stripes of that session, or anyone's. Kept open and unread for
 * the next set on that listener (the one gathering the stripes), which takes them before
 * anything new; so no stripe is lost to the instant. Only the accept loop's thread touches
 * this; a process has one accept loop. */
#define EARLY_MAX RD_WAITING_MAX
static struct {
    const struct rd_listener *lis;
    struct rd_transport *c[EARLY_MAX];
    double since[EARLY_MAX];
    unsigned n;
} early;

static void early_keep(const struct rd_listener *lis, struct rd_transport *c, double since)
{
    if (early.lis != lis)
        rd_waiting_drop_early(NULL);
    early.lis = lis;
    if (early.n == EARLY_MAX) {   /* full of JOIN look-alikes: the oldest goes */
        early.c[0]->ops->close(early.c[0]);
        early.n--;
        memmove(early.c, early.c + 1, early.n * sizeof *early.c);
        memmove(early.since, early.since + 1, early.n * sizeof *early.since);
    }
    early.c[early.n] = c;
    early.since[early.n++] = since;
}

void rd_waiting_drop_early(const struct rd_listener *lis)
{
    if (lis && early.lis != lis)
        return;
    while (early.n) {
        struct rd_transport *c = early.c[--early.n];
        c->ops->close(c);
    }
    early.lis = NULL;
}

/* Does the connection's first frame, already there, say JOIN? Peeked: the bytes stay. TCP
 * frames start with a 4-byte length, then the header: magic at 0, type at 5 (rd_proto.h,
 * where every version keeps them). -1: the peer hung up. */
static int holds_join(struct rd_transport *tp)
{
    uint8_t head[4 + 6];
    ssize_t got;
    do
        got = recv(rd_tcp_fd(tp), head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
    while (got < 0 && errno == EINTR);
    if (got == 0 || (got < 0 && errno != EAGAIN))
        return -1;
    return got == (ssize_t)sizeof head && !memcmp(head + 4, RD_MAGIC, 4) && head[4 + 5] == RD_JOIN;
}

/* ---- the handshake thread ---- */

/* Wait, up to the HELLO deadline, for the first byte: a connection that sends nothing (a port
 * scan, a half-open client) is dropped without counting against its address, as it cannot
 * have guessed a key. RDMA connections cannot be watched here and go straight on. */
static int first_word(struct job *j)
{
    if (!rd_tcp_is(j->tp))
        return SPOKE;
    for (;;) {
        double left = j->since + RD_HELLO_MS / 1000.0 - rd_now();
        struct pollfd p[2] = { { .fd = rd_tcp_fd(j->tp), .events = POLLIN },
                               { .fd = j->w->quit[0], .events = POLLIN } };
        int r = left > 0 ? poll(p, 2, (int)(left * 1000) + 1) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return SILENT;
        if (r < 0)
            return HUNG_UP;
        if (p[1].revents)
            return HANDED_ON;
        int join = holds_join(j->tp);
        if (join < 0)
            return HUNG_UP;
        return join && j->w->cfg.stripes_later ? EARLY_STRIPE : SPOKE;
    }
}

/* The throttle's wait; 1 when the accept loop stopped the job meanwhile. */
static int throttle_wait(struct job *j)
{
    struct rd_waiting *w = j->w;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        double left = j->since + j->delay - rd_now();
        if (j->stop || left <= 0)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long long ns = ts.tv_nsec + (long long)(left * 1e9);
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&w->cond, &w->lock, &ts);
    }
    int stopped = j->stop;
    pthread_mutex_unlock(&w->lock);
    return stopped;
}

static void *run_job(void *arg)
{
    struct job *j = arg;
    struct rd_waiting *w = j->w;
    rd_thread_name("rd-handshake");
    rd_errctx_bind(NULL);   /* a stranger's failure is a line, never the transfer's error */
    j->first = first_word(j);
    pthread_mutex_lock(&w->lock);
    if (j->first == SPOKE && w->quitting)
        j->first = HANDED_ON;   /* stop_all counts on no socket being read from now on */
    j->past_first = j->first == SPOKE;
    pthread_mutex_unlock(&w->lock);
    int rc = RD_ECONNECT;
    if (j->first == SPOKE && !(j->delay > 0 && throttle_wait(j)))
        rc = w->cfg.handshake(j->tp, j->arg, j->result);
    if (rc && !rd_error_copy(j->msg, sizeof j->msg))
        snprintf(j->msg, sizeof j->msg, "connection from %s: %s", j->tp->peer, rd_strerror(rc));
    j->rc = rc;
    pthread_mutex_lock(&w->lock);
    j->done = 1;
    pthread_mutex_unlock(&w->lock);
    if (write(w->wake[1], "", 1) < 0) {
        /* the pipe is full: the accept loop is woken already */
    }
    return NULL;
}

/* ---- the accept loop's side ---- */

static void job_free(struct rd_waiting *w, struct job *j)
{
    /* the copies may hold keys (a stripe's join key, the agreed session's keys) */
    explicit_bzero(j->arg, w->cfg.arg_size);
    explicit_bzero(j->result, w->cfg.result_size);
    free(j->arg);
    free(j->result);
    free(j);
}

static int is_done(struct rd_waiting *w, const struct job *j)
{
    pthread_mutex_lock(&w->lock);
    int done = j->done;
    pthread_mutex_unlock(&w->lock);
    return done;
}

static int src_find(const struct rd_waiting *w, const char *addr)
{
    for (unsigned k = 0; k < w->nsrc; k++)
        if (!strcmp(w->src[k].addr, addr))
            return (int)k;
    return -1;
}

/* Pending handshakes from addr. */
static unsigned from(const struct rd_waiting *w, const char *addr)
{
    int k = src_find(w, addr);
    return k < 0 ? 0 : w->src[k].n;
}

static void list(struct rd_waiting *w, struct job *j)
{
    int k = src_find(w, j->src);
    if (k < 0) {
        k = (int)w->nsrc++;   /* at most one address per pending job: there is room */
        memcpy(w->src[k].addr, j->src, sizeof j->src);
        w->src[k].n = 0;
    }
    w->src[k].n++;
    w->j[w->n++] = j;
}

/* Job i leaves the pending list. */
static struct job *unlist(struct rd_waiting *w, unsigned i)
{
    struct job *j = w->j[i];
    w->n--;
    memmove(w->j + i, w->j + i + 1, (w->n - i) * sizeof *w->j);
    int k = src_find(w, j->src);
    if (k >= 0 && --w->src[k].n == 0)
        w->src[k] = w->src[--w->nsrc];
    return j;
}

/* Job i leaves the pending list; its thread is joined, its connection closed. */
static void finish(struct rd_waiting *w, unsigned i)
{
    struct job *j = unlist(w, i);
    pthread_join(j->th, NULL);
    j->tp->ops->close(j->tp);
    job_free(w, j);
}

static void report(struct rd_waiting *w, const struct job *j, double now);

/* A stopped job's thread may have turned its peer away (a wrong key or MAC, answered with a
 * REJECT) just before the stop: RD_EAUTH is a verdict on what the peer sent, never the result
 * of the shutdown, so its line is still due. (A forged stripe whose REJECT went out while the
 * real stripes completed lost its line: the set ended before its thread said it was done.) */
static void finish_gone(struct rd_waiting *w, unsigned i)
{
    struct job *j = w->gone[i];
    w->ngone--;
    memmove(w->gone + i, w->gone + i + 1, (w->ngone - i) * sizeof *w->gone);
    pthread_join(j->th, NULL);
    if (!j->said && j->first == SPOKE && j->rc == RD_EAUTH)
        report(w, j, rd_now());
    if (j->first == SPOKE && j->rc == RD_OK && w->cfg.discarded)
        w->cfg.discarded(j->arg);
    j->tp->ops->close(j->tp);
    job_free(w, j);
}

/* Stopped jobs whose threads have ended. */
static void reap_gone(struct rd_waiting *w)
{
    for (unsigned i = 0; i < w->ngone;)
        if (is_done(w, w->gone[i]))
            finish_gone(w, i);
        else
            i++;
}

/* Stop pending job i: wake whatever it waits in (its socket shut down, its throttle wait
 * ended) and move it to `gone`. 0, and nothing done, if it finished already: its outcome
 * stands. */
static int stop(struct rd_waiting *w, unsigned i)
{
    struct job *j = w->j[i];
    pthread_mutex_lock(&w->lock);
    int done = j->done;
    if (!done) {
        j->stop = 1;
        pthread_cond_broadcast(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
    if (done)
        return 0;
    j->tp->ops->shutdown(j->tp);
    unlist(w, i);
    if (w->ngone == RD_WAITING_MAX)
        finish_gone(w, 0);   /* bounded: the oldest has had the longest to end */
    w->gone[w->ngone++] = j;
    return 1;
}

static void stop_all(struct rd_waiting *w)
{
    /* In rdrecv's set, the connections whose threads have not read from them yet (silent so
     * far, or a JOIN) are handed on untouched to the next set on the listener: a stripe of
     * the session that just won may be among them. Every other handshake is stopped. */
    int hand_on = w->cfg.stripes_later;
    if (hand_on) {
        pthread_mutex_lock(&w->lock);
        w->quitting = 1;
        pthread_mutex_unlock(&w->lock);
        if (write(w->quit[1], "", 1) < 0)
            hand_on = 0;   /* cannot happen (an empty pipe); then they are stopped like the rest */
    }
    for (unsigned i = w->n; i-- > 0;) {
        struct job *j = w->j[i];
        pthread_mutex_lock(&w->lock);
        int in_first = !j->done && !j->past_first && hand_on;
        pthread_mutex_unlock(&w->lock);
        if (!in_first && stop(w, i))
            continue;   /* into gone, joined below */
        unlist(w, i);
        pthread_join(j->th, NULL);   /* finished, or about to: first_word sees quit */
        if (j->first == EARLY_STRIPE || j->first == HANDED_ON) {
            early_keep(w->lis, j->tp, j->since);
            j->tp = NULL;
        } else {
            if (j->first == SPOKE && j->rc != RD_OK)   /* failed after the last reap_failed */
                report(w, j, rd_now());
            j->tp->ops->close(j->tp);   /* finished, not taken: closed without a word */
        }
        job_free(w, j);
    }
    while (w->ngone)
        finish_gone(w, w->ngone - 1);
}

static void count_failure(struct rd_waiting *w, const struct job *j, double now)
{
    if (w->cfg.throttle && j->rc != RD_EIO)   /* EIO is ours (memory, randomness), not the peer's */
        rd_throttle_failed(w->cfg.throttle, j->src, now);
}

/* One line for a handshake that failed; it counts against its address if the peer spoke,
 * unless it proved the key (turned away because another sender is served: no guess). */
static void report(struct rd_waiting *w, const struct job *j, double now)
{
    if (j->first == SILENT) {
        say(w, "connection from %s said nothing: dropped", j->tp->peer);
        return;
    }
    if (j->first == HUNG_UP) {
        say(w, "connection from %s hung up without a word", j->tp->peer);
        return;
    }
    if (j->delay > 0)
        say(w, "%s (after a %.2f s wait: %s failed %u handshakes lately)", j->msg, j->delay, j->src,
                j->fails);
    else
        say(w, "%s", j->msg);
    if (!j->tp->proved)
        count_failure(w, j, now);
}

/* Finished handshakes that failed: one line each, then they go. */
static void reap_failed(struct rd_waiting *w, double now)
{
    for (unsigned i = 0; i < w->n;) {
        struct job *j = w->j[i];
        if (!is_done(w, j) || j->rc == RD_OK) {
            i++;
        } else if (j->first == EARLY_STRIPE || j->first == HANDED_ON) {   /* kept for the next set */
            unlist(w, i);
            pthread_join(j->th, NULL);
            early_keep(w->lis, j->tp, j->since);
            job_free(w, j);
        } else {
            report(w, j, now);
            finish(w, i);
        }
    }
}

/* The first finished handshake that succeeded (in arrival order), out of the set. */
static struct job *winner(struct rd_waiting *w)
{
    for (unsigned i = 0; i < w->n; i++) {
        struct job *j = w->j[i];
        if (is_done(w, j) && j->rc == RD_OK) {
            unlist(w, i);
            pthread_join(j->th, NULL);
            return j;
        }
    }
    return NULL;
}

/* Handshakes past their deadline are shut down, whatever they are doing. */
static void expire(struct rd_waiting *w, double now)
{
    for (unsigned i = 0; i < w->n;) {
        struct job *j = w->j[i];
        if (now < j->deadline) {
            i++;
            continue;
        }
        if (!stop(w, i)) {
            i++;   /* it finished just now: reap_failed or winner takes it */
            continue;
        }
        say(w, "connection from %s did not finish its handshake within %.0f s: dropped", j->tp->peer,
                w->cfg.deadline_ms / 1000.0);
        j->said = 1;
        count_failure(w, j, now);   /* it spoke (the HELLO deadline is earlier) and then stalled */
    }
}

/* Make room for a newcomer: stop an unfinished handshake of src or, with src NULL, of the
 * network (/24, IPv6 /64) that has the most pending, so that a flood evicts its own
 * connections before anyone else's: a flood from 70 addresses of one network stopped the
 * right sender, which was the oldest of the addresses with one each (before 2026-11-29).
 * Among them one that has not spoken yet goes first (a right sender speaks at once), else the
 * oldest. 0 if every candidate has finished. */
static int evict(struct rd_waiting *w, const char *src)
{
    const char *net = NULL;
    unsigned most = 0;
    pthread_mutex_lock(&w->lock);   /* unfinished ones only: a finished one is no candidate */
    for (unsigned i = 0; !src && i < w->n; i++) {
        unsigned c = 0;
        for (unsigned k = 0; k < w->n && !w->j[i]->done; k++)
            c += !w->j[k]->done && strcmp(w->j[k]->net, w->j[i]->net) == 0;
        if (c > most) {
            most = c;
            net = w->j[i]->net;
        }
    }
    pthread_mutex_unlock(&w->lock);
    if (!src && !net)
        return 0;   /* every one has finished */
    /* passes: the silent of the chosen ones, any of them, then anyone (all of those finished) */
    for (int pass = 0; pass < 3; pass++) {
        for (unsigned i = 0; i < w->n; i++) {
            struct job *j = w->j[i];
            if (pass < 2 && (src ? strcmp(j->src, src) != 0 : strcmp(j->net, net) != 0))
                continue;
            if (pass == 0) {
                pthread_mutex_lock(&w->lock);
                int silent = !j->past_first && !j->done;
                pthread_mutex_unlock(&w->lock);
                if (!silent)
                    continue;
            }
            unsigned pending = w->n, of_src = from(w, j->src), of_net = 0;
            for (unsigned k = 0; k < w->n; k++)
                of_net += strcmp(w->j[k]->net, j->net) == 0;
            if (!stop(w, i))
                continue;   /* finished: reap_failed or winner takes it */
            if (src)
                say(w, "connection from %s: dropped for a newer one from the same address (%u pending from it)",
                        j->tp->peer, of_src);
            else
                say(w, "connection from %s: dropped for a newer one (%u handshakes pending, %u of them from %s)",
                        j->tp->peer, pending, of_net, j->net);
            j->said = 1;
            return 1;
        }
        if (src && pass == 1)
            return 0;
    }
    return 0;
}

/* The network a source address belongs to, for evict: its /24 (IPv4) or /64 (IPv6), written
 * "10.0.1.0/24"; anything else, itself. */
static void net_of(const char *src, char out[RD_WAITING_NET])
{
    unsigned char a[16];
    char t[INET6_ADDRSTRLEN];
    if (inet_pton(AF_INET, src, a) == 1) {
        a[3] = 0;
        snprintf(out, RD_WAITING_NET, "%s/24", inet_ntop(AF_INET, a, t, sizeof t));
    } else if (inet_pton(AF_INET6, src, a) == 1) {
        memset(a + 8, 0, 8);
        snprintf(out, RD_WAITING_NET, "%s/64", inet_ntop(AF_INET6, a, t, sizeof t));
    } else {
        snprintf(out, RD_WAITING_NET, "%s", src);
    }
}

static void refuse(struct rd_waiting *w, struct rd_transport *c, const char *why)
{
    say(w, "connection from %s: dropped, %s", c->peer, why);
    c->ops->close(c);
}

/* c arrived at since (earlier than now for a kept early stripe). */
static void admit(struct rd_waiting *w, struct rd_transport *c, double since, double now)
{
    char src[RD_THROTTLE_ADDR];
    unsigned fails = 0;
    rd_throttle_source(c->peer, src);
    double delay = w->cfg.throttle ? rd_throttle_delay(w->cfg.throttle, src, now, &fails) : 0;
    /* a slowed-down address gets one handshake at a time: parallel connections would
     * multiply its guesses per wait */
    unsigned per_source = delay > 0 ? 1 : RD_WAITING_PER_SOURCE;
    reap_failed(w, now);   /* what failed just now makes room first */
    while (from(w, src) >= per_source && evict(w, src))
        ;
    while (w->n >= RD_WAITING_MAX && evict(w, NULL))
        ;
    if (from(w, src) >= per_source || w->n >= RD_WAITING_MAX)   /* all finished, none taken yet */
        return refuse(w, c, "the receiver is busy");
    struct job *j = calloc(1, sizeof *j);
    if (j) {
        j->arg = calloc(1, w->cfg.arg_size ? w->cfg.arg_size : 1);
        j->result = calloc(1, w->cfg.result_size ? w->cfg.result_size : 1);
    }
    if (!j || !j->arg || !j->result) {
        if (j)
            job_free(w, j);
        return refuse(w, c, "out of memory");
    }
    *j = (struct job){ .w = w, .tp = c, .since = since, .delay = delay, .fails = fails,
                       .deadline = since + delay + w->cfg.deadline_ms / 1000.0, .arg = j->arg,
                       .result = j->result };
    memcpy(j->src, src, sizeof src);
    net_of(src, j->net);
    if (w->cfg.arg_size)
        memcpy(j->arg, w->cfg.arg, w->cfg.arg_size);
    pthread_attr_t attr;
    int e = pthread_attr_init(&attr);
    if (!e) {
        pthread_attr_setstacksize(&attr, STACK_BYTES);
        e = pthread_create(&j->th, &attr, run_job, j);
        pthread_attr_destroy(&attr);
    }
    if (e) {
        job_free(w, j);
        return refuse(w, c, "cannot start a thread for its handshake");
    }
    list(w, j);
}

/* What finished since the last look (the wake pipe is drained first, so nothing is missed):
 * failures reported, stopped threads joined. 1 if a handshake succeeded (winner() takes it). */
static int settle(struct rd_waiting *w)
{
    char buf[256];
    while (read(w->wake[0], buf, sizeof buf) > 0)
        ;
    reap_gone(w);
    reap_failed(w, rd_now());
    for (unsigned i = 0; i < w->n; i++)
        if (is_done(w, w->j[i]))
            return 1;   /* what is left done has succeeded */
    return 0;
}

/* The connections waiting in a listener that polled readable, a batch at a time. Before each,
 * a look at what finished: once a handshake has won, the connections behind it in the listen
 * queue are not for this set (the stripes of --streams come right after ACCEPT).
 * -1: this process's own trouble (out of descriptors or memory: RD_EIO, recorded) with no
 * handshake under way, so nothing will ever free what it lacks. */
static int arrivals(struct rd_waiting *w, struct rd_transport *l)
{
    for (int k = 0; k < ACCEPT_BATCH; k++) {
        struct pollfd p[2] = { { .fd = l->ops->listen_fd(l), .events = POLLIN },
                               { .fd = w->wake[0], .events = POLLIN } };
        if (poll(p, 2, 0) <= 0 || (p[1].revents && settle(w)) || !p[0].revents)
            return 0;
        struct rd_transport *c;
        double now = rd_now();
        int rc = l->ops->accept(l, &c, 0);
        if (rc == RD_EIO && w->n == 0)
            return -1;
        if (rc) {
            /* one line, through the same limit as the strangers' (out of descriptors while
             * handshakes hold them, it repeats ten times a second); the loop keeps listening */
            say(w, "%s", rd_error_msg());
            rd_error_clear();
            w->accept_after = now + ACCEPT_PAUSE_S;
            return 0;
        }
        admit(w, c, now, now);
    }
    return 0;
}

struct rd_waiting *rd_waiting_new(const struct rd_waiting_cfg *cfg)
{
    struct rd_waiting *w = calloc(1, sizeof *w);
    if (!w) {
        rd_fail(RD_EIO, "out of memory");
        return NULL;
    }
    w->cfg = *cfg;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* rd_now's clock */
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->lock, NULL);
    if (pipe2(w->wake, O_NONBLOCK | O_CLOEXEC)) {
        w->wake[0] = w->wake[1] = -1;
    } else if (pipe2(w->quit, O_NONBLOCK | O_CLOEXEC)) {
        close(w->wake[0]);
        close(w->wake[1]);
        w->wake[0] = -1;
    }
    if (w->wake[0] < 0) {
        rd_fail(RD_EIO, "pipe: %s", strerror(errno));
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

int rd_waiting_next(struct rd_waiting *w, struct rd_listener *lis, int watch_fd, int timeout_ms,
                    struct rd_transport **out, void *result)
{
    double deadline = timeout_ms >= 0 ? rd_now() + timeout_ms / 1000.0 : -1;
    *out = NULL;
    w->lis = lis;
    if (!w->cfg.stripes_later && early.lis == lis) {   /* the stripes that came early, first */
        unsigned n = early.n;
        early.n = 0;
        early.lis = NULL;
        for (unsigned i = 0; i < n; i++)
            admit(w, early.c[i], early.since[i], rd_now());
    }
    for (;;) {
        settle(w);
        double now = rd_now();
        struct job *won = winner(w);
        if (won) {
            *out = won->tp;
            if (w->cfg.result_size)
                memcpy(result, won->result, w->cfg.result_size);
            job_free(w, won);
            return RD_OK;
        }
        expire(w, now);
        if (deadline >= 0 && now >= deadline) {
            stop_all(w);   /* first: their threads must not race the error recorded here */
            return rd_fail(RD_ECONNECT, "timed out waiting for a sender");
        }
        /* wake for the deadline, the next handshake's deadline, and the end of an accept pause */
        double wake = deadline;
        for (unsigned i = 0; i < w->n; i++)
            if (wake < 0 || w->j[i]->deadline < wake)
                wake = w->j[i]->deadline;
        int listening = now >= w->accept_after;
        if (!listening && (wake < 0 || w->accept_after < wake))
            wake = w->accept_after;
        struct pollfd pfd[4];
        int np = 0, first_lis = 2;
        pfd[np++] = (struct pollfd){ .fd = watch_fd, .events = POLLIN | POLLRDHUP };
        pfd[np++] = (struct pollfd){ .fd = w->wake[0], .events = POLLIN };
        for (int i = 0; i < lis->count; i++)
            pfd[np++] = (struct pollfd){ .fd = listening ? lis->lis[i]->ops->listen_fd(lis->lis[i]) : -1,
                                         .events = POLLIN };
        int ms = wake < 0 ? -1 : (int)((wake - now) * 1000) + 1;
        int pr = poll(pfd, (nfds_t)np, ms);
        if (pr < 0 && errno != EINTR) {
            int e = errno;
            stop_all(w);
            return rd_fail(RD_EIO, "poll: %s", strerror(e));
        }
        if (pr <= 0)
            continue;
        if (watch_fd >= 0 && pfd[0].revents)
            return RD_OK;
        for (int i = 0; i < lis->count; i++)
            if (pfd[first_lis + i].revents && arrivals(w, lis->lis[i]) < 0)
                return RD_EIO;   /* no handshake thread to stop, none to race its error */
    }
}

void rd_waiting_free(struct rd_waiting *w)
{
    if (!w)
        return;
    stop_all(w);   /* a finished, not yet taken handshake's connection is closed too */
    say_unsaid(w);
    close(w->wake[0]);
    close(w->wake[1]);
    close(w->quit[0]);
    close(w->quit[1]);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

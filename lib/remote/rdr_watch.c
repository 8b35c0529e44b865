/* rdr_watch.c - see rdr_watch.h. */
#include "remote/rdr_watch.h"
#include "util/rd_clock.h"

#include "remote/rdr_proc.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

int rdr_watch_signals(void)
{
    static const int sigs[] = { SIGCHLD, SIGINT, SIGTERM, SIGHUP };
    signal(SIGPIPE, SIG_IGN);
    return rdr_sig_setup(sigs, 4);
}

void rdr_watch_reap(const struct rdr_watch *w)
{
    for (int i = 0; i < w->n; i++)
        rdr_link_reap(w->l[i]);
}

void rdr_watch_settle(const struct rdr_watch *w, int i, int ms)
{
    for (int k = 0; k < ms / 10 && !w->l[i]->reaped; k++) {
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep(&ts, NULL);
        rdr_watch_reap(w);
    }
}

void rdr_watch_pump(const struct rdr_watch *w, int timeout_ms)
{
    struct pollfd pfd[w->n + 1];
    int idx[w->n + 1];
    int np = 0;
    pfd[np] = (struct pollfd){ .fd = rdr_sig_fd(), .events = POLLIN };
    idx[np++] = -1;
    for (int i = 0; i < w->n; i++)
        if (!w->l[i]->eof && w->l[i]->rfd >= 0) {
            pfd[np] = (struct pollfd){ .fd = w->l[i]->rfd, .events = POLLIN };
            idx[np++] = i;
        }
    int pr = poll(pfd, (nfds_t)np, timeout_ms);
    if (pr < 0 && errno != EINTR)
        return;
    unsigned sig = rdr_sig_drain();
    for (int s = 1; s < 32; s++)
        if ((sig & (1u << s)) && (s == SIGINT || s == SIGTERM || s == SIGHUP) && !*w->interrupted)
            *w->interrupted = s;
    rdr_watch_reap(w);
    for (int k = 1; k < np; k++) {
        if (!pfd[k].revents)
            continue;
        int i = idx[k];
        struct rdr_link *x = w->l[i];
        while (rdr_chan_fill(&x->ch) > 0)
            ;
        char *line;
        while (rdr_chan_line(&x->ch, &line)) {
            char *word[8];
            int n = rdr_split(line, word, 8);
            if (n > 0 && !rdr_link_setup_line(x, word, n))
                w->on_line(w->ctx, i, word, n);
            free(line);
        }
        if (x->ch.eof) {
            x->eof = 1;
            if (!x->done && !*w->interrupted)
                w->on_lost(w->ctx, i);
        }
    }
}

void rdr_watch_stop(const struct rdr_watch *w, double term_s, double kill_s)
{
    for (int i = 0; i < w->n; i++)
        rdr_link_close(w->l[i]);
    double t0 = rd_now();
    int stage = 0;
    for (;;) {
        rdr_watch_reap(w);
        int left = 0;
        for (int i = 0; i < w->n; i++)
            if (w->l[i]->pid > 0 && !w->l[i]->reaped)
                left++;
        if (!left)
            break;
        double dt = rd_now() - t0;
        if (stage == 0 && dt > term_s) {
            for (int i = 0; i < w->n; i++)
                if (w->l[i]->pid > 0 && !w->l[i]->reaped)
                    kill(w->l[i]->pid, SIGTERM);
            stage = 1;
        } else if (stage == 1 && dt > kill_s) {
            for (int i = 0; i < w->n; i++)
                if (w->l[i]->pid > 0 && !w->l[i]->reaped)
                    kill(w->l[i]->pid, SIGKILL);
            stage = 2;
        }
        int saved = *w->interrupted;
        *w->interrupted = saved ? saved : -1;   /* no new failures now */
        rdr_watch_pump(w, 50);
        if (!saved && *w->interrupted == -1)
            *w->interrupted = 0;
    }
}

/* rdr_watch.h - the initiator's wait loop over its agents' control links: read what they say,
 * notice signals and lost agents, and stop them all at the end.
 *
 * rdpipe and rdcp differ only in what a line means and what a lost agent costs; those are the
 * two callbacks, the waiting and the stop sequence (close, wait, SIGTERM, SIGKILL) are shared.
 */
#ifndef RDR_WATCH_H
#define RDR_WATCH_H

#include "remote/rdr_link.h"

struct rdr_watch {
    struct rdr_link **l;
    int n;
    /* SIGINT/SIGTERM/SIGHUP seen (the first one's number); the tool's failure handlers look at
     * it, rdr_watch_stop sets it to -1 meanwhile so that no new failure is counted then */
    int *interrupted;
    void *ctx;
    /* a control line from link i, split into n >= 1 words, that is not one of the setup
     * replies rdr_link_setup_line takes (those only update the link) */
    void (*on_line)(void *ctx, int i, char **w, int n);
    /* link i closed before its agent said "done" (not called once interrupted) */
    void (*on_lost)(void *ctx, int i);
};

/* Before the first pump: SIGCHLD wakes the wait, SIGINT/SIGTERM/SIGHUP interrupt it, SIGPIPE
 * is ignored (an agent that went away shows as EOF or a failed write). 0, or -1 with errno. */
int rdr_watch_signals(void);
/* One wait of up to timeout_ms for signals (rdr_sig_setup) and lines; returns when something
 * may have changed, after reaping the agents that exited. */
void rdr_watch_pump(const struct rdr_watch *w, int timeout_ms);
/* Reap every agent that exited. */
void rdr_watch_reap(const struct rdr_watch *w);
/* Give link i's process up to ms to exit (so that its status can be named). */
void rdr_watch_settle(const struct rdr_watch *w, int i, int ms);
/* Close every link and wait for the agents: SIGTERM after term_s, SIGKILL after kill_s;
 * lines that still come in are handled. */
void rdr_watch_stop(const struct rdr_watch *w, double term_s, double kill_s);

#endif

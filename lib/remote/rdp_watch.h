/* rdp_watch.h - the initiator's wait loop over its agents' control links: read what they say,
 * notice signals and lost agents, and stop them all at the end.
 *
 * rdpipe and rdcp differ only in what a line means and what a lost agent costs; those are the
 * two callbacks, the waiting and the stop sequence (close, wait, SIGTERM, SIGKILL) are shared.
 */
#ifndef RDP_WATCH_H
#define RDP_WATCH_H

#include "remote/rdp_link.h"

struct rdp_watch {
    struct rdp_link **l;
    int n;
    /* SIGINT/SIGTERM/SIGHUP seen (the first one's number); the tool's failure handlers look at
     * it, rdp_watch_stop sets it to -1 meanwhile so that no new failure is counted then */
    int *interrupted;
    void *ctx;
    /* a control line from link i, split into n >= 1 words, that is not one of the setup
     * replies rdp_link_setup_line takes (those only update the link) */
    void (*on_line)(void *ctx, int i, char **w, int n);
    /* link i closed before its agent said "done" (not called once interrupted) */
    void (*on_lost)(void *ctx, int i);
};

/* Before the first pump: SIGCHLD wakes the wait, SIGINT/SIGTERM/SIGHUP interrupt it, SIGPIPE
 * is ignored (an agent that went away shows as EOF or a failed write). 0, or -1 with errno. */
int rdp_watch_signals(void);
/* One wait of up to timeout_ms for signals (rdp_sig_setup) and lines; returns when something
 * may have changed, after reaping the agents that exited. */
void rdp_watch_pump(const struct rdp_watch *w, int timeout_ms);
/* Reap every agent that exited. */
void rdp_watch_reap(const struct rdp_watch *w);
/* Give link i's process up to ms to exit (so that its status can be named). */
void rdp_watch_settle(const struct rdp_watch *w, int i, int ms);
/* Close every link and wait for the agents: SIGTERM after term_s, SIGKILL after kill_s;
 * lines that still come in are handled. */
void rdp_watch_stop(const struct rdp_watch *w, double term_s, double kill_s);

#endif

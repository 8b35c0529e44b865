/* rd_interrupt.h - SIGINT, SIGTERM and SIGHUP end a transfer the way any other failure does:
 * the peer is told why (an authenticated ABORT that names the signal), and then this end dies
 * by the signal, as a UNIX tool must for its parent to see it (exit 128+N). Dying at once
 * left the peer with only "closed by peer", which a network fault also gives.
 *
 * The three signals are blocked in every thread and taken by one watcher thread (sigwait), so
 * no handler ever runs inside the engine's code. The watcher calls what the running stage set
 * (rd_interrupt_set): the engine stops its stream and sends its ABORT, and the tool dies by the
 * signal once the stream has ended (rd_interrupt_finish). Where nothing is set, or a second
 * signal comes, or the stream has not ended RD_INTERRUPT_GRACE_MS after the first, the tool
 * dies at once: an interrupt is never ignored. */
#ifndef RD_INTERRUPT_H
#define RD_INTERRUPT_H

#define RD_INTERRUPT_GRACE_MS 3000

/* What to do on a signal, on the watcher thread: 1 when the stream will end by itself (the
 * engine was told to stop), 0 to die at once. It is called again every 100 ms until the grace
 * ends (a wake can land just before the call it was meant for), so it must be idempotent, and
 * it must not block. */
typedef int (*rd_interrupt_fn)(void *ctx, int signo);

struct rd_interrupt_hook {
    rd_interrupt_fn fn;
    void *ctx;
};

/* First thing in main, before any thread starts (threads inherit the blocked signals): block
 * the three and start the watcher. Without it (rdcp, rdpipe: their own handling) the hooks
 * below are never called and the signals keep whatever action they have. */
int rd_interrupt_install(void);
/* Set what a signal does from now on; the one it replaces goes into *prev. Once this returns,
 * the watcher no longer calls the replaced one. */
void rd_interrupt_set(rd_interrupt_fn fn, void *ctx, struct rd_interrupt_hook *prev);
void rd_interrupt_restore(const struct rd_interrupt_hook *prev);
/* The signal that came (0: none). */
int rd_interrupted(void);
/* "SIGINT", "SIGTERM", "SIGHUP" */
const char *rd_interrupt_name(int signo);
struct rd_errctx;
/* From a hook: "interrupted by SIGINT" as the first error of the transfer whose context is
 * ctx (the watcher thread records into none of its own), so the ABORT gives that reason. */
void rd_interrupt_record(struct rd_errctx *ctx, int signo);
/* At the end of main: after a signal, die by it (stderr flushed); otherwise return. */
void rd_interrupt_finish(void);

#endif

/* rd_error.h - one error enum for the whole project; each value is also the documented exit code. */
#ifndef RD_ERROR_H
#define RD_ERROR_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>

enum rd_err {
    RD_OK = 0,
    RD_EUSAGE = 1,       /* bad command line */
    RD_ECONNECT = 2,     /* cannot connect, resolve, listen, or timed out */
    RD_EAUTH = 3,        /* authentication failed */
    RD_ESTREAM = 4,      /* stream incomplete or corrupt (peer died, bad checksum, protocol error) */
    RD_EIO = 5,          /* local input/output error */
    RD_EPARTIAL = 23,    /* rdcp: some files were not copied, the rest were (rsync's code) */
    RD_ENODEV = 101,     /* --transport rdma and no RDMA device (the original tool's code) */
    RD_ELOST = 255,      /* rdpipe, rdcp: the connection to a host was lost (ssh's code) */
};

/* Errors are kept per transfer, never per process. An error context holds the first error of
 * one transfer (later ones are usually its consequences). Each thread records into the context
 * it is bound to: a thread starts bound to a private context of its own, and rd_thread_create
 * binds the new thread to its creator's. So the threads of one transfer (reader, lanes, writer,
 * monitor) share their owner's context, while a thread doing a stranger's work (a pending
 * handshake, a --streams worker whose failure may only follow the stream's end) keeps its
 * failures to itself until its owner decides what they mean. */
struct rd_errctx {
    pthread_mutex_t lock;
    int code;
    int after;          /* the recorded error is a consequence (rd_fail_after) */
    char msg[512];
};

/* Record the error in the calling thread's context unless it holds one already; return
 * `code`. The message is one line without the program name. */
int rd_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A failure that only follows another: IO on a connection this process shut down because
 * something else failed. Recorded while nothing is, and replaced by the first rd_fail, so
 * the user reads the cause, whichever thread noticed first. */
int rd_fail_after(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Replace whatever is recorded by this, in one step: a better account of the same failure
 * (the peer's reason for a broken pipe). Clearing and then recording would let another
 * thread of the transfer record its own consequence in between, and that would stay. */
int rd_fail_instead(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int rd_error_code(void);
/* The recorded error's code, or fallback when none is: read once, because another thread of
 * the transfer may clear and re-record the error in between (a sender replacing "broken pipe"
 * by the receiver's reason). */
int rd_error_or(int fallback);
/* Copy the message (n > 0) and return the code of the calling thread's context. */
int rd_error_copy(char *msg, unsigned long n);
/* The message: a copy of it, taken under the lock and good until the thread calls again. */
const char *rd_error_msg(void);
void rd_error_clear(void);

/* The context the calling thread records into, and binding another (NULL: the thread's own).
 * Returns the previous binding. A bound context must outlive the thread's use of it. */
struct rd_errctx *rd_errctx_current(void);
struct rd_errctx *rd_errctx_bind(struct rd_errctx *ctx);

/* pthread_create whose new thread records its errors into the caller's context: every thread
 * working for a transfer is started with it. */
int rd_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

/* Short generic description of an exit code, for --help and the README. */
const char *rd_strerror(int code);

/* Program name used as the prefix of every diagnostic line. */
void rd_set_progname(const char *argv0);
const char *rd_progname(void);

/* A message that does not fit its buffer loses its middle, not its end: "cannot write
 * '/very/long/.../path': No space left on device" still names the reason. rd_elide copies
 * s (n bytes) into dst (cap bytes, NUL included), as " ... " in place of the middle when
 * it does not fit; rd_vfit formats into dst the same way. Both return the length written. */
size_t rd_elide(char *dst, size_t cap, const char *s, size_t n);
size_t rd_vfit(char *dst, size_t cap, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* The longest line rd_warn prints: a path deeper than PATH_MAX is printed whole up to here;
 * an agent passes its lines on hex-encoded, under the control channel's limit (1 MiB). */
#define RD_WARN_MAX (64u << 10)

/* Print "prog: message" on stderr. */
void rd_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An allocation a tool cannot go on without failed: "PROG: out of memory" on stderr and exit 5
 * (abort() said nothing and gave 134; `ulimit -v` is the usual cause). Any thread. */
_Noreturn void rd_oom(void);
/* The same as "tool: message". */
void rd_vwarn_as(const char *tool, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Print the recorded error as "prog: message" and return its code. */
int rd_report(void);

#endif

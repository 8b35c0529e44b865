#include "util/rd_error.h"

#include <pthread.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char progname[64] = "rdpipe";

/* The thread's own context, and the one it records into (NULL: its own). */
static __thread struct rd_errctx own = { PTHREAD_MUTEX_INITIALIZER, 0, 0, "" };
static __thread struct rd_errctx *bound;

struct rd_errctx *rd_errctx_current(void)
{
    return bound ? bound : &own;
}

struct rd_errctx *rd_errctx_bind(struct rd_errctx *ctx)
{
    struct rd_errctx *was = rd_errctx_current();
    bound = ctx;
    return was;
}

struct start {
    void *(*fn)(void *);
    void *arg;
    struct rd_errctx *ctx;
};

static void *start_bound(void *p)
{
    struct start s = *(struct start *)p;
    free(p);
    bound = s.ctx;
    return s.fn(s.arg);
}

int rd_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    struct start *s = malloc(sizeof *s);
    if (!s)
        return ENOMEM;
    *s = (struct start){ fn, arg, rd_errctx_current() };
    int e = pthread_create(th, attr, start_bound, s);
    if (e)
        free(s);
    return e;
}

size_t rd_elide(char *dst, size_t cap, const char *s, size_t n)
{
    if (cap == 0)
        return 0;
    if (n < cap) {
        memcpy(dst, s, n);
        dst[n] = '\0';
        return n;
    }
    static const char mark[] = " ... ";
    size_t keep = cap - 1 > sizeof mark - 1 ? cap - 1 - (sizeof mark - 1) : 0;
    size_t tail = keep / 2, head = keep - tail;
    /* whole UTF-8 characters at both cuts */
    while (head > 0 && ((unsigned char)s[head] & 0xC0) == 0x80)
        head--;
    size_t from = n - tail;
    while (from < n && ((unsigned char)s[from] & 0xC0) == 0x80)
        from++;
    size_t out = 0;
    memcpy(dst, s, head);
    out += head;
    if (keep) {
        memcpy(dst + out, mark, sizeof mark - 1);
        out += sizeof mark - 1;
    }
    memcpy(dst + out, s + from, n - from);
    out += n - from;
    dst[out] = '\0';
    return out;
}

size_t rd_vfit(char *dst, size_t cap, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(dst, cap, fmt, ap);
    if (n >= 0 && (size_t)n >= cap) {
        char *full = NULL;
        if (vasprintf(&full, fmt, again) >= 0) {
            rd_elide(dst, cap, full, strlen(full));
            free(full);
        }
    }
    va_end(again);
    if (!cap)
        return 0;
    if (n < 0)
        dst[0] = '\0';
    return strlen(dst);   /* cut short, not elided, when even the copy failed */
}

enum how { CAUSE, AFTER, INSTEAD };

static void record(enum how how, int code, const char *fmt, va_list ap)
{
    struct rd_errctx *x = rd_errctx_current();
    int after = how == AFTER;
    pthread_mutex_lock(&x->lock);
    if (x->code == 0 || (x->after && !after) || how == INSTEAD) {
        rd_vfit(x->msg, sizeof x->msg, fmt, ap);
        x->code = code;
        x->after = after;
    }
    pthread_mutex_unlock(&x->lock);
}

int rd_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(CAUSE, code, fmt, ap);
    va_end(ap);
    return code;
}

int rd_fail_after(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(AFTER, code, fmt, ap);
    va_end(ap);
    return code;
}

int rd_fail_instead(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(INSTEAD, code, fmt, ap);
    va_end(ap);
    return code;
}

int rd_error_copy(char *msg, unsigned long n)
{
    struct rd_errctx *x = rd_errctx_current();
    pthread_mutex_lock(&x->lock);
    if (n)
        snprintf(msg, n, "%s", x->msg);
    int c = x->code;
    pthread_mutex_unlock(&x->lock);
    return c;
}

int rd_error_code(void)
{
    return rd_error_copy(NULL, 0);
}

const char *rd_error_msg(void)
{
    /* a copy taken under the lock: another thread of the context may record meanwhile */
    static __thread char snap[sizeof own.msg];
    rd_error_copy(snap, sizeof snap);
    return snap;
}

void rd_error_clear(void)
{
    struct rd_errctx *x = rd_errctx_current();
    pthread_mutex_lock(&x->lock);
    x->code = 0;
    x->after = 0;
    x->msg[0] = '\0';
    pthread_mutex_unlock(&x->lock);
}

const char *rd_strerror(int code)
{
    switch (code) {
    case RD_OK: return "success";
    case RD_EUSAGE: return "usage error";
    case RD_ECONNECT: return "cannot connect or timed out";
    case RD_EAUTH: return "authentication failed";
    case RD_ESTREAM: return "stream incomplete or corrupt";
    case RD_EIO: return "local input/output error";
    case RD_EPARTIAL: return "some files were not copied";
    case RD_ENODEV: return "no RDMA device";
    case RD_ELOST: return "lost the connection to a host";
    default: return "unknown error";
    }
}

void rd_set_progname(const char *argv0)
{
    const char *slash = strrchr(argv0, '/');
    snprintf(progname, sizeof progname, "%s", slash ? slash + 1 : argv0);
}

const char *rd_progname(void)
{
    return progname;
}

void rd_vwarn_as(const char *tool, const char *fmt, va_list ap)
{
    char line[1024], *big = NULL;   /* the heap only for a long line */
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    if (n >= (int)sizeof line) {
        big = malloc(RD_WARN_MAX);
        rd_vfit(big ? big : line, big ? RD_WARN_MAX : sizeof line, fmt, again);
    }
    va_end(again);
    fprintf(stderr, "%s: %s\n", tool, big ? big : line);
    free(big);
}

void rd_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rd_vwarn_as(progname, fmt, ap);
    va_end(ap);
}

_Noreturn void rd_oom(void)
{
    char line[96];
    int n = snprintf(line, sizeof line, "%s: out of memory\n", progname);
    if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0) {
        /* nothing left to tell it with */
    }
    _exit(RD_EIO);
}

int rd_report(void)
{
    char msg[sizeof own.msg];
    int code = rd_error_copy(msg, sizeof msg);
    if (code)
        rd_warn("%s", msg[0] ? msg : rd_strerror(code));
    return code;
}

int rd_error_or(int fallback)
{
    int e = rd_error_code();
    return e ? e : fallback;
}

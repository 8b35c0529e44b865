#include "util/rd_error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static int err_code;
static char err_msg[512];
static char progname[64] = "rdpipe";

static __thread int holding, held_code;
static __thread char held_msg[512];

void rd_error_hold(void)
{
    holding = 1;
}

int rd_error_held(char *msg, unsigned long n)
{
    if (n)
        snprintf(msg, n, "%s", held_msg);
    return held_code;
}

int rd_fail(int code, const char *fmt, ...)
{
    /* a holding thread keeps its first error to itself; everyone else records the process's */
    int *slot = holding ? &held_code : &err_code;
    char *msg = holding ? held_msg : err_msg;
    if (!holding)
        pthread_mutex_lock(&err_lock);
    if (*slot == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof err_msg, fmt, ap);
        va_end(ap);
        *slot = code;
    }
    if (!holding)
        pthread_mutex_unlock(&err_lock);
    return code;
}

int rd_error_code(void)
{
    pthread_mutex_lock(&err_lock);
    int c = err_code;
    pthread_mutex_unlock(&err_lock);
    return c;
}

const char *rd_error_msg(void)
{
    return err_msg;
}

void rd_error_clear(void)
{
    pthread_mutex_lock(&err_lock);
    err_code = 0;
    err_msg[0] = '\0';
    pthread_mutex_unlock(&err_lock);
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
    case RD_ENODEV: return "no RDMA device";
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

void rd_warn(const char *fmt, ...)
{
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", progname, line);
}

int rd_report(void)
{
    int code = rd_error_code();
    if (code)
        rd_warn("%s", err_msg[0] ? err_msg : rd_strerror(code));
    return code;
}

int rd_error_or(int fallback)
{
    int e = rd_error_code();
    return e ? e : fallback;
}

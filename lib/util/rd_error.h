/* rd_error.h - one error enum for the whole project; each value is also the documented exit code. */
#ifndef RD_ERROR_H
#define RD_ERROR_H

enum rd_err {
    RD_OK = 0,
    RD_EUSAGE = 1,       /* bad command line */
    RD_ECONNECT = 2,     /* cannot connect, resolve, listen, or timed out */
    RD_EAUTH = 3,        /* authentication failed */
    RD_ESTREAM = 4,      /* stream incomplete or corrupt (peer died, bad checksum, protocol error) */
    RD_EIO = 5,          /* local input/output error */
    RD_ENODEV = 101,     /* --transport rdma and no RDMA device (the original tool's code) */
};

/* Record the first error of this process (later ones are usually its consequences) and
 * return `code`. Thread-safe. The message is one line without the program name. */
int rd_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int rd_error_code(void);
/* The recorded error's code, or fallback when none is: read once, because another thread may
 * clear and re-record the error in between (a sender replacing "broken pipe" by the reason). */
int rd_error_or(int fallback);
const char *rd_error_msg(void);
void rd_error_clear(void);

/* A thread whose failures are only candidates for the process's error (a --streams worker:
 * its connection closing may merely follow the end of the stream, or an ABORT still on its
 * way on another connection) holds them: while held, rd_fail on this thread records nothing
 * globally but keeps the thread's first error, which rd_error_held copies out (its code, or
 * 0 if none). */
void rd_error_hold(void);
int rd_error_held(char *msg, unsigned long n);

/* Short generic description of an exit code, for --help and the README. */
const char *rd_strerror(int code);

/* Program name used as the prefix of every diagnostic line. */
void rd_set_progname(const char *argv0);
const char *rd_progname(void);

/* Print "prog: message" on stderr. */
void rd_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the recorded error as "prog: message" and return its code. */
int rd_report(void);

#endif

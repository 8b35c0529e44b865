#include "remote/rdr_line.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rdr_chan_init(struct rdr_chan *c, int rfd, int wfd)
{
    memset(c, 0, sizeof *c);
    c->rfd = rfd;
    c->wfd = wfd;
}

void rdr_chan_free(struct rdr_chan *c)
{
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}

ssize_t rdr_chan_fill(struct rdr_chan *c)
{
    if (c->eof)
        return 0;
    if (c->cap - c->len < 4096) {
        size_t ncap = c->cap ? c->cap * 2 : 8192;
        if (ncap > RDR_MAX_LINE * 2) {
            c->eof = 1;   /* a peer that never ends its line is not one of ours */
            return 0;
        }
        char *nb = realloc(c->buf, ncap);
        if (!nb) {
            c->eof = 1;
            return 0;
        }
        c->buf = nb;
        c->cap = ncap;
    }
    ssize_t n;
    do
        n = read(c->rfd, c->buf + c->len, c->cap - c->len);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return -1;
    if (n <= 0) {
        c->eof = 1;
        return 0;
    }
    c->len += (size_t)n;
    return n;
}

int rdr_chan_line(struct rdr_chan *c, char **out)
{
    char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
    if (!nl)
        return 0;
    size_t n = (size_t)(nl - c->buf);
    char *s = malloc(n + 1);
    if (!s)
        return 0;
    memcpy(s, c->buf, n);
    s[n] = '\0';
    memmove(c->buf, nl + 1, c->len - n - 1);
    c->len -= n + 1;
    *out = s;
    return 1;
}

int rdr_send(int fd, const char *fmt, ...)
{
    char stack[1024], *p = stack;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(stack, sizeof stack - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    if ((size_t)n >= sizeof stack - 1) {
        p = malloc((size_t)n + 2);
        if (!p)
            return -1;
        va_start(ap, fmt);
        vsnprintf(p, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    p[n++] = '\n';
    size_t off = 0;
    int rc = 0;
    while (off < (size_t)n) {
        ssize_t w = write(fd, p + off, (size_t)n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = -1;
            break;
        }
        off += (size_t)w;
    }
    if (p != stack)
        free(p);
    return rc;
}

char *rdr_hex(const void *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    char *s = malloc(n ? 2 * n + 1 : 2);
    if (!s)
        return NULL;
    if (!n) {
        strcpy(s, "-");
        return s;
    }
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = digits[b[i] >> 4];
        s[2 * i + 1] = digits[b[i] & 15];
    }
    s[2 * n] = '\0';
    return s;
}

char *rdr_hex_str(const char *s)
{
    return rdr_hex(s ? s : "", s ? strlen(s) : 0);
}

static int nibble(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

char *rdr_unhex(const char *hex, size_t *np)
{
    size_t len = strcmp(hex, "-") == 0 ? 0 : strlen(hex);
    if (len % 2)
        return NULL;
    char *s = malloc(len / 2 + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < len / 2; i++) {
        int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(s);
            return NULL;
        }
        s[i] = (char)(hi << 4 | lo);
    }
    s[len / 2] = '\0';
    if (np)
        *np = len / 2;
    return s;
}

int rdr_split(char *line, char **w, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save))
        w[n++] = t;
    return n;
}

void rdr_stat_transport(const char *word, char *out, size_t n)
{
    snprintf(out, n, "%s", word);
    for (char *q = out; *q; q++)
        if (*q == '-' && q[1] && q != out)
            *q = ' ';
}

#include "remote/rdr_line.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
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
    c->off = c->len = c->cap = 0;
}

ssize_t rdr_chan_fill(struct rdr_chan *c)
{
    if (c->eof)
        return 0;
    if (c->cap - c->len < 4096 && c->off) {   /* make room where the lines taken were */
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    if (c->cap - c->len < 4096) {
        size_t ncap = c->cap ? c->cap * 2 : 8192;
        if (ncap > RDR_MAX_LINE * 2) {
            /* full: of lines a burst brought (an rdcp --resume manifest of 40,000 files),
             * which the caller takes before reading on; or of one line that never ends,
             * which no peer of ours sends */
            if (memchr(c->buf, '\n', c->len))
                return -1;
            c->eof = 1;
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

/* Lines are taken from c->off on, without moving what follows (a burst of many lines would
 * otherwise be moved once per line); fill moves the rest down when it needs the room. */
int rdr_chan_line(struct rdr_chan *c, char **out)
{
    char *start = c->buf + c->off;
    char *nl = c->len > c->off ? memchr(start, '\n', c->len - c->off) : NULL;
    if (!nl)
        return 0;
    size_t n = (size_t)(nl - start);
    char *s = malloc(n + 1);
    if (!s)
        return 0;
    memcpy(s, start, n);
    s[n] = '\0';
    c->off += n + 1;
    if (c->off == c->len)
        c->off = c->len = 0;
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

/* the length of the valid UTF-8 sequence of a printable code point at s (n bytes left), or
 * 0: a control (C1 too), an overlong form, a surrogate or above U+10FFFF, or cut short */
static size_t utf8_printable(const unsigned char *s, size_t n)
{
    size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
    if (s[0] < 0xc2 || s[0] > 0xf4 || n < len)
        return 0;
    uint32_t cp = s[0] & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < 0xa0 || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return len;
}

char *rdr_unhex_text(const char *hex)
{
    size_t n;
    char *raw = rdr_unhex(hex, &n);
    if (!raw)
        return NULL;
    char *out = rdr_printable(raw, n);
    free(raw);
    return out;
}

char *rdr_printable(const char *text, size_t n)
{
    const unsigned char *raw = (const unsigned char *)text;
    char *out = malloc(4 * n + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n;) {
        size_t k = raw[i] >= 0x80 ? utf8_printable(raw + i, n - i) : raw[i] >= 0x20 && raw[i] != 0x7f;
        if (k) {
            memcpy(o, raw + i, k);
            o += k;
            i += k;
        } else {
            o += sprintf(o, "\\%03o", raw[i]);
            i++;
        }
    }
    *o = '\0';
    return out;
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
        else if ((unsigned char)*q < 0x20 || (unsigned char)*q >= 0x7f)
            *q = '?';   /* shown on the terminal: a hostile agent's escapes stay out */
}

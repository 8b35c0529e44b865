/* rdb_msg.c - rdbench's frames and payloads: encoders and bounded decoders (rdb_msg.h).
 * Where it sits: below the bench client and server, above nothing but the C library; every
 * byte a peer sends after the handshake is first parsed here. */
#include "bench/rdb_msg.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

void rdb_hdr_encode(const struct rdb_hdr *h, uint8_t *out)
{
    memcpy(out, RDB_MAGIC, 4);
    out[4] = h->type;
    out[5] = 0;
    out[6] = out[7] = 0;
    put32(out + 8, h->len);
    put32(out + 12, h->a);
    put64(out + 16, h->seq);
    put64(out + 24, h->b);
}

/* The longest payload each type may carry (DATA: any; its frame was bounded by the ring). */
static size_t max_payload(unsigned type)
{
    switch (type) {
    case RDB_DATA: return (size_t)-1;
    case RDB_INFO: case RDB_ERR: return RDB_TEXT_MAX;
    case RDB_IO: return RDB_IO_LEN;
    default: return 0;
    }
}

int rdb_hdr_decode(const uint8_t *p, size_t n, struct rdb_hdr *h)
{
    if (n < RDB_HDR)
        return RDB_P_SHORT;
    if (memcmp(p, RDB_MAGIC, 4))
        return RDB_P_MAGIC;
    if (p[4] < RDB_DATA || p[4] > RDB_TYPE_MAX || p[5] || p[6] || p[7])
        return RDB_P_TYPE;
    h->type = p[4];
    h->len = get32(p + 8);
    h->a = get32(p + 12);
    h->seq = get64(p + 16);
    h->b = get64(p + 24);
    if ((size_t)h->len != n - RDB_HDR || h->len > max_payload(h->type))
        return RDB_P_LENGTH;
    return RDB_P_OK;
}

const char *rdb_perr_str(int e)
{
    switch (e) {
    case RDB_P_OK: return "ok";
    case RDB_P_SHORT: return "frame shorter than a header";
    case RDB_P_MAGIC: return "not an rdbench message";
    case RDB_P_TYPE: return "unknown message type";
    case RDB_P_LENGTH: return "length does not match the frame";
    default: return "?";
    }
}

const char *rdb_type_name(unsigned type)
{
    static const char *const names[] = { "?", "DATA", "ACK", "INFO_REQ", "INFO", "IO_REQ", "IO",
                                         "REVERSE", "END", "BYE", "ERR" };
    return type <= RDB_TYPE_MAX ? names[type] : "?";
}

void rdb_text_clean(const uint8_t *p, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    if (!cap)
        return;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        if (p[i] == 0 || p[i] == '\n')
            break;
        out[o++] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
    }
    out[o] = '\0';
}

/* ---- the agent's ready line ---- */

/* A port: 1-5 digits, no leading 0, at most 65535; *end past it. */
static int ready_port(const char *s, const char **end, unsigned *v)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 5 || s[0] == '0')
        return -1;
    unsigned x = 0;
    for (size_t i = 0; i < n; i++)
        x = x * 10 + (unsigned)(s[i] - '0');
    *end = s + n;
    *v = x;
    return x <= 65535 ? 0 : -1;
}

int rdb_ready_parse(const char *line, struct rdb_ready *r)
{
    memset(r, 0, sizeof *r);
    const char *p, *q;
    unsigned port, lo, hi;
    if (strncmp(line, "ready ", 6) || ready_port(line + 6, &p, &port) || *p != ' ')
        return -1;
    p++;
    static const char *const kinds[] = { "tcp ", "rdma ", "tcp,rdma " };
    size_t k = 0;
    while (k < 3 && strncmp(p, kinds[k], strlen(kinds[k])))
        k++;
    if (k == 3)
        return -1;
    p += strlen(kinds[k]);
    if (!strcmp(p, "?")) {
        snprintf(r->range, sizeof r->range, "?");
    } else {
        if (ready_port(p, &q, &lo) || *q != '-' || ready_port(q + 1, &q, &hi) || *q || lo > hi)
            return -1;
        snprintf(r->range, sizeof r->range, "%u-%u", lo, hi);
    }
    snprintf(r->port, sizeof r->port, "%u", port);
    snprintf(r->kinds, sizeof r->kinds, "%.*s", (int)strlen(kinds[k]) - 1, kinds[k]);
    return 0;
}

/* ---- INFO ---- */

__attribute__((format(printf, 4, 5)))
static int addf(char *out, size_t cap, size_t *used, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(out + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= cap - *used)
        return -1;
    *used += (size_t)k;
    return 0;
}

size_t rdb_info_encode(const struct rdb_info *in, char *out, size_t cap)
{
    size_t used = 0;
    if (cap > RDB_TEXT_MAX)
        cap = RDB_TEXT_MAX;
    if (addf(out, cap, &used, "host=%s\nversion=%s\ndesc=%s\nrange=%s\nio=%s\n", in->host,
             in->version, in->desc, in->range, in->io))
        return 0;
    for (unsigned i = 0; i < in->ndev && i < RDB_INFO_DEVS; i++)
        if (addf(out, cap, &used, "dev=%s %u %u %u %s\n", in->dev[i].name, in->dev[i].port,
                 in->dev[i].mtu, in->dev[i].netdev_mtu, in->dev[i].netdev[0] ? in->dev[i].netdev : "-"))
            return 0;
    return used;
}

/* A printable token of at most cap-1 bytes from [s, e), or "" */
static void token(const char *s, const char *e, char *out, size_t cap)
{
    size_t n = (size_t)(e - s);
    rdb_text_clean((const uint8_t *)s, n, out, cap);
}

static int parse_uint(const char **s, const char *e, unsigned max, unsigned *out)
{
    const char *p = *s;
    unsigned long v = 0;
    if (p >= e || *p < '0' || *p > '9')
        return -1;
    while (p < e && *p >= '0' && *p <= '9') {
        v = v * 10 + (unsigned)(*p - '0');
        if (v > max)
            return -1;
        p++;
    }
    *out = (unsigned)v;
    *s = p;
    return 0;
}

/* a device name: 1 .. cap-1 printable bytes, no blank */
static int word_ok(const char *s, const char *e, size_t cap)
{
    if (s >= e || (size_t)(e - s) >= cap)
        return 0;
    for (const char *p = s; p < e; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            return 0;
    return 1;
}

static int parse_dev(const char *s, const char *e, struct rdb_info_dev *d)
{
    const char *sp = memchr(s, ' ', (size_t)(e - s));
    if (!sp || !word_ok(s, sp, sizeof d->name))
        return -1;
    token(s, sp, d->name, sizeof d->name);
    const char *p = sp + 1;
    if (parse_uint(&p, e, 255, &d->port) || p >= e || *p++ != ' ' ||
        parse_uint(&p, e, 65536, &d->mtu) || p >= e || *p++ != ' ' ||
        parse_uint(&p, e, 1u << 20, &d->netdev_mtu) || p >= e || *p++ != ' ' || p >= e)
        return -1;
    if (!word_ok(p, e, sizeof d->netdev))
        return -1;
    token(p, e, d->netdev, sizeof d->netdev);
    if (!strcmp(d->netdev, "-"))
        d->netdev[0] = '\0';
    return 0;
}

int rdb_info_decode(const uint8_t *p, size_t n, struct rdb_info *out)
{
    static const struct { const char *key; size_t off, size; } keys[] = {
        { "host", offsetof(struct rdb_info, host), sizeof out->host },
        { "version", offsetof(struct rdb_info, version), sizeof out->version },
        { "desc", offsetof(struct rdb_info, desc), sizeof out->desc },
        { "range", offsetof(struct rdb_info, range), sizeof out->range },
        { "io", offsetof(struct rdb_info, io), sizeof out->io },
    };
    int skipped = 0;
    memset(out, 0, sizeof *out);
    if (n > RDB_TEXT_MAX)
        n = RDB_TEXT_MAX;
    const char *s = (const char *)p, *end = s + n;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;
        const char *eq = memchr(s, '=', (size_t)(e - s));
        int used = 0;
        if (eq) {
            size_t klen = (size_t)(eq - s);
            for (size_t k = 0; k < sizeof keys / sizeof keys[0] && !used; k++)
                if (klen == strlen(keys[k].key) && !memcmp(s, keys[k].key, klen)) {
                    token(eq + 1, e, (char *)out + keys[k].off, keys[k].size);
                    used = 1;
                }
            if (!used && klen == 3 && !memcmp(s, "dev", 3) && out->ndev < RDB_INFO_DEVS) {
                struct rdb_info_dev d;
                memset(&d, 0, sizeof d);
                if (parse_dev(eq + 1, e, &d) == 0) {
                    out->dev[out->ndev++] = d;
                    used = 1;
                }
            }
        }
        if (!used && e > s)
            skipped++;
        s = nl ? nl + 1 : end;
    }
    return skipped;
}

/* ---- IO ---- */

size_t rdb_io_encode(const struct rdb_io *io, uint8_t *out)
{
    for (unsigned i = 0; i < RDB_IO_COUNT; i++)
        put64(out + 8 * i, io->bps[i]);
    put32(out + 8 * RDB_IO_COUNT, io->lanes);
    put64(out + 8 * RDB_IO_COUNT + 4, io->bytes);
    return RDB_IO_LEN;
}

int rdb_io_decode(const uint8_t *p, size_t n, struct rdb_io *io)
{
    if (n != RDB_IO_LEN)
        return RDB_P_LENGTH;
    for (unsigned i = 0; i < RDB_IO_COUNT; i++)
        io->bps[i] = get64(p + 8 * i);
    io->lanes = get32(p + 8 * RDB_IO_COUNT);
    io->bytes = get64(p + 8 * RDB_IO_COUNT + 4);
    return RDB_P_OK;
}

const char *rdb_io_name(unsigned kind)
{
    static const char *const names[RDB_IO_COUNT] = {
        "write, buffered + fdatasync, 1 lane", "write, buffered + fdatasync, N lanes",
        "write, O_DIRECT, 1 lane", "write, O_DIRECT, N lanes",
        "read, not cached, 1 lane", "read, not cached, N lanes", "read, page-cached",
        "read, O_DIRECT, 1 lane", "read, O_DIRECT, N lanes", "pipe, 1 MiB writes",
    };
    return kind < RDB_IO_COUNT ? names[kind] : "?";
}

const char *rdb_io_key(unsigned kind)
{
    static const char *const keys[RDB_IO_COUNT] = {
        "write_1", "write_n", "write_direct_1", "write_direct_n", "read_cold_1", "read_cold_n",
        "read_cached", "read_direct_1", "read_direct_n", "pipe",
    };
    return kind < RDB_IO_COUNT ? keys[kind] : "?";
}

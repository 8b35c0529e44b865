#include "wire/rd_proto.h"

#include <string.h>
#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xxh_x86dispatch.h>
/* libxxhash's plain entry points are built for baseline x86-64 (about 3 GB/s here); the
 * dispatching ones pick AVX2/AVX-512 at run time (6-10 GB/s). */
#define rd_xxh3 XXH3_64bits_dispatch
#define rd_xxh3_update XXH3_64bits_update_dispatch
#else
#define rd_xxh3 XXH3_64bits
#define rd_xxh3_update XXH3_64bits_update
#endif

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
    return v;
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

const char *rd_proto_strerror(int e)
{
    switch (e) {
    case RD_P_OK: return "ok";
    case RD_P_SHORT: return "truncated frame";
    case RD_P_MAGIC: return "not an rdpipe frame (bad magic)";
    case RD_P_VERSION: return "peer speaks another protocol version";
    case RD_P_TYPE: return "unknown frame type";
    case RD_P_FLAGS: return "frame uses flags this version does not support";
    case RD_P_LENGTH: return "frame length out of range";
    case RD_P_CHECKSUM: return "checksum mismatch";
    case RD_P_SEQUENCE: return "frame out of order";
    default: return "protocol error";
    }
}

const char *rd_frame_type_name(int type)
{
    static const char *const names[] = {
        "?", "HELLO", "CHALLENGE", "AUTH", "ACCEPT", "REJECT", "DATA", "END", "CONFIRM", "ABORT", "JOIN",
    };
    return type > 0 && type <= RD_JOIN ? names[type] : "?";
}

struct rd_sum *rd_sum_new(void)
{
    return (struct rd_sum *)XXH3_createState();
}

void rd_sum_free(struct rd_sum *s)
{
    XXH3_freeState((XXH3_state_t *)s);
}

void rd_sum_reset(struct rd_sum *s)
{
    XXH3_64bits_reset((XXH3_state_t *)s);
}

void rd_sum_update(struct rd_sum *s, const void *p, size_t n)
{
    rd_xxh3_update((XXH3_state_t *)s, p, n);
}

uint64_t rd_sum_digest(const struct rd_sum *s)
{
    return XXH3_64bits_digest((const XXH3_state_t *)s);
}

uint64_t rd_checksum(const void *p, size_t n)
{
    return rd_xxh3(p, n);
}

size_t rd_frame_seal_sum(uint8_t *buf, uint8_t type, uint16_t flags, uint32_t length,
                         uint64_t seq, uint64_t checksum)
{
    memcpy(buf, RD_MAGIC, 4);
    buf[4] = RD_PROTO_VERSION;
    buf[5] = type;
    put16(buf + 6, flags);
    put32(buf + 8, length);
    put32(buf + 12, 0);
    put64(buf + 16, seq);
    put64(buf + 24, checksum);
    return RD_FRAME_HDR + (size_t)length;
}

size_t rd_frame_seal(uint8_t *buf, uint8_t type, uint16_t flags, uint32_t length, uint64_t seq)
{
    return rd_frame_seal_sum(buf, type, flags, length, seq, rd_checksum(buf + RD_FRAME_HDR, length));
}

int rd_frame_parse_head(const uint8_t *buf, size_t max_payload, struct rd_frame *f)
{
    if (memcmp(buf, RD_MAGIC, 4) != 0)
        return RD_P_MAGIC;
    if (buf[4] != RD_PROTO_VERSION)
        return RD_P_VERSION;
    if (buf[5] < RD_HELLO || buf[5] > RD_JOIN)
        return RD_P_TYPE;
    f->type = buf[5];
    f->flags = get16(buf + 6);
    if (f->flags & ~RD_FLAGS_KNOWN)
        return RD_P_FLAGS;
    if (get32(buf + 12) != 0)
        return RD_P_FLAGS;   /* reserved bytes: a later version's, not ours */
    f->length = get32(buf + 8);
    if (f->length > max_payload)
        return RD_P_LENGTH;
    f->seq = get64(buf + 16);
    f->checksum = get64(buf + 24);
    f->payload = NULL;
    return RD_P_OK;
}

int rd_frame_parse(const uint8_t *buf, size_t len, size_t max_payload, struct rd_frame *f)
{
    if (len < RD_FRAME_HDR)
        return RD_P_SHORT;
    int rc = rd_frame_parse_head(buf, max_payload, f);
    if (rc != RD_P_OK)
        return rc;
    if (len < RD_FRAME_HDR + (size_t)f->length)
        return RD_P_SHORT;
    if (len > RD_FRAME_HDR + (size_t)f->length)
        return RD_P_LENGTH;
    f->payload = buf + RD_FRAME_HDR;
    return RD_P_OK;
}

int rd_frame_verify(const struct rd_frame *f)
{
    return rd_checksum(f->payload, f->length) == f->checksum ? RD_P_OK : RD_P_CHECKSUM;
}

size_t rd_hello_encode(const struct rd_hello *h, uint8_t *out)
{
    put16(out, h->version_min);
    put16(out + 2, h->version_max);
    put32(out + 4, h->caps);
    put32(out + 8, h->chunk_size);
    put32(out + 12, h->depth);
    put32(out + 16, h->streams);
    memcpy(out + 20, h->nonce, RD_NONCE_LEN);
    return RD_HELLO_LEN;
}

int rd_hello_decode(const uint8_t *p, size_t n, struct rd_hello *h)
{
    if (n != RD_HELLO_LEN)
        return RD_P_LENGTH;
    h->version_min = get16(p);
    h->version_max = get16(p + 2);
    h->caps = get32(p + 4);
    h->chunk_size = get32(p + 8);
    h->depth = get32(p + 12);
    h->streams = get32(p + 16);
    memcpy(h->nonce, p + 20, RD_NONCE_LEN);
    return RD_P_OK;
}

size_t rd_challenge_encode(const struct rd_challenge *c, uint8_t *out)
{
    put32(out, c->caps);
    put32(out + 4, c->chunk_size);
    put32(out + 8, c->depth);
    put32(out + 12, c->streams);
    memcpy(out + 16, c->nonce, RD_NONCE_LEN);
    memcpy(out + 16 + RD_NONCE_LEN, c->mac, RD_MAC_LEN);
    return RD_CHALLENGE_LEN;
}

int rd_challenge_decode(const uint8_t *p, size_t n, struct rd_challenge *c)
{
    if (n != RD_CHALLENGE_LEN)
        return RD_P_LENGTH;
    c->caps = get32(p);
    c->chunk_size = get32(p + 4);
    c->depth = get32(p + 8);
    c->streams = get32(p + 12);
    memcpy(c->nonce, p + 16, RD_NONCE_LEN);
    memcpy(c->mac, p + 16 + RD_NONCE_LEN, RD_MAC_LEN);
    return RD_P_OK;
}

size_t rd_join_encode(const struct rd_join *j, uint8_t *out)
{
    put32(out, j->index);
    memcpy(out + 4, j->mac, RD_MAC_LEN);
    return RD_JOIN_LEN;
}

int rd_join_decode(const uint8_t *p, size_t n, struct rd_join *j)
{
    if (n != RD_JOIN_LEN)
        return RD_P_LENGTH;
    j->index = get32(p);
    memcpy(j->mac, p + 4, RD_MAC_LEN);
    return RD_P_OK;
}

size_t rd_end_encode(const struct rd_end *e, uint8_t *out)
{
    put64(out, e->total_bytes);
    put64(out + 8, e->frames);
    put64(out + 16, e->stream_hash);
    return RD_END_LEN;
}

int rd_end_decode(const uint8_t *p, size_t n, struct rd_end *e)
{
    if (n != RD_END_LEN)
        return RD_P_LENGTH;
    e->total_bytes = get64(p);
    e->frames = get64(p + 8);
    e->stream_hash = get64(p + 16);
    return RD_P_OK;
}

size_t rd_reason_encode(const struct rd_reason *r, uint8_t *out)
{
    size_t tl = strnlen(r->text, sizeof r->text - 1);
    put32(out, r->code);
    memcpy(out + 4, r->text, tl);
    return 4 + tl;
}

int rd_reason_decode(const uint8_t *p, size_t n, struct rd_reason *r)
{
    if (n < 4 || n - 4 > sizeof r->text - 1)
        return RD_P_LENGTH;
    r->code = get32(p);
    size_t tl = n - 4;
    /* the text comes from the peer: keep it printable so it cannot forge terminal output */
    for (size_t i = 0; i < tl; i++)
        r->text[i] = (p[4 + i] >= 0x20 && p[4 + i] < 0x7f) ? (char)p[4 + i] : '?';
    r->text[tl] = '\0';
    return RD_P_OK;
}

void rd_stream_hash_init(struct rd_stream_hash *h)
{
    h->state = 0;
}

void rd_stream_hash_add(struct rd_stream_hash *h, uint64_t seq, uint32_t length, uint64_t checksum)
{
    uint8_t t[20];
    put64(t, seq);
    put32(t + 8, length);
    put64(t + 12, checksum);
    h->state = XXH3_64bits_withSeed(t, sizeof t, h->state);
}

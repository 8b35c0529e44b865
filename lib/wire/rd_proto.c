#include "wire/rd_proto.h"

#include <string.h>
#include <xxhash.h>

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
    case RD_P_TAG: return "authentication tag mismatch";
    case RD_P_SEQUENCE: return "frame out of order";
    default: return "protocol error";
    }
}

const char *rd_frame_type_name(int type)
{
    static const char *const names[] = {
        "?", "HELLO", "CHALLENGE", "AUTH", "ACCEPT", "REJECT", "DATA", "END", "CONFIRM", "ABORT", "JOIN", "RAILS",
    };
    return type > 0 && type <= RD_FRAME_TYPE_MAX ? names[type] : "?";
}

size_t rd_frame_seal(uint8_t *buf, uint8_t type, uint16_t flags, uint32_t length, uint64_t seq)
{
    memcpy(buf, RD_MAGIC, 4);
    buf[4] = RD_PROTO_VERSION;
    buf[5] = type;
    put16(buf + 6, flags);
    put32(buf + 8, length);
    put32(buf + 12, 0);
    put64(buf + RD_HDR_SEQ, seq);
    memset(buf + RD_HDR_TAG, 0, RD_FRAME_HDR - RD_HDR_TAG);
    return RD_FRAME_HDR + (size_t)length;
}

void rd_frame_set_compressed(uint8_t *buf, uint32_t length, uint32_t raw)
{
    put16(buf + 6, (uint16_t)(get16(buf + 6) | RD_FLAG_COMPRESSED));
    put32(buf + 8, length);
    put32(buf + RD_HDR_RAW, raw);
}

int rd_frame_tag(struct rd_tagger *t, enum rd_tag_dir dir, uint8_t *buf, const uint8_t *p)
{
    return rd_tag_compute(t, dir, buf, p, get32(buf + 8), buf + RD_HDR_TAG);
}

int rd_frame_check(struct rd_tagger *t, enum rd_tag_dir dir, const uint8_t *hdr, const struct rd_frame *f)
{
    uint8_t want[RD_TAG_LEN];
    if (rd_tag_compute(t, dir, hdr, f->payload, f->length, want))
        return RD_P_TAG;
    return rd_tag_equal(want, f->tag) ? RD_P_OK : RD_P_TAG;
}

/* magic and version, the part of the header every version shares */
static int check_version(const uint8_t *buf, size_t len)
{
    if (len < 5)
        return RD_P_SHORT;
    if (memcmp(buf, RD_MAGIC, 4) != 0)
        return RD_P_MAGIC;
    if (buf[4] != RD_PROTO_VERSION)
        return RD_P_VERSION;
    return RD_P_OK;
}

int rd_frame_parse_head(const uint8_t *buf, size_t max_payload, struct rd_frame *f)
{
    int rc = check_version(buf, RD_FRAME_HDR);
    if (rc != RD_P_OK)
        return rc;
    if (buf[5] < RD_HELLO || buf[5] > RD_FRAME_TYPE_MAX)
        return RD_P_TYPE;
    f->type = buf[5];
    f->flags = get16(buf + 6);
    if (f->flags & ~RD_FLAGS_KNOWN)
        return RD_P_FLAGS;
    /* only a DATA payload is ever compressed or encrypted; a cipher comes only with encryption,
     * and one at a time */
    uint16_t ciphers = f->flags & (RD_FLAG_AES_GCM | RD_FLAG_AES_OCB);
    if (f->flags && (f->type != RD_DATA || (ciphers && !(f->flags & RD_FLAG_ENCRYPTED)) ||
                     ciphers == (RD_FLAG_AES_GCM | RD_FLAG_AES_OCB)))
        return RD_P_FLAGS;
    if (get32(buf + 12) != 0 || get32(buf + RD_HDR_RAW + 4) != 0)
        return RD_P_FLAGS;   /* reserved bytes: a later version's, not ours */
    f->length = get32(buf + 8);
    if (f->length > max_payload)
        return RD_P_LENGTH;
    f->raw_length = f->length;
    uint32_t raw = get32(buf + RD_HDR_RAW);
    if (f->flags & RD_FLAG_COMPRESSED) {
        /* what it decompresses to is bounded like any payload, before anyone allocates */
        if (raw == 0 || raw > max_payload || f->length == 0)
            return RD_P_LENGTH;
        f->raw_length = raw;
    } else if (raw != 0) {
        return RD_P_FLAGS;
    }
    f->seq = get64(buf + RD_HDR_SEQ);
    memcpy(f->tag, buf + RD_HDR_TAG, RD_TAG_LEN);
    f->payload = NULL;
    return RD_P_OK;
}

int rd_frame_parse(const uint8_t *buf, size_t len, size_t max_payload, struct rd_frame *f)
{
    /* version first: a version 1 frame is shorter than our header, and its peer deserves
     * "another version", not "truncated" */
    int rc = check_version(buf, len);
    if (rc != RD_P_OK)
        return rc;
    if (len < RD_FRAME_HDR)
        return RD_P_SHORT;
    rc = rd_frame_parse_head(buf, max_payload, f);
    if (rc != RD_P_OK)
        return rc;
    if (len < RD_FRAME_HDR + (size_t)f->length)
        return RD_P_SHORT;
    if (len > RD_FRAME_HDR + (size_t)f->length)
        return RD_P_LENGTH;
    f->payload = buf + RD_FRAME_HDR;
    return RD_P_OK;
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
    memcpy(out + 16 + RD_NONCE_LEN, c->share, RD_SHARE_LEN);
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
    memcpy(c->share, p + 16 + RD_NONCE_LEN, RD_SHARE_LEN);
    return RD_P_OK;
}

size_t rd_proof_encode(const struct rd_proof *a, uint8_t *out)
{
    memcpy(out, a->share, RD_SHARE_LEN);
    memcpy(out + RD_SHARE_LEN, a->mac, RD_MAC_LEN);
    return RD_AUTH_LEN;
}

int rd_proof_decode(const uint8_t *p, size_t n, struct rd_proof *a)
{
    if (n != RD_AUTH_LEN)
        return RD_P_LENGTH;
    memcpy(a->share, p, RD_SHARE_LEN);
    memcpy(a->mac, p + RD_SHARE_LEN, RD_MAC_LEN);
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

size_t rd_rails_encode(const struct rd_rails *r, uint8_t *out)
{
    out[0] = r->count;
    for (unsigned i = 0; i < r->count; i++) {
        out[1 + i * RD_RAIL_ENTRY_LEN] = r->a[i].family;
        out[2 + i * RD_RAIL_ENTRY_LEN] = r->a[i].port;
        memcpy(out + 3 + i * RD_RAIL_ENTRY_LEN, r->a[i].addr, 16);
    }
    return 1 + (size_t)r->count * RD_RAIL_ENTRY_LEN;
}

int rd_rails_decode(const uint8_t *p, size_t n, struct rd_rails *r)
{
    static const uint8_t zero[12];
    if (n < 1 || p[0] == 0 || p[0] > RD_MAX_RAILS || n != 1 + (size_t)p[0] * RD_RAIL_ENTRY_LEN)
        return RD_P_LENGTH;
    memset(r, 0, sizeof *r);
    r->count = p[0];
    for (unsigned i = 0; i < r->count; i++) {
        const uint8_t *e = p + 1 + i * RD_RAIL_ENTRY_LEN;
        if ((e[0] != 4 && e[0] != 6) || (e[0] == 4 && memcmp(e + 6, zero, sizeof zero)))
            return RD_P_LENGTH;
        r->a[i].family = e[0];
        r->a[i].port = e[1];
        memcpy(r->a[i].addr, e + 2, 16);
    }
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

void rd_stream_hash_add(struct rd_stream_hash *h, const uint8_t tag[RD_TAG_LEN])
{
    h->state = XXH3_64bits_withSeed(tag, RD_TAG_LEN, h->state);
}

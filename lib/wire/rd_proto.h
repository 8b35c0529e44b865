/* rd_proto.h - wire protocol v2: frame layout, encode and decode. No IO here.
 *
 * Every frame is a 48-byte header followed by `length` payload bytes. All integers are
 * little endian (every machine we target is, so encoding is a copy on the hot path).
 *
 *   off size field
 *     0    4 magic     "RDP\xb1"
 *     4    1 version   RD_PROTO_VERSION (where version 1 had it: a v1 peer names the mismatch)
 *     5    1 type      enum rd_frame_type
 *     6    2 flags     RD_FLAG_*; unknown bits are an error
 *     8    4 length    payload bytes
 *    12    4 reserved  0
 *    16    8 seq       the tag's nonce: DATA 0,1,2,...; END the number of DATA frames;
 *                      CONFIRM 0; ABORT random; handshake frames 0
 *    24   16 tag       rd_tag.h: ChaCha20-Poly1305 over the rest of the header and the
 *                      payload; zero in the handshake frames, which the key-confirmation
 *                      MACs cover instead
 *    40    4 raw       a compressed DATA frame (RD_FLAG_COMPRESSED): the chunk's length before
 *                      compression (1 .. the agreed chunk size); else 0
 *    44    4 reserved  0
 */
#ifndef RD_PROTO_H
#define RD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "wire/rd_tag.h"

#define RD_PROTO_VERSION 2
#define RD_FRAME_HDR 48u
#define RD_HDR_SEQ 16u    /* offsets inside the header */
#define RD_HDR_TAG 24u
#define RD_HDR_RAW 40u
#define RD_MAGIC "RDP\xb1"
#define RD_NONCE_LEN 32u
#define RD_MAC_LEN 32u
#define RD_MAX_CHUNK (256u << 20)   /* largest chunk either side will agree to */
#define RD_MIN_CHUNK 4096u
#define RD_MAX_DEPTH 1024u

enum rd_frame_type {
    RD_HELLO = 1,      /* sender -> receiver: parameters wanted + nonce */
    RD_CHALLENGE = 2,  /* receiver -> sender: its nonce, agreed parameters, its CPace share */
    RD_AUTH = 3,       /* sender -> receiver: its CPace share and key-confirmation MAC */
    RD_ACCEPT = 4,     /* receiver -> sender: its key-confirmation MAC; data ring posted, go */
    RD_REJECT = 5,     /* either way during the handshake: reason code + text */
    RD_DATA = 6,       /* payload = stream bytes */
    RD_END = 7,        /* sender -> receiver: total bytes + stream hash */
    RD_CONFIRM = 8,    /* receiver -> sender: everything written and flushed */
    RD_ABORT = 9,      /* either way mid-stream: reason code + text */
    RD_JOIN = 10,      /* sender -> receiver, first frame of an extra connection (--streams) */
    RD_RAILS = 11,     /* receiver -> sender, after ACCEPT when RD_CAP_RAILS was granted: the
                        * addresses its RDMA ports take connections on (hop-tagged) */
};
#define RD_FRAME_TYPE_MAX RD_RAILS

enum rd_frame_flags {
    RD_FLAG_COMPRESSED = 1u << 0,   /* DATA: the payload is one zstd frame of `raw` bytes
                                     * (wire/rd_compress.h); in the caps: the sender compresses */
    RD_FLAG_ENCRYPTED = 1u << 1,    /* DATA: the payload is encrypted (wire/rd_seal.h); in the
                                     * handshake's caps: the sender encrypts */
    RD_FLAG_AES_GCM = 1u << 2,      /* with ENCRYPTED: AES-256-GCM, else ChaCha20-Poly1305; in
                                     * the caps: this end's CPU has AES instructions */
    RD_FLAG_AES_OCB = 1u << 3,      /* with ENCRYPTED (never with AES_GCM): AES-256-OCB; in the
                                     * caps: this end can run it too (wire/rd_seal.h) */
};
#define RD_FLAGS_KNOWN (RD_FLAG_COMPRESSED | RD_FLAG_ENCRYPTED | RD_FLAG_AES_GCM | RD_FLAG_AES_OCB)

/* Handshake capabilities that are no frame's flags. A receiver grants what it knows of the
 * caps it is offered (an older one none of these), so each is safe to offer. */
#define RD_CAP_RAILS (1u << 8)   /* HELLO: stripe over the receiver's rails, tell me them (RD_RAILS);
                                  * CHALLENGE: granted, and streams counts the rails */

struct rd_frame {
    uint8_t type;
    uint16_t flags;
    uint32_t length;
    uint64_t seq;
    uint32_t raw_length;      /* DATA: the chunk's bytes once decompressed (= length if not) */
    uint8_t tag[RD_TAG_LEN];
    const uint8_t *payload;   /* points into the buffer the frame was decoded from */
};

/* HELLO payload */
struct rd_hello {
    uint16_t version_min, version_max;   /* protocol versions the sender speaks */
    uint32_t caps;                       /* RD_FLAG_* the sender could use */
    uint32_t chunk_size;                 /* wanted payload bytes per DATA frame */
    uint32_t depth;                      /* wanted frames in flight */
    uint32_t streams;                    /* wanted TCP connections to stripe over (>= 1) */
    uint8_t nonce[RD_NONCE_LEN];
};
#define RD_HELLO_LEN (2 + 2 + 4 + 4 + 4 + 4 + RD_NONCE_LEN)

/* CHALLENGE payload: agreed parameters + receiver nonce + the receiver's CPace share (it
 * proves nothing yet: the sender must prove the key first, see rd_auth.h) */
#define RD_SHARE_LEN 32u
struct rd_challenge {
    uint32_t caps, chunk_size, depth, streams;
    uint8_t nonce[RD_NONCE_LEN];
    uint8_t share[RD_SHARE_LEN];
};
#define RD_CHALLENGE_LEN (4 + 4 + 4 + 4 + RD_NONCE_LEN + RD_SHARE_LEN)
#define RD_CHALLENGE_PARAMS (4 + 4 + 4 + 4 + RD_NONCE_LEN)   /* the part before the share */

/* AUTH payload: the sender's CPace share and its key-confirmation MAC. ACCEPT's payload is
 * the receiver's key-confirmation MAC alone. */
struct rd_proof {
    uint8_t share[RD_SHARE_LEN];
    uint8_t mac[RD_MAC_LEN];
};
#define RD_AUTH_LEN (RD_SHARE_LEN + RD_MAC_LEN)
#define RD_ACCEPT_LEN RD_MAC_LEN

/* JOIN: which stripe this connection is, proven with a MAC only the two ends of the first
 * connection's handshake can compute. */
struct rd_join {
    uint32_t index;               /* 1 .. streams-1 (the first connection is stripe 0) */
    uint8_t mac[RD_MAC_LEN];
};
#define RD_JOIN_LEN (4 + RD_MAC_LEN)

/* RAILS: the receiver's addresses for the connections of --streams over RDMA, those of each
 * active port, the address the first connection reached first. The sender pairs them with
 * its own ports (transport/rd_rails.h), one connection per port. Wire: count:u8, then count x
 * (family:u8 4|6, port:u8, addr[16]); port: the receiver's number for the port, the same for
 * each address of one port; an IPv4 address in the first 4 bytes, the rest zero. */
#define RD_MAX_RAILS 8u
struct rd_rails {
    uint8_t count;
    struct rd_rail_addr {
        uint8_t family;        /* 4 or 6 */
        uint8_t port;          /* which port of its host this address is on */
        uint8_t addr[16];
    } a[RD_MAX_RAILS];
};
#define RD_RAIL_ENTRY_LEN 18u
#define RD_RAILS_MAX_LEN (1 + RD_MAX_RAILS * RD_RAIL_ENTRY_LEN)

/* END / CONFIRM payload */
struct rd_end {
    uint64_t total_bytes;
    uint64_t frames;
    uint64_t stream_hash;
};
#define RD_END_LEN 24u

/* REJECT / ABORT payload: code (an rd_err) + text */
struct rd_reason {
    uint32_t code;
    char text[200];
};

enum rd_proto_err {
    RD_P_OK = 0,
    RD_P_SHORT = -1,        /* fewer bytes than the header or its declared length */
    RD_P_MAGIC = -2,        /* not an rdpipe frame */
    RD_P_VERSION = -3,      /* rdpipe, but another protocol version */
    RD_P_TYPE = -4,         /* unknown frame type */
    RD_P_FLAGS = -5,        /* flags this build does not understand */
    RD_P_LENGTH = -6,       /* length larger than allowed / payload size wrong for the type */
    RD_P_TAG = -7,          /* the frame fails its tag: corrupt, forged, replayed or out of place */
    RD_P_SEQUENCE = -8,     /* DATA frame out of order */
};
const char *rd_proto_strerror(int e);
const char *rd_frame_type_name(int type);

/* Write the header of a frame whose `length` payload bytes already sit at buf + RD_FRAME_HDR
 * (or elsewhere: the header never depends on where the payload is). The tag is zero, as in
 * handshake frames, until rd_frame_tag sets it. Returns the frame length (header + payload). */
size_t rd_frame_seal(uint8_t *buf, uint8_t type, uint16_t flags, uint32_t length, uint64_t seq);
/* Compute the tag of the sealed frame in buf, whose payload is at p, and store it in the
 * header. Returns 0, or -1 if libcrypto failed. */
int rd_frame_tag(struct rd_tagger *t, enum rd_tag_dir dir, uint8_t *buf, const uint8_t *p);
/* Mark the sealed DATA frame in buf as compressed: its payload is now `length` bytes of zstd
 * that decompress to `raw` (before the tag is computed: the header is under it). */
void rd_frame_set_compressed(uint8_t *buf, uint32_t length, uint32_t raw);
/* Parse and validate the header of the frame in buf[0..len). Checks magic, version, type,
 * flags, that len == header + length, and length <= max_payload. Does NOT check the tag
 * (that is the expensive part, done by whichever thread writes the payload). */
int rd_frame_parse(const uint8_t *buf, size_t len, size_t max_payload, struct rd_frame *f);
/* The checks of rd_frame_parse that need only the RD_FRAME_HDR header bytes (payload = NULL):
 * for a relay that forwards the payload without reading it. */
int rd_frame_parse_head(const uint8_t *buf, size_t max_payload, struct rd_frame *f);
/* Check the tag of the frame whose header is hdr (f parsed from it, f->payload set):
 * RD_P_OK or RD_P_TAG. */
int rd_frame_check(struct rd_tagger *t, enum rd_tag_dir dir, const uint8_t *hdr, const struct rd_frame *f);

/* Payload encoders write into out (enough room assumed) and return bytes written;
 * decoders return RD_P_OK or RD_P_LENGTH. */
size_t rd_hello_encode(const struct rd_hello *h, uint8_t *out);
int rd_hello_decode(const uint8_t *p, size_t n, struct rd_hello *h);
size_t rd_challenge_encode(const struct rd_challenge *c, uint8_t *out);
int rd_challenge_decode(const uint8_t *p, size_t n, struct rd_challenge *c);
size_t rd_proof_encode(const struct rd_proof *a, uint8_t *out);
int rd_proof_decode(const uint8_t *p, size_t n, struct rd_proof *a);
size_t rd_join_encode(const struct rd_join *j, uint8_t *out);
int rd_join_decode(const uint8_t *p, size_t n, struct rd_join *j);
size_t rd_rails_encode(const struct rd_rails *r, uint8_t *out);
int rd_rails_decode(const uint8_t *p, size_t n, struct rd_rails *r);   /* 1..RD_MAX_RAILS entries */
size_t rd_end_encode(const struct rd_end *e, uint8_t *out);
int rd_end_decode(const uint8_t *p, size_t n, struct rd_end *e);
size_t rd_reason_encode(const struct rd_reason *r, uint8_t *out);
int rd_reason_decode(const uint8_t *p, size_t n, struct rd_reason *r);

/* Whole-stream hash: XXH3-64 chained over the tag of every DATA frame, in order. Each tag
 * already authenticates its chunk, its place and its stream, so END (itself tagged) covers
 * every byte and the order without a second pass over the data. */
struct rd_stream_hash { uint64_t state; };
void rd_stream_hash_init(struct rd_stream_hash *h);
void rd_stream_hash_add(struct rd_stream_hash *h, const uint8_t tag[RD_TAG_LEN]);

#endif

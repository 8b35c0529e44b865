/* rd_tag.h - the tag that authenticates every frame after the handshake.
 *
 * One standard construction: ChaCha20-Poly1305 (RFC 8439) with an empty plaintext and the
 * frame as associated data (its header without the tag field, then its payload). The nonce
 * is the direction and the header's sequence number, so a frame is valid only once, only in
 * its place in its stream, and only in the direction it was sent: a replayed, reordered,
 * reflected or spliced frame fails its tag. Poly1305 ran at 10-13 GB/s per core on the
 * development machine of 2026-11-23..27, twice AES-GMAC, and at 5.3 on 2026-11-28's (Zen 3:
 * no AVX-512, which OpenSSL's fastest Poly1305 uses), as fast as AES-GMAC there; XXH3 is 3-6x
 * faster but no MAC (tests/unit/test_tag prints the figures). The engine's lanes spread it
 * over cores (engine/rd_lanes.h).
 */
#ifndef RD_TAG_H
#define RD_TAG_H

#include <stddef.h>
#include <stdint.h>

#define RD_TAG_LEN 16u
#define RD_KEY_LEN 32u

/* Who sent the frame, in the nonce. DOWN: from the stream's origin towards its sink (DATA,
 * END); UP: back towards the origin (CONFIRM). The hop-level frames (ABORT, REJECT) use
 * HOP_DOWN and HOP_UP under the hop key, so no frame of one class verifies as another. */
enum rd_tag_dir { RD_TAG_DOWN = 1, RD_TAG_UP = 2, RD_TAG_HOP_DOWN = 3, RD_TAG_HOP_UP = 4 };

/* A key and what computing tags under it needs (one per thread: not thread-safe). */
struct rd_tagger;
struct rd_tagger *rd_tagger_new(const uint8_t key[RD_KEY_LEN]);   /* NULL: out of memory */
void rd_tagger_free(struct rd_tagger *t);

/* The tag of the frame whose header is hdr[0..RD_FRAME_HDR) (tag field ignored) and whose
 * payload is p[0..n), sent in direction dir. Returns 0, or -1 if libcrypto failed. */
int rd_tag_compute(struct rd_tagger *t, enum rd_tag_dir dir, const uint8_t *hdr, const uint8_t *p,
                   size_t n, uint8_t tag[RD_TAG_LEN]);
/* The same piece by piece, as a payload arrives: begin with the header, update with each
 * piece, finish. */
int rd_tag_begin(struct rd_tagger *t, enum rd_tag_dir dir, const uint8_t *hdr);
int rd_tag_update(struct rd_tagger *t, const uint8_t *p, size_t n);
int rd_tag_finish(struct rd_tagger *t, uint8_t tag[RD_TAG_LEN]);
/* Constant-time comparison: 1 if equal. */
int rd_tag_equal(const uint8_t a[RD_TAG_LEN], const uint8_t b[RD_TAG_LEN]);

#endif

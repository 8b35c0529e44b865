/* rd_seal.h - --encrypt: every DATA payload encrypted in place with an AEAD.
 *
 * Where both ends' CPUs have AES instructions: AES-256-OCB (RFC 7253, from libgcrypt:
 * wire/rd_ocb.h) when both ends have it, else AES-256-GCM; otherwise ChaCha20-Poly1305
 * (RFC 8439); GCM and ChaCha20-Poly1305 from libcrypto. The key is the stream key's own
 * derivation (HKDF, "rdpipe v2 stream encryption"), so the stream key itself only ever tags
 * (rd_tag.h) and no key is used by two algorithms. The nonce is the direction and the frame's
 * sequence number, as for the tags: a stream's DATA frames have distinct sequence numbers, so
 * no nonce repeats under one key. The associated data is the header without its tag field
 * (its flags say that and how the payload is encrypted, so they cannot be stripped); the
 * AEAD's tag is the frame's tag. Relays hold no stream key and pass ciphertext on unchanged:
 * encryption is end to end.
 */
#ifndef RD_SEAL_H
#define RD_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "wire/rd_tag.h"

enum rd_cipher { RD_CIPHER_CHACHA20_POLY1305 = 0, RD_CIPHER_AES_256_GCM = 1, RD_CIPHER_AES_256_OCB = 2 };
#define RD_CIPHERS 3

/* The cipher a frame's flags name (RD_FLAG_ENCRYPTED set), and the flags for a cipher. */
enum rd_cipher rd_cipher_of_flags(uint16_t flags);
uint16_t rd_cipher_flags(enum rd_cipher c);
const char *rd_cipher_name(enum rd_cipher c);
/* What a sender offers in the handshake's caps when it encrypts: RD_FLAG_ENCRYPTED,
 * RD_FLAG_AES_GCM if this CPU runs AES in hardware (AES-NI and carry-less multiply), and
 * RD_FLAG_AES_OCB if it can also run AES-256-OCB (rd_ocb_usable). What a receiver grants of
 * that: the same, except that RD_FLAG_AES_OCB says only that it can open OCB (so a relay can
 * tell whether the next hop takes what the origin sends). RDPIPE_CIPHER=aes-256-ocb,
 * aes-256-gcm or chacha20-poly1305 keeps only what picks that cipher (tests, benchmarks; a
 * receiver forced to aes-256-gcm is one that knows no OCB). */
uint32_t rd_cipher_offer(void);
uint32_t rd_cipher_grant(void);
/* The cipher a sender uses under the agreed caps (RD_FLAG_ENCRYPTED set; each other bit is
 * kept only when both ends have it): AES where both CPUs have it, OCB where both can run it. */
enum rd_cipher rd_cipher_agreed(uint32_t caps);

/* One key and cipher, for one thread, one way (seal: encrypt; open: decrypt). */
struct rd_sealer;
struct rd_sealer *rd_sealer_new(const uint8_t stream_key[RD_KEY_LEN], enum rd_cipher c, int seal);
void rd_sealer_free(struct rd_sealer *s);

/* Encrypt the payload p[0..n) of the frame whose header is hdr (flags, length and seq set)
 * in place and write the tag into the header. 0, or -1 if libcrypto failed. */
int rd_seal_payload(struct rd_sealer *s, enum rd_tag_dir dir, uint8_t *hdr, uint8_t *p, size_t n);
/* Check and decrypt in place. 0: p holds the plaintext; 1: the tag does not match (p holds
 * garbage that must not be used); -1: libcrypto failed. */
int rd_open_payload(struct rd_sealer *s, enum rd_tag_dir dir, const uint8_t *hdr, uint8_t *p, size_t n);

#endif

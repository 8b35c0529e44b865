/* rd_ocb.h - AES-256-OCB (RFC 7253, 128-bit tag), the fastest AEAD for --encrypt where the CPU
 * has AES instructions.
 *
 * From libgcrypt, not libcrypto: Debian 12's OpenSSL 3.0 runs AES-256-GCM at 4.6 GB/s and
 * AES-256-OCB at 5.6 GB/s per core here, libgcrypt 1.10's OCB (VAES) at 13.5 in both
 * directions. OCB's output is the RFC's, whichever library computes it: tests/unit/wire/
 * test_seal checks every size against libcrypto's OCB, so the two ends may use either.
 * One context per thread, one key; the caller builds the nonce (never repeated under a key).
 */
#ifndef RD_OCB_H
#define RD_OCB_H

#include <stddef.h>
#include <stdint.h>

#define RD_OCB_NONCE_LEN 12u
#define RD_OCB_TAG_LEN 16u

/* 1 if libgcrypt is there and lets this process use AES-256-OCB (it refuses in FIPS mode). */
int rd_ocb_usable(void);
/* The version of the libgcrypt this process runs with ("1.10.1"), or NULL if unusable. */
const char *rd_ocb_library_version(void);

struct rd_ocb;
struct rd_ocb *rd_ocb_new(const uint8_t key[32]);   /* NULL: unusable or out of memory */
void rd_ocb_free(struct rd_ocb *o);

/* Encrypt p[0..n) in place under nonce, authenticating ad[0..adlen) too; write the tag.
 * 0, or -1 if libgcrypt failed. */
int rd_ocb_seal(struct rd_ocb *o, const uint8_t nonce[RD_OCB_NONCE_LEN], const uint8_t *ad, size_t adlen,
                uint8_t *p, size_t n, uint8_t tag[RD_OCB_TAG_LEN]);
/* Decrypt p[0..n) in place and check tag. 0: p holds the plaintext; 1: the tag does not match
 * (p holds garbage that must not be used); -1: libgcrypt failed. */
int rd_ocb_open(struct rd_ocb *o, const uint8_t nonce[RD_OCB_NONCE_LEN], const uint8_t *ad, size_t adlen,
                uint8_t *p, size_t n, const uint8_t tag[RD_OCB_TAG_LEN]);

#endif

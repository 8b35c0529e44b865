/* rd_cpace.h - CPace, the balanced password-authenticated key exchange, over ristretto255
 * with SHA-512 (CPACE-RISTR255-SHA512), initiator-responder setting, as specified by
 * draft-irtf-cfrg-cpace-21 and checked against that draft's test vectors.
 *
 * Both sides derive the generator g from the password-related string (PRS), the channel
 * identifier (CI) and the session id (sid), send share = scalar * g, and hash the
 * Diffie-Hellman result K with both shares and both associated data (AD) into the
 * intermediate session key ISK. The sides agree on ISK only if PRS, CI, sid, both shares
 * and both ADs match, so ISK authenticates the password without it ever being sent. ISK
 * is meant to go through a KDF and a key-confirmation round before use; K itself is never
 * exposed (the draft forbids it: a leaked K allows an offline dictionary attack).
 *
 * All inputs are hashed where they lie (no copies, no allocation), so no length can
 * overflow a buffer; a NULL pointer with a non-zero length is refused. Every function
 * returns 0 on success and -1 on failure, and leaves no secret behind when it fails.
 */
#ifndef RD_CPACE_H
#define RD_CPACE_H

#include <stddef.h>
#include <stdint.h>

#define RD_CPACE_POINT 32      /* encoded ristretto255 element: g and the shares */
#define RD_CPACE_SCALAR 32     /* little-endian scalar */
#define RD_CPACE_GENHASH 64    /* SHA-512 of the generator string */
#define RD_CPACE_ISK 64

struct rd_cpace {
    uint8_t scalar[RD_CPACE_SCALAR];   /* secret, reduced mod the group order, never 0 */
    uint8_t share[RD_CPACE_POINT];     /* what we send: scalar * g */
};

/* gen_str_hash = SHA-512(generator_string("CPaceRistretto255", PRS, CI, sid, 128)), the
 * input of the element derivation; exposed for the draft's known-answer test. */
int rd_cpace_generator_hash(uint8_t h[RD_CPACE_GENHASH], const void *prs, size_t prs_len,
                            const void *ci, size_t ci_len, const void *sid, size_t sid_len);
/* calculate_generator: g = ristretto255 element derived from gen_str_hash, encoded. */
int rd_cpace_generator(uint8_t g[RD_CPACE_POINT], const void *prs, size_t prs_len,
                       const void *ci, size_t ci_len, const void *sid, size_t sid_len);

/* A fresh random scalar (uniform in 1..order-1) and share = scalar * g. */
int rd_cpace_start(struct rd_cpace *c, const uint8_t g[RD_CPACE_POINT]);
/* The same with a given scalar (reduced mod the order; 0 is refused): known-answer tests.
 * Refuses a g that is not a valid encoding or is the identity. */
int rd_cpace_start_with(struct rd_cpace *c, const uint8_t g[RD_CPACE_POINT],
                        const uint8_t scalar[RD_CPACE_SCALAR]);

/* K = scalar_mult_vfy(scalar, peer_share), refusing (-1) a peer share that is not a valid
 * canonical encoding or that makes K the identity; then
 *   ISK = SHA-512(lv_cat("CPaceRistretto255_ISK", sid, K) || lv_cat(Ya, ADa) || lv_cat(Yb, ADb))
 * where (Ya, ADa) belong to the initiator, the side that sent its share first: initiator = 1
 * when that is us (Ya = c->share, ADa = ad_self), 0 when it is the peer. */
int rd_cpace_isk(const struct rd_cpace *c, const uint8_t peer_share[RD_CPACE_POINT], int initiator,
                 const void *ad_self, size_t ad_self_len, const void *ad_peer, size_t ad_peer_len,
                 const void *sid, size_t sid_len, uint8_t isk[RD_CPACE_ISK]);

void rd_cpace_wipe(struct rd_cpace *c);

#endif

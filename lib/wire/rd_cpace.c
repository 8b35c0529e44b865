/* rd_cpace.c - CPace over ristretto255/SHA-512 (draft-irtf-cfrg-cpace-21) on libsodium. */
#include "wire/rd_cpace.h"

#include <sodium.h>
#include <stdatomic.h>
#include <string.h>

static const char dsi[] = "CPaceRistretto255";          /* G.DSI */
static const char dsi_isk[] = "CPaceRistretto255_ISK";  /* G.DSI || "_ISK" */
#define SHA512_BLOCK 128                                 /* H.s_in_bytes */

/* sodium_init is idempotent and thread-safe but takes a lock: skip it once it succeeded. */
static int cpace_init(void)
{
    static atomic_int ready;
    if (atomic_load_explicit(&ready, memory_order_acquire))
        return 0;
    if (sodium_init() < 0)
        return -1;
    atomic_store_explicit(&ready, 1, memory_order_release);
    return 0;
}

static int bad_input(const void *p, size_t n)
{
    return n && !p;
}

/* LEB128 of n into out (at most 10 bytes for 64 bits); returns its length. */
static size_t leb128(uint8_t out[10], size_t n)
{
    size_t k = 0;
    do {
        out[k] = (uint8_t)(n & 0x7f);
        n >>= 7;
        if (n)
            out[k] |= 0x80;
        k++;
    } while (n);
    return k;
}

/* Hash prepend_len(p[0..n)): one lv_cat field. */
static void hash_lv(crypto_hash_sha512_state *st, const void *p, size_t n)
{
    uint8_t hdr[10];
    crypto_hash_sha512_update(st, hdr, leb128(hdr, n));
    if (n)
        crypto_hash_sha512_update(st, p, n);
}

int rd_cpace_generator_hash(uint8_t h[RD_CPACE_GENHASH], const void *prs, size_t prs_len,
                            const void *ci, size_t ci_len, const void *sid, size_t sid_len)
{
    /* generator_string = lv_cat(DSI, PRS, zero_bytes(len_zpad), CI, sid), the padding making
     * DSI and PRS fill the whole first SHA-512 block. A PRS of 128 bytes or more needs none
     * (its length is not added, so the sum cannot overflow). */
    static const uint8_t zeros[SHA512_BLOCK];
    /* len_zpad = max(0, 128 - 1 - len(prepend_len(PRS)) - len(prepend_len(DSI))) */
    size_t used = 1 + (1 + sizeof dsi - 1) + (prs_len < 128 ? 1 + prs_len : SHA512_BLOCK);
    size_t zpad = used < SHA512_BLOCK ? SHA512_BLOCK - used : 0;
    crypto_hash_sha512_state st;

    if (bad_input(prs, prs_len) || bad_input(ci, ci_len) || bad_input(sid, sid_len) ||
        cpace_init() < 0)
        return -1;
    crypto_hash_sha512_init(&st);
    hash_lv(&st, dsi, sizeof dsi - 1);
    hash_lv(&st, prs, prs_len);
    hash_lv(&st, zeros, zpad);
    hash_lv(&st, ci, ci_len);
    hash_lv(&st, sid, sid_len);
    crypto_hash_sha512_final(&st, h);
    sodium_memzero(&st, sizeof st);   /* the state holds the password */
    return 0;
}

int rd_cpace_generator(uint8_t g[RD_CPACE_POINT], const void *prs, size_t prs_len,
                       const void *ci, size_t ci_len, const void *sid, size_t sid_len)
{
    uint8_t h[RD_CPACE_GENHASH];
    int rc = rd_cpace_generator_hash(h, prs, prs_len, ci, ci_len, sid, sid_len);
    if (rc == 0)
        crypto_core_ristretto255_from_hash(g, h);   /* RFC 9496 element derivation */
    sodium_memzero(h, sizeof h);
    return rc;
}

/* scalar_mult_vfy: out = scalar * decode(point). libsodium refuses non-canonical or invalid
 * encodings and an identity result; the explicit zero check (the identity encodes as 32
 * zero bytes) keeps that guarantee whatever the library version. */
static int mult_vfy(uint8_t out[RD_CPACE_POINT], const uint8_t scalar[RD_CPACE_SCALAR],
                    const uint8_t point[RD_CPACE_POINT])
{
    if (crypto_scalarmult_ristretto255(out, scalar, point) != 0 || sodium_is_zero(out, RD_CPACE_POINT)) {
        sodium_memzero(out, RD_CPACE_POINT);
        return -1;
    }
    return 0;
}

int rd_cpace_start(struct rd_cpace *c, const uint8_t g[RD_CPACE_POINT])
{
    if (cpace_init() < 0)
        return -1;
    crypto_core_ristretto255_scalar_random(c->scalar);   /* uniform in 1..order-1 */
    if (mult_vfy(c->share, c->scalar, g) < 0) {
        rd_cpace_wipe(c);
        return -1;
    }
    return 0;
}

int rd_cpace_start_with(struct rd_cpace *c, const uint8_t g[RD_CPACE_POINT],
                        const uint8_t scalar[RD_CPACE_SCALAR])
{
    /* Reduce first: libsodium's scalar_mult ignores bit 255, the draft's does not. */
    uint8_t wide[64] = { 0 };
    if (cpace_init() < 0)
        return -1;
    memcpy(wide, scalar, RD_CPACE_SCALAR);
    crypto_core_ristretto255_scalar_reduce(c->scalar, wide);
    sodium_memzero(wide, sizeof wide);
    if (sodium_is_zero(c->scalar, RD_CPACE_SCALAR) || mult_vfy(c->share, c->scalar, g) < 0) {
        rd_cpace_wipe(c);
        return -1;
    }
    return 0;
}

int rd_cpace_isk(const struct rd_cpace *c, const uint8_t peer_share[RD_CPACE_POINT], int initiator,
                 const void *ad_self, size_t ad_self_len, const void *ad_peer, size_t ad_peer_len,
                 const void *sid, size_t sid_len, uint8_t isk[RD_CPACE_ISK])
{
    uint8_t k[RD_CPACE_POINT];
    crypto_hash_sha512_state st;

    if (bad_input(ad_self, ad_self_len) || bad_input(ad_peer, ad_peer_len) ||
        bad_input(sid, sid_len) || cpace_init() < 0 || mult_vfy(k, c->scalar, peer_share) < 0)
        return -1;
    crypto_hash_sha512_init(&st);
    hash_lv(&st, dsi_isk, sizeof dsi_isk - 1);
    hash_lv(&st, sid, sid_len);
    hash_lv(&st, k, sizeof k);
    /* transcript_ir: the initiator's message first, whoever computes it */
    if (initiator) {
        hash_lv(&st, c->share, RD_CPACE_POINT);
        hash_lv(&st, ad_self, ad_self_len);
        hash_lv(&st, peer_share, RD_CPACE_POINT);
        hash_lv(&st, ad_peer, ad_peer_len);
    } else {
        hash_lv(&st, peer_share, RD_CPACE_POINT);
        hash_lv(&st, ad_peer, ad_peer_len);
        hash_lv(&st, c->share, RD_CPACE_POINT);
        hash_lv(&st, ad_self, ad_self_len);
    }
    crypto_hash_sha512_final(&st, isk);
    sodium_memzero(k, sizeof k);
    sodium_memzero(&st, sizeof st);
    return 0;
}

void rd_cpace_wipe(struct rd_cpace *c)
{
    sodium_memzero(c, sizeof *c);
}

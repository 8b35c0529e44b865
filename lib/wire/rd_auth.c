#include "wire/rd_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <string.h>

int rd_hkdf(const void *ikm, size_t ikm_len, const char *info, uint8_t *out, size_t out_len)
{
    static const char salt[] = "rdpipe v2";
    int ok = 0;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    if (!ctx)
        return -1;
    /* HKDF wants a non-empty secret; an empty key is refused earlier by the CLI anyway */
    static const uint8_t zero = 0;
    size_t n = out_len;
    if (EVP_PKEY_derive_init(ctx) > 0 && EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) > 0 &&
        EVP_PKEY_CTX_set1_hkdf_salt(ctx, (const unsigned char *)salt, sizeof salt - 1) > 0 &&
        EVP_PKEY_CTX_set1_hkdf_key(ctx, ikm_len ? ikm : &zero, ikm_len ? (int)ikm_len : 1) > 0 &&
        EVP_PKEY_CTX_add1_hkdf_info(ctx, (const unsigned char *)info, (int)strlen(info)) > 0 &&
        EVP_PKEY_derive(ctx, out, &n) > 0 && n == out_len)
        ok = 1;
    EVP_PKEY_CTX_free(ctx);
    return ok ? 0 : -1;
}

int rd_key_derive(struct rd_key *k, const void *secret, size_t len)
{
    return rd_hkdf(secret, len, "rdpipe v2 cpace prs", k->prs, sizeof k->prs);
}

void rd_key_wipe(struct rd_key *k)
{
    OPENSSL_cleanse(k, sizeof *k);
}

void rd_session_keys_wipe(struct rd_session_keys *k)
{
    OPENSSL_cleanse(k, sizeof *k);
}

void rd_pake_wipe(struct rd_pake *st)
{
    rd_cpace_wipe(&st->cpace);
}

int rd_random(void *out, size_t n)
{
    return RAND_bytes(out, (int)n) == 1 ? 0 : -1;
}

static const char AD_RECEIVER[] = "rdpipe receiver";   /* CPace initiator: sends its share first */
static const char AD_SENDER[] = "rdpipe sender";

/* The channel identifier: everything both sides agreed on before the shares, so a peer in
 * the middle that changes a version or a parameter makes the exchange fail. */
static size_t channel_id(const struct rd_hello *h, const struct rd_challenge *c, uint8_t *out)
{
    static const char label[] = "rdpipe v2";
    uint8_t params[RD_CHALLENGE_LEN];
    memcpy(out, label, sizeof label - 1);
    size_t n = sizeof label - 1;
    n += rd_hello_encode(h, out + n);
    rd_challenge_encode(c, params);
    memcpy(out + n, params, RD_CHALLENGE_PARAMS);   /* the agreed parameters and Nr, not Yr */
    return n + RD_CHALLENGE_PARAMS;
}

static void session_id(const struct rd_hello *h, const struct rd_challenge *c, uint8_t sid[2 * RD_NONCE_LEN])
{
    memcpy(sid, h->nonce, RD_NONCE_LEN);
    memcpy(sid + RD_NONCE_LEN, c->nonce, RD_NONCE_LEN);
}

static int generator(const struct rd_key *k, const struct rd_hello *h, const struct rd_challenge *c,
                     uint8_t g[RD_CPACE_POINT])
{
    uint8_t ci[16 + RD_HELLO_LEN + RD_CHALLENGE_LEN], sid[2 * RD_NONCE_LEN];
    size_t ci_len = channel_id(h, c, ci);
    session_id(h, c, sid);
    return rd_cpace_generator(g, k->prs, sizeof k->prs, ci, ci_len, sid, sizeof sid);
}

/* Every key of the session from CPace's ISK. */
static int session_keys(const uint8_t isk[RD_CPACE_ISK], struct rd_session_keys *out)
{
    if (rd_hkdf(isk, RD_CPACE_ISK, "rdpipe v2 hop tags", out->hop, sizeof out->hop) ||
        rd_hkdf(isk, RD_CPACE_ISK, "rdpipe v2 stream tags", out->stream, sizeof out->stream) ||
        rd_hkdf(isk, RD_CPACE_ISK, "rdpipe v2 join", out->join, sizeof out->join) ||
        rd_hkdf(isk, RD_CPACE_ISK, "rdpipe v2 sender confirms", out->confirm_s, sizeof out->confirm_s) ||
        rd_hkdf(isk, RD_CPACE_ISK, "rdpipe v2 receiver confirms", out->confirm_r, sizeof out->confirm_r)) {
        rd_session_keys_wipe(out);
        return -1;
    }
    return 0;
}

/* HMAC(key, label || HELLO || CHALLENGE || Ys [|| MACs]): each side's proof covers the whole
 * transcript, and the labels keep one side's proof from passing as the other's. */
static void confirm_mac(const uint8_t key[32], const char *label, const struct rd_hello *h,
                        const struct rd_challenge *c, const uint8_t share_s[RD_SHARE_LEN],
                        const uint8_t *mac_s, uint8_t out[RD_MAC_LEN])
{
    uint8_t t[32 + RD_HELLO_LEN + RD_CHALLENGE_LEN + RD_SHARE_LEN + RD_MAC_LEN];
    size_t n = strlen(label);
    memcpy(t, label, n);
    n += rd_hello_encode(h, t + n);
    n += rd_challenge_encode(c, t + n);
    memcpy(t + n, share_s, RD_SHARE_LEN);
    n += RD_SHARE_LEN;
    if (mac_s) {
        memcpy(t + n, mac_s, RD_MAC_LEN);
        n += RD_MAC_LEN;
    }
    unsigned int outlen = RD_MAC_LEN;
    HMAC(EVP_sha256(), key, 32, t, n, out, &outlen);
}

int rd_auth_receiver_start(struct rd_pake *st, const struct rd_key *k, const struct rd_hello *h,
                           struct rd_challenge *c)
{
    uint8_t g[RD_CPACE_POINT];
    if (generator(k, h, c, g) || rd_cpace_start(&st->cpace, g))
        return -1;
    memcpy(c->share, st->cpace.share, RD_SHARE_LEN);
    return 0;
}

int rd_auth_sender_prove(const struct rd_key *k, const struct rd_hello *h, const struct rd_challenge *c,
                         struct rd_proof *proof, struct rd_session_keys *out)
{
    uint8_t g[RD_CPACE_POINT], sid[2 * RD_NONCE_LEN], isk[RD_CPACE_ISK];
    struct rd_cpace me;
    session_id(h, c, sid);
    int rc = -1;
    if (generator(k, h, c, g) || rd_cpace_start(&me, g))
        goto wipe;
    if (rd_cpace_isk(&me, c->share, 0, AD_SENDER, sizeof AD_SENDER - 1, AD_RECEIVER,
                     sizeof AD_RECEIVER - 1, sid, sizeof sid, isk))
        goto wipe;
    if (session_keys(isk, out))
        goto wipe;
    memcpy(proof->share, me.share, RD_SHARE_LEN);
    confirm_mac(out->confirm_s, "rdpipe v2 sender proves key", h, c, proof->share, NULL, proof->mac);
    rc = 0;
wipe:
    rd_cpace_wipe(&me);
    OPENSSL_cleanse(isk, sizeof isk);
    return rc;
}

int rd_auth_receiver_check(struct rd_pake *st, const struct rd_hello *h, const struct rd_challenge *c,
                           const struct rd_proof *proof, struct rd_session_keys *out,
                           uint8_t mac[RD_MAC_LEN])
{
    uint8_t sid[2 * RD_NONCE_LEN], isk[RD_CPACE_ISK], want[RD_MAC_LEN];
    struct rd_session_keys keys;
    session_id(h, c, sid);
    int ok = 0;
    if (rd_cpace_isk(&st->cpace, proof->share, 1, AD_RECEIVER, sizeof AD_RECEIVER - 1, AD_SENDER,
                     sizeof AD_SENDER - 1, sid, sizeof sid, isk) == 0 &&
        session_keys(isk, &keys) == 0) {
        confirm_mac(keys.confirm_s, "rdpipe v2 sender proves key", h, c, proof->share, NULL, want);
        ok = CRYPTO_memcmp(want, proof->mac, RD_MAC_LEN) == 0;
        if (ok) {
            confirm_mac(keys.confirm_r, "rdpipe v2 receiver proves key", h, c, proof->share, proof->mac, mac);
            *out = keys;
        }
        rd_session_keys_wipe(&keys);
    }
    OPENSSL_cleanse(isk, sizeof isk);
    rd_pake_wipe(st);
    return ok;
}

int rd_auth_sender_check(const struct rd_session_keys *keys, const struct rd_hello *h,
                         const struct rd_challenge *c, const struct rd_proof *proof,
                         const uint8_t mac[RD_MAC_LEN])
{
    uint8_t want[RD_MAC_LEN];
    confirm_mac(keys->confirm_r, "rdpipe v2 receiver proves key", h, c, proof->share, proof->mac, want);
    return CRYPTO_memcmp(want, mac, RD_MAC_LEN) == 0;
}

void rd_auth_join_mac(const uint8_t join_key[32], uint32_t index, uint8_t out[RD_MAC_LEN])
{
    static const char label[] = "rdpipe v2 stripe";
    uint8_t msg[sizeof label - 1 + 4];
    memcpy(msg, label, sizeof label - 1);
    for (int i = 0; i < 4; i++)
        msg[sizeof label - 1 + i] = (uint8_t)(index >> (8 * i));
    unsigned int outlen = RD_MAC_LEN;
    HMAC(EVP_sha256(), join_key, 32, msg, sizeof msg, out, &outlen);
}

int rd_auth_join_check(const uint8_t join_key[32], uint32_t index, const uint8_t mac[RD_MAC_LEN])
{
    uint8_t want[RD_MAC_LEN];
    rd_auth_join_mac(join_key, index, want);
    return CRYPTO_memcmp(want, mac, RD_MAC_LEN) == 0;
}

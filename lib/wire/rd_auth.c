#include "wire/rd_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <string.h>

int rd_key_derive(struct rd_key *k, const void *secret, size_t len)
{
    static const char salt[] = "rdpipe";
    static const char info[] = "rdpipe v1 handshake mac";
    size_t outlen = sizeof k->mac_key;
    int ok = 0;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    if (!ctx)
        return -1;
    /* HKDF wants a non-empty secret; an empty key is refused earlier by the CLI anyway */
    static const uint8_t zero = 0;
    if (EVP_PKEY_derive_init(ctx) > 0 && EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) > 0 &&
        EVP_PKEY_CTX_set1_hkdf_salt(ctx, (const unsigned char *)salt, sizeof salt - 1) > 0 &&
        EVP_PKEY_CTX_set1_hkdf_key(ctx, len ? secret : &zero, len ? (int)len : 1) > 0 &&
        EVP_PKEY_CTX_add1_hkdf_info(ctx, (const unsigned char *)info, sizeof info - 1) > 0 &&
        EVP_PKEY_derive(ctx, k->mac_key, &outlen) > 0 && outlen == sizeof k->mac_key)
        ok = 1;
    EVP_PKEY_CTX_free(ctx);
    return ok ? 0 : -1;
}

void rd_key_wipe(struct rd_key *k)
{
    OPENSSL_cleanse(k, sizeof *k);
}

int rd_random(void *out, size_t n)
{
    return RAND_bytes(out, (int)n) == 1 ? 0 : -1;
}

/* HMAC(label || hello || challenge without its MAC) */
static void transcript_mac(const struct rd_key *k, const char *label, const struct rd_hello *h,
                           const struct rd_challenge *c, uint8_t out[RD_MAC_LEN])
{
    uint8_t t[64 + RD_HELLO_LEN + RD_CHALLENGE_LEN];
    size_t n = 0;
    size_t ll = strlen(label);
    memcpy(t, label, ll);
    n = ll;
    n += rd_hello_encode(h, t + n);
    struct rd_challenge params = *c;
    memset(params.mac, 0, sizeof params.mac);
    n += rd_challenge_encode(&params, t + n);
    unsigned int outlen = RD_MAC_LEN;
    HMAC(EVP_sha256(), k->mac_key, sizeof k->mac_key, t, n, out, &outlen);
}

void rd_auth_mac(const struct rd_key *k, enum rd_auth_role who, const struct rd_hello *h,
                 const struct rd_challenge *c, uint8_t out[RD_MAC_LEN])
{
    transcript_mac(k, who == RD_ROLE_RECEIVER ? "rdpipe v1 receiver proves key"
                                              : "rdpipe v1 sender proves key", h, c, out);
}

void rd_auth_join_key(const struct rd_key *k, const struct rd_hello *h, const struct rd_challenge *c,
                      uint8_t out[32])
{
    transcript_mac(k, "rdpipe v1 join key", h, c, out);
}

void rd_auth_join_mac(const uint8_t join_key[32], uint32_t index, uint8_t out[RD_MAC_LEN])
{
    static const char label[] = "rdpipe v1 stripe";
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

int rd_auth_check(const struct rd_key *k, enum rd_auth_role who, const struct rd_hello *h,
                  const struct rd_challenge *c, const uint8_t mac[RD_MAC_LEN])
{
    uint8_t want[RD_MAC_LEN];
    rd_auth_mac(k, who, h, c, want);
    return CRYPTO_memcmp(want, mac, RD_MAC_LEN) == 0;
}

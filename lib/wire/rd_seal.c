#include "wire/rd_seal.h"

#include "wire/rd_auth.h"
#include "wire/rd_ocb.h"
#include "wire/rd_proto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

/* One of the two is keyed: OCB from libgcrypt, the others from libcrypto. */
struct rd_sealer {
    EVP_CIPHER_CTX *ctx;   /* keyed once: the key lives in its schedule only */
    struct rd_ocb *ocb;
    int seal;
};

enum rd_cipher rd_cipher_of_flags(uint16_t flags)
{
    if (flags & RD_FLAG_AES_OCB)
        return RD_CIPHER_AES_256_OCB;
    return flags & RD_FLAG_AES_GCM ? RD_CIPHER_AES_256_GCM : RD_CIPHER_CHACHA20_POLY1305;
}

uint16_t rd_cipher_flags(enum rd_cipher c)
{
    return (uint16_t)(RD_FLAG_ENCRYPTED | (c == RD_CIPHER_AES_256_GCM   ? RD_FLAG_AES_GCM
                                           : c == RD_CIPHER_AES_256_OCB ? RD_FLAG_AES_OCB
                                                                        : 0));
}

const char *rd_cipher_name(enum rd_cipher c)
{
    switch (c) {
    case RD_CIPHER_AES_256_OCB: return "aes-256-ocb";
    case RD_CIPHER_AES_256_GCM: return "aes-256-gcm";
    default: return "chacha20-poly1305";
    }
}

enum rd_cipher rd_cipher_agreed(uint32_t caps)
{
    if (!(caps & RD_FLAG_AES_GCM))
        return RD_CIPHER_CHACHA20_POLY1305;
    return caps & RD_FLAG_AES_OCB ? RD_CIPHER_AES_256_OCB : RD_CIPHER_AES_256_GCM;
}

static int cpu_has_aes(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
#elif defined(__aarch64__)
    return 1;   /* ARMv8 servers have the crypto extensions */
#else
    return 0;
#endif
}

static uint32_t caps_of(int granting)
{
    const char *force = getenv("RDPIPE_CIPHER");
    int aes = cpu_has_aes(), ocb = (aes || granting) && rd_ocb_usable();
    if (force && *force) {
        aes = strcmp(force, "aes-256-gcm") == 0 || strcmp(force, "aes-256-ocb") == 0;
        ocb = strcmp(force, "aes-256-ocb") == 0 && rd_ocb_usable();
    }
    return RD_FLAG_ENCRYPTED | (aes ? RD_FLAG_AES_GCM : 0u) | (ocb ? RD_FLAG_AES_OCB : 0u);
}

uint32_t rd_cipher_offer(void)
{
    return caps_of(0);
}

uint32_t rd_cipher_grant(void)
{
    return caps_of(1);
}

struct rd_sealer *rd_sealer_new(const uint8_t stream_key[RD_KEY_LEN], enum rd_cipher c, int seal)
{
    uint8_t key[32];
    struct rd_sealer *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->seal = seal;
    int ok = rd_hkdf(stream_key, RD_KEY_LEN, "rdpipe v2 stream encryption", key, sizeof key) == 0;
    if (ok && c == RD_CIPHER_AES_256_OCB) {
        ok = (s->ocb = rd_ocb_new(key)) != NULL;
    } else if (ok) {
        const EVP_CIPHER *cipher = c == RD_CIPHER_AES_256_GCM ? EVP_aes_256_gcm() : EVP_chacha20_poly1305();
        ok = (s->ctx = EVP_CIPHER_CTX_new()) != NULL && EVP_CipherInit_ex(s->ctx, cipher, NULL, key, NULL, seal) == 1;
    }
    OPENSSL_cleanse(key, sizeof key);
    if (!ok) {
        rd_sealer_free(s);
        return NULL;
    }
    return s;
}

void rd_sealer_free(struct rd_sealer *s)
{
    if (!s)
        return;
    EVP_CIPHER_CTX_free(s->ctx);
    rd_ocb_free(s->ocb);
    OPENSSL_cleanse(s, sizeof *s);
    free(s);
}

/* The nonce (direction, three zero bytes, the sequence number) and the associated data in
 * one piece (the header around its tag field; libgcrypt's OCB takes it whole). */
#define AD_LEN (RD_FRAME_HDR - RD_TAG_LEN)
static void nonce_and_ad(enum rd_tag_dir dir, const uint8_t *hdr, uint8_t nonce[12], uint8_t ad[AD_LEN])
{
    memset(nonce, 0, 12);
    nonce[0] = (uint8_t)dir;
    memcpy(nonce + 4, hdr + RD_HDR_SEQ, 8);
    memcpy(ad, hdr, RD_HDR_TAG);
    memcpy(ad + RD_HDR_TAG, hdr + RD_HDR_TAG + RD_TAG_LEN, RD_FRAME_HDR - RD_HDR_TAG - RD_TAG_LEN);
}

static int begin(struct rd_sealer *s, enum rd_tag_dir dir, const uint8_t *hdr)
{
    uint8_t nonce[12], ad[AD_LEN];
    int outl;
    nonce_and_ad(dir, hdr, nonce, ad);
    return EVP_CipherInit_ex(s->ctx, NULL, NULL, NULL, nonce, s->seal) == 1 &&
                   EVP_CipherUpdate(s->ctx, NULL, &outl, ad, AD_LEN) == 1
               ? 0
               : -1;
}

static int crypt_in_place(struct rd_sealer *s, uint8_t *p, size_t n)
{
    while (n) {   /* EVP lengths are int */
        int k = n > (1u << 30) ? 1 << 30 : (int)n, outl;
        if (EVP_CipherUpdate(s->ctx, p, &outl, p, k) != 1 || outl != k)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int rd_seal_payload(struct rd_sealer *s, enum rd_tag_dir dir, uint8_t *hdr, uint8_t *p, size_t n)
{
    uint8_t none[16];
    int outl;
    if (s->ocb) {
        uint8_t nonce[12], ad[AD_LEN];
        nonce_and_ad(dir, hdr, nonce, ad);
        return s->seal ? rd_ocb_seal(s->ocb, nonce, ad, sizeof ad, p, n, hdr + RD_HDR_TAG) : -1;
    }
    if (!s->seal || begin(s, dir, hdr) || crypt_in_place(s, p, n) ||
        EVP_CipherFinal_ex(s->ctx, none, &outl) != 1 ||
        EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_AEAD_GET_TAG, RD_TAG_LEN, hdr + RD_HDR_TAG) != 1)
        return -1;
    return 0;
}

int rd_open_payload(struct rd_sealer *s, enum rd_tag_dir dir, const uint8_t *hdr, uint8_t *p, size_t n)
{
    uint8_t none[16], tag[RD_TAG_LEN];
    int outl;
    memcpy(tag, hdr + RD_HDR_TAG, sizeof tag);
    if (s->ocb) {
        uint8_t nonce[12], ad[AD_LEN];
        nonce_and_ad(dir, hdr, nonce, ad);
        return s->seal ? -1 : rd_ocb_open(s->ocb, nonce, ad, sizeof ad, p, n, tag);
    }
    if (s->seal || begin(s, dir, hdr) || crypt_in_place(s, p, n) ||
        EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_AEAD_SET_TAG, RD_TAG_LEN, tag) != 1)
        return -1;
    return EVP_CipherFinal_ex(s->ctx, none, &outl) == 1 ? 0 : 1;
}

#include "wire/rd_tag.h"

#include "wire/rd_proto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

struct rd_tagger {
    EVP_CIPHER_CTX *ctx;   /* keyed once: the key lives in its schedule only */
};

struct rd_tagger *rd_tagger_new(const uint8_t key[RD_KEY_LEN])
{
    struct rd_tagger *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ctx = EVP_CIPHER_CTX_new();
    /* the key schedule once; each frame then sets only its nonce */
    if (!t->ctx || EVP_EncryptInit_ex(t->ctx, EVP_chacha20_poly1305(), NULL, key, NULL) != 1) {
        rd_tagger_free(t);
        return NULL;
    }
    return t;
}

void rd_tagger_free(struct rd_tagger *t)
{
    if (!t)
        return;
    EVP_CIPHER_CTX_free(t->ctx);
    OPENSSL_cleanse(t, sizeof *t);
    free(t);
}

int rd_tag_begin(struct rd_tagger *t, enum rd_tag_dir dir, const uint8_t *hdr)
{
    uint8_t nonce[12];
    int outl;
    nonce[0] = (uint8_t)dir;
    nonce[1] = nonce[2] = nonce[3] = 0;
    memcpy(nonce + 4, hdr + RD_HDR_SEQ, 8);   /* little endian on the wire already */
    if (EVP_EncryptInit_ex(t->ctx, NULL, NULL, NULL, nonce) != 1)   /* the key stays; a new nonce */
        return -1;
    /* the header around the tag field: magic, version, type, flags, length, seq; extension */
    if (EVP_EncryptUpdate(t->ctx, NULL, &outl, hdr, RD_HDR_TAG) != 1 ||
        EVP_EncryptUpdate(t->ctx, NULL, &outl, hdr + RD_HDR_TAG + RD_TAG_LEN,
                          RD_FRAME_HDR - RD_HDR_TAG - RD_TAG_LEN) != 1)
        return -1;
    return 0;
}

int rd_tag_update(struct rd_tagger *t, const uint8_t *p, size_t n)
{
    int outl;
    while (n) {   /* EVP lengths are int */
        int k = n > (1u << 30) ? 1 << 30 : (int)n;
        if (EVP_EncryptUpdate(t->ctx, NULL, &outl, p, k) != 1)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int rd_tag_finish(struct rd_tagger *t, uint8_t tag[RD_TAG_LEN])
{
    uint8_t none[16];
    int outl;
    if (EVP_EncryptFinal_ex(t->ctx, none, &outl) != 1 ||
        EVP_CIPHER_CTX_ctrl(t->ctx, EVP_CTRL_AEAD_GET_TAG, RD_TAG_LEN, tag) != 1)
        return -1;
    return 0;
}

int rd_tag_compute(struct rd_tagger *t, enum rd_tag_dir dir, const uint8_t *hdr, const uint8_t *p,
                   size_t n, uint8_t tag[RD_TAG_LEN])
{
    if (rd_tag_begin(t, dir, hdr) || rd_tag_update(t, p, n))
        return -1;
    return rd_tag_finish(t, tag);
}

int rd_tag_equal(const uint8_t a[RD_TAG_LEN], const uint8_t b[RD_TAG_LEN])
{
    return CRYPTO_memcmp(a, b, RD_TAG_LEN) == 0;
}

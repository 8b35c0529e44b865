#include "wire/rd_ocb.h"

#include <gcrypt.h>
#include <pthread.h>
#include <stdlib.h>

struct rd_ocb {
    gcry_cipher_hd_t h;   /* keyed once: the key lives in its schedule only */
};

static int usable;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* libgcrypt must be initialised once per process before any use. We keep no secrets in its
 * secure memory (the keys sit in cipher handles like libcrypto's), so none is set up: that
 * needs privileges and prints warnings without them. */
static void init_once(void)
{
    if (!gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P)) {
        if (!gcry_check_version(GCRYPT_VERSION))
            return;   /* older than the headers we were built with */
        gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
        gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
    }
    gcry_cipher_hd_t h;
    if (gcry_cipher_open(&h, GCRY_CIPHER_AES256, GCRY_CIPHER_MODE_OCB, 0) == 0) {
        gcry_cipher_close(h);
        usable = 1;
    }
}

int rd_ocb_usable(void)
{
    pthread_once(&once, init_once);
    return usable;
}

const char *rd_ocb_library_version(void)
{
    return rd_ocb_usable() ? gcry_check_version(NULL) : NULL;
}

struct rd_ocb *rd_ocb_new(const uint8_t key[32])
{
    if (!rd_ocb_usable())
        return NULL;
    struct rd_ocb *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    if (gcry_cipher_open(&o->h, GCRY_CIPHER_AES256, GCRY_CIPHER_MODE_OCB, 0) != 0) {
        free(o);
        return NULL;
    }
    if (gcry_cipher_setkey(o->h, key, 32) != 0) {
        rd_ocb_free(o);
        return NULL;
    }
    return o;
}

void rd_ocb_free(struct rd_ocb *o)
{
    if (!o)
        return;
    gcry_cipher_close(o->h);   /* wipes the key schedule */
    free(o);
}

/* The nonce and the associated data; the next call is the last data call (gcry_cipher_final). */
static int begin(struct rd_ocb *o, const uint8_t *nonce, const uint8_t *ad, size_t adlen)
{
    return gcry_cipher_setiv(o->h, nonce, RD_OCB_NONCE_LEN) == 0 && gcry_cipher_authenticate(o->h, ad, adlen) == 0 &&
                   gcry_cipher_final(o->h) == 0
               ? 0
               : -1;
}

int rd_ocb_seal(struct rd_ocb *o, const uint8_t nonce[RD_OCB_NONCE_LEN], const uint8_t *ad, size_t adlen,
                uint8_t *p, size_t n, uint8_t tag[RD_OCB_TAG_LEN])
{
    if (begin(o, nonce, ad, adlen) || gcry_cipher_encrypt(o->h, p, n, NULL, 0) != 0 ||
        gcry_cipher_gettag(o->h, tag, RD_OCB_TAG_LEN) != 0)
        return -1;
    return 0;
}

int rd_ocb_open(struct rd_ocb *o, const uint8_t nonce[RD_OCB_NONCE_LEN], const uint8_t *ad, size_t adlen,
                uint8_t *p, size_t n, const uint8_t tag[RD_OCB_TAG_LEN])
{
    if (begin(o, nonce, ad, adlen) || gcry_cipher_decrypt(o->h, p, n, NULL, 0) != 0)
        return -1;
    gcry_error_t e = gcry_cipher_checktag(o->h, tag, RD_OCB_TAG_LEN);   /* constant time */
    if (e == 0)
        return 0;
    return gcry_err_code(e) == GPG_ERR_CHECKSUM ? 1 : -1;
}

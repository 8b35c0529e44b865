/* test_seal.c - --encrypt's payload encryption (wire/rd_seal.c): AES-256-OCB (libgcrypt),
 * AES-256-GCM and ChaCha20-Poly1305 in place, under HKDF(stream key, "rdpipe v2 stream encryption"), the nonce
 * = direction byte, three zero bytes, the header's 8-byte seq, the header without its tag field
 * as associated data, the AEAD's tag in the header.
 *
 * The construction is recomputed here with libcrypto's one-shot AEAD calls and compared byte
 * for byte (for OCB that is a second implementation: libcrypto's against libgcrypt's); every
 * header field, payload bit, direction, key and cipher must count; and the
 * last case prints GB/s per core (informational, never asserted; that each timed seal and
 * open did what it should, and a 1 MiB round trip after them, are asserted). */
#include "check.h"

#include "wire/rd_auth.h"
#include "wire/rd_proto.h"
#include "wire/rd_seal.h"

#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NCIPHERS 3
static const enum rd_cipher ciphers[NCIPHERS] = { RD_CIPHER_AES_256_OCB, RD_CIPHER_AES_256_GCM,
                                                  RD_CIPHER_CHACHA20_POLY1305 };
static uint8_t key_a[RD_KEY_LEN], key_b[RD_KEY_LEN];

static uint64_t rng = 0x2545f4914f6cdd1dull;
static void fill_random(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        p[i] = (uint8_t)rng;
    }
}

/* a sealed DATA frame of n payload bytes in buf (RD_FRAME_HDR + n) */
static void make_frame(uint8_t *buf, enum rd_cipher c, size_t n, uint64_t seq)
{
    fill_random(buf + RD_FRAME_HDR, n);
    rd_frame_seal(buf, RD_DATA, rd_cipher_flags(c), (uint32_t)n, seq);
}

/* the same encryption, built from the description in rd_seal.h with one-shot calls */
static int reference(enum rd_cipher c, enum rd_tag_dir dir, const uint8_t *key, const uint8_t *hdr,
                     const uint8_t *in, size_t n, uint8_t *out, uint8_t tag[RD_TAG_LEN])
{
    uint8_t k[32], nonce[12] = { (uint8_t)dir }, aad[RD_FRAME_HDR - RD_TAG_LEN];
    if (rd_hkdf(key, RD_KEY_LEN, "rdpipe v2 stream encryption", k, sizeof k))
        return -1;
    memcpy(nonce + 4, hdr + RD_HDR_SEQ, 8);
    memcpy(aad, hdr, RD_HDR_TAG);
    memcpy(aad + RD_HDR_TAG, hdr + RD_HDR_TAG + RD_TAG_LEN, RD_FRAME_HDR - RD_HDR_TAG - RD_TAG_LEN);
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    const EVP_CIPHER *e = c == RD_CIPHER_AES_256_GCM   ? EVP_aes_256_gcm()
                          : c == RD_CIPHER_AES_256_OCB ? EVP_aes_256_ocb()
                                                       : EVP_chacha20_poly1305();
    int outl, done = 0, ok = x && EVP_EncryptInit_ex(x, e, NULL, NULL, NULL) == 1 &&
                   EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_IVLEN, sizeof nonce, NULL) == 1 &&
                   EVP_EncryptInit_ex(x, NULL, NULL, k, nonce) == 1 &&
                   EVP_EncryptUpdate(x, NULL, &outl, aad, (int)sizeof aad) == 1 &&
                   (n == 0 || EVP_EncryptUpdate(x, out, &done, in, (int)n) == 1) &&   /* OCB keeps back */
                   EVP_EncryptFinal_ex(x, out + done, &outl) == 1 && (size_t)(done + outl) == n && /* a part block */
                   EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, RD_TAG_LEN, tag) == 1;
    EVP_CIPHER_CTX_free(x);
    return ok ? 0 : -1;
}

static void t_round_trip_and_reference(void)
{
    static const size_t sizes[] = { 0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 4095, 4096, 4097,
                                    (1u << 20) - 1, 1u << 20, (1u << 20) + 3, 1044480 };
    for (unsigned ci = 0; ci < NCIPHERS; ci++) {
        struct rd_sealer *s = rd_sealer_new(key_a, ciphers[ci], 1), *o = rd_sealer_new(key_a, ciphers[ci], 0);
        CHECK_OR(s && o, { rd_sealer_free(s); rd_sealer_free(o); return; });
        for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t n = sizes[i];
            uint8_t *buf = malloc(RD_FRAME_HDR + n), *plain = malloc(n + 1), *want = malloc(n + 16);
            uint8_t tag[RD_TAG_LEN];
            if (!buf || !plain || !want) {   /* (a break inside CHECK_OR would leave its do-while only) */
                CHECK(0);
                free(buf);
                free(plain);
                free(want);
                break;
            }
            make_frame(buf, ciphers[ci], n, 1000 + i);
            memcpy(plain, buf + RD_FRAME_HDR, n);
            CHECK(rd_seal_payload(s, RD_TAG_DOWN, buf, buf + RD_FRAME_HDR, n) == 0);
            CHECK(reference(ciphers[ci], RD_TAG_DOWN, key_a, buf, plain, n, want, tag) == 0);
            if (memcmp(buf + RD_FRAME_HDR, want, n) || memcmp(buf + RD_HDR_TAG, tag, RD_TAG_LEN))
                check_fail_at(__FILE__, __LINE__, "%s, %zu bytes: differs from the reference construction", rd_cipher_name(ciphers[ci]), n);
            if (n >= 16 && memcmp(buf + RD_FRAME_HDR, plain, n) == 0)
                check_fail_at(__FILE__, __LINE__, "%s, %zu bytes: the payload was not encrypted", rd_cipher_name(ciphers[ci]), n);
            CHECK(rd_open_payload(o, RD_TAG_DOWN, buf, buf + RD_FRAME_HDR, n) == 0);
            if (memcmp(buf + RD_FRAME_HDR, plain, n))
                check_fail_at(__FILE__, __LINE__, "%s, %zu bytes: open did not restore the plaintext", rd_cipher_name(ciphers[ci]), n);
            free(buf);
            free(plain);
            free(want);
        }
        rd_sealer_free(s);
        rd_sealer_free(o);
    }
}

/* seal a 100-byte frame, change one thing, open: must fail (1) */
static int open_after(enum rd_cipher c, int change, unsigned at)
{
    uint8_t buf[RD_FRAME_HDR + 100];
    make_frame(buf, c, 100, 42);
    struct rd_sealer *s = rd_sealer_new(key_a, c, 1);
    enum rd_cipher other = (enum rd_cipher)((c + change - 3) % RD_CIPHERS);   /* 4, 5: the other two */
    struct rd_sealer *o = rd_sealer_new(change == 3 ? key_b : key_a, change >= 4 ? other : c, 0);
    int rc = -2;
    if (s && o && rd_seal_payload(s, RD_TAG_DOWN, buf, buf + RD_FRAME_HDR, 100) == 0) {
        if (change == 1)
            buf[at] ^= 0x01;   /* a header or payload bit (the tag's bytes included) */
        rc = rd_open_payload(o, change == 2 ? RD_TAG_UP : RD_TAG_DOWN, buf, buf + RD_FRAME_HDR, 100);
    }
    rd_sealer_free(s);
    rd_sealer_free(o);
    return rc;
}

static void t_everything_counts(void)
{
    for (unsigned ci = 0; ci < NCIPHERS; ci++) {
        enum rd_cipher c = ciphers[ci];
        CHECK(open_after(c, 0, 0) == 0);   /* control: unchanged, it opens */
        for (unsigned at = 0; at < RD_FRAME_HDR + 100; at++)
            if (open_after(c, 1, at) != 1)
                check_fail_at(__FILE__, __LINE__, "%s: flipping byte %u still opens", rd_cipher_name(c), at);
        CHECK(open_after(c, 2, 0) == 1);   /* another direction */
        CHECK(open_after(c, 3, 0) == 1);   /* another key */
        CHECK(open_after(c, 4, 0) == 1);   /* another cipher */
        CHECK(open_after(c, 5, 0) == 1);   /* the third */
    }
}

/* the flags name the cipher; only DATA frames may carry them, and a cipher only with ENCRYPTED */
static void t_flags(void)
{
    CHECK_EQ_U(rd_cipher_of_flags(rd_cipher_flags(RD_CIPHER_AES_256_GCM)), RD_CIPHER_AES_256_GCM);
    CHECK_EQ_U(rd_cipher_of_flags(rd_cipher_flags(RD_CIPHER_CHACHA20_POLY1305)), RD_CIPHER_CHACHA20_POLY1305);
    CHECK_EQ_U(rd_cipher_of_flags(rd_cipher_flags(RD_CIPHER_AES_256_OCB)), RD_CIPHER_AES_256_OCB);
    CHECK_EQ_U(rd_cipher_flags(RD_CIPHER_AES_256_OCB), RD_FLAG_ENCRYPTED | RD_FLAG_AES_OCB);
    uint8_t buf[RD_FRAME_HDR + 8];
    struct rd_frame f;
    rd_frame_seal(buf, RD_DATA, RD_FLAG_ENCRYPTED | RD_FLAG_AES_GCM, 8, 0);
    CHECK_EQ_U(rd_frame_parse(buf, sizeof buf, 1 << 20, &f), RD_P_OK);
    rd_frame_seal(buf, RD_DATA, RD_FLAG_ENCRYPTED | RD_FLAG_AES_OCB, 8, 0);
    CHECK_EQ_U(rd_frame_parse(buf, sizeof buf, 1 << 20, &f), RD_P_OK);
    rd_frame_seal(buf, RD_DATA, RD_FLAG_AES_GCM, 8, 0);
    CHECK_EQ_I(rd_frame_parse(buf, sizeof buf, 1 << 20, &f), RD_P_FLAGS);
    rd_frame_seal(buf, RD_DATA, RD_FLAG_AES_OCB, 8, 0);
    CHECK_EQ_I(rd_frame_parse(buf, sizeof buf, 1 << 20, &f), RD_P_FLAGS);
    rd_frame_seal(buf, RD_DATA, RD_FLAG_ENCRYPTED | RD_FLAG_AES_GCM | RD_FLAG_AES_OCB, 8, 0);
    CHECK_EQ_I(rd_frame_parse(buf, sizeof buf, 1 << 20, &f), RD_P_FLAGS);   /* two ciphers at once */
    rd_frame_seal(buf, RD_END, RD_FLAG_ENCRYPTED, 8, 0);
    CHECK_EQ_I(rd_frame_parse(buf, sizeof buf, 1 << 20, &f), RD_P_FLAGS);
    rd_frame_seal(buf, RD_DATA, RD_FLAG_ENCRYPTED | RD_FLAG_COMPRESSED, 8, 0);
    rd_frame_set_compressed(buf, 8, 100);   /* compressed, then encrypted */
    CHECK_EQ_I(rd_frame_parse(buf, sizeof buf, 1 << 20, &f), RD_P_OK);
}

/* what each end offers, and what the sender picks from what both offered */
static void t_offer_and_agree(void)
{
    CHECK_EQ_U(rd_cipher_agreed(RD_FLAG_ENCRYPTED), RD_CIPHER_CHACHA20_POLY1305);
    CHECK_EQ_U(rd_cipher_agreed(RD_FLAG_ENCRYPTED | RD_FLAG_AES_GCM), RD_CIPHER_AES_256_GCM);
    CHECK_EQ_U(rd_cipher_agreed(RD_FLAG_ENCRYPTED | RD_FLAG_AES_GCM | RD_FLAG_AES_OCB), RD_CIPHER_AES_256_OCB);
    /* OCB kept by both, AES by one only (its CPU lacks it): not OCB in software */
    CHECK_EQ_U(rd_cipher_agreed(RD_FLAG_ENCRYPTED | RD_FLAG_AES_OCB), RD_CIPHER_CHACHA20_POLY1305);
    static const struct {
        const char *env;
        uint32_t caps;
    } forced[] = {
        { "aes-256-ocb", RD_FLAG_ENCRYPTED | RD_FLAG_AES_GCM | RD_FLAG_AES_OCB },
        { "aes-256-gcm", RD_FLAG_ENCRYPTED | RD_FLAG_AES_GCM },
        { "chacha20-poly1305", RD_FLAG_ENCRYPTED },
    };
    for (unsigned i = 0; i < sizeof forced / sizeof forced[0]; i++) {
        setenv("RDPIPE_CIPHER", forced[i].env, 1);
        CHECK_EQ_U(rd_cipher_offer(), forced[i].caps);
        CHECK(strcmp(rd_cipher_name(rd_cipher_agreed(rd_cipher_offer())), forced[i].env) == 0);
    }
    unsetenv("RDPIPE_CIPHER");
    printf("info this end offers %s\n", rd_cipher_name(rd_cipher_agreed(rd_cipher_offer())));
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* informational: GB/s on one core, 1 MiB chunks, best of 3. Not the speed but what was timed
 * is checked: every seal succeeds; of the 64 opens of the last sealed frame the first succeeds
 * and none after it (of what the opens before left in place: a tag mismatch, or with a
 * stream cipher, whose failed open still XORs, the ciphertext again) gets -1 from libcrypto;
 * and, untimed, a 1 MiB payload sealed and opened comes back as it was. */
static void t_speed(void)
{
    size_t n = 1u << 20;
    uint8_t *buf = malloc(RD_FRAME_HDR + n), *plain = malloc(n);
    CHECK_OR(buf && plain, { free(buf); free(plain); return; });
    for (unsigned ci = 0; ci < NCIPHERS; ci++) {
        struct rd_sealer *s = rd_sealer_new(key_a, ciphers[ci], 1), *o = rd_sealer_new(key_a, ciphers[ci], 0);
        CHECK(s && o);
        double best_s = 1e9, best_o = 1e9;
        int seal_bad = 0, open_bad = 0;
        for (int r = 0; r < 3 && s && o; r++) {
            double t0 = seconds();
            for (uint64_t i = 0; i < 64; i++) {
                make_frame(buf, ciphers[ci], 0, i);   /* header only: the payload stays */
                rd_frame_seal(buf, RD_DATA, rd_cipher_flags(ciphers[ci]), (uint32_t)n, i);
                seal_bad += rd_seal_payload(s, RD_TAG_DOWN, buf, buf + RD_FRAME_HDR, n) != 0;
            }
            double t1 = seconds();
            for (uint64_t i = 0; i < 64; i++) {   /* fails after the first: same work */
                int rc = rd_open_payload(o, RD_TAG_DOWN, buf, buf + RD_FRAME_HDR, n);
                open_bad += i == 0 ? rc != 0 : rc != 0 && rc != 1;
            }
            double t2 = seconds();
            best_s = t1 - t0 < best_s ? t1 - t0 : best_s;
            best_o = t2 - t1 < best_o ? t2 - t1 : best_o;
        }
        if (seal_bad || open_bad)
            check_fail_at(__FILE__, __LINE__, "%s: %d of 192 timed seals failed, %d of 192 timed opens were "
                          "not 0 (the first) or 0/1 (after it)", rd_cipher_name(ciphers[ci]), seal_bad, open_bad);
        if (s && o) {
            make_frame(buf, ciphers[ci], n, 4242);
            memcpy(plain, buf + RD_FRAME_HDR, n);
            CHECK_EQ_I(rd_seal_payload(s, RD_TAG_DOWN, buf, buf + RD_FRAME_HDR, n), 0);
            CHECK_MEM_NE(buf + RD_FRAME_HDR, plain, n);
            CHECK_EQ_I(rd_open_payload(o, RD_TAG_DOWN, buf, buf + RD_FRAME_HDR, n), 0);
            CHECK_MEM_EQ(buf + RD_FRAME_HDR, plain, n);
        }
        printf("info %s: encrypt %.2f GB/s, decrypt %.2f GB/s per core (1 MiB chunks)\n",
               rd_cipher_name(ciphers[ci]), 64.0 * n / best_s / 1e9, 64.0 * n / best_o / 1e9);
        rd_sealer_free(s);
        rd_sealer_free(o);
    }
    free(buf);
    free(plain);
}

int main(void)
{
    for (unsigned i = 0; i < RD_KEY_LEN; i++) {
        key_a[i] = (uint8_t)(0x40 + i);
        key_b[i] = (uint8_t)(0x41 + i);
    }
    RUN(t_round_trip_and_reference);
    RUN(t_everything_counts);
    RUN(t_flags);
    RUN(t_offer_and_agree);
    RUN(t_speed);
    return check_summary();
}

/* fuzz_codec.c - the chunk codecs a receiver runs on a peer's payload: zstd decompression
 * (wire/rd_compress.h) and AEAD decryption (wire/rd_seal.h), fed arbitrary bytes.
 *
 * Input: 2 bytes of raw length (the header's claim, up to 64 KiB), then the payload. The
 * decompressor writes into a buffer of exactly that length (ASan catches a byte beyond it)
 * and succeeds only if the payload is one zstd frame of exactly that length: what it gives
 * must compress and decompress back to itself. The payload opened as ciphertext under a fixed
 * key must fail (the fuzzer cannot forge a tag) unless it is what sealing gives, and opening
 * never touches more than the payload.
 */
#include "wire/rd_compress.h"
#include "wire/rd_proto.h"
#include "wire/rd_seal.h"

#include <stdlib.h>
#include <string.h>

#include "fz_check.h"

static const uint8_t fuzz_key[RD_KEY_LEN] = "fuzz_codec: a fixed stream key.";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct rd_decompressor *dec;
    static struct rd_compressor *comp;
    static struct rd_sealer *opener[RD_CIPHERS];   /* by enum rd_cipher */
    if (!dec) {
        dec = rd_decompressor_new();
        comp = rd_compressor_new(1u << 16);
        CHECK(dec && comp);
        for (int c = 0; c < RD_CIPHERS; c++)
            CHECK((opener[c] = rd_sealer_new(fuzz_key, (enum rd_cipher)c, 0)) != NULL);
    }
    if (size < 2)
        return 0;
    size_t raw = (size_t)data[0] | (size_t)data[1] << 8;
    const uint8_t *p = data + 2;
    size_t n = size - 2;

    uint8_t *out = malloc(raw ? raw : 1);
    CHECK(out);
    if (raw && rd_decompress_chunk(dec, p, n, out, raw) == 0) {
        uint8_t *again = malloc(raw), *back = malloc(raw);
        CHECK(again && back);
        memcpy(again, out, raw);
        long z = rd_compress_chunk(comp, 1, again, raw);
        CHECK(z > 0 && (size_t)z <= raw);
        if ((size_t)z < raw)
            CHECK(rd_decompress_chunk(dec, again, (size_t)z, back, raw) == 0 && memcmp(back, out, raw) == 0);
        free(again);
        free(back);
    }
    free(out);

    /* the payload as the ciphertext of DATA frame 0 */
    uint8_t *frame = malloc(RD_FRAME_HDR + n + 1);
    CHECK(frame);
    for (int c = 0; c < RD_CIPHERS; c++) {
        rd_frame_seal(frame, RD_DATA, rd_cipher_flags((enum rd_cipher)c), (uint32_t)n, 0);
        memcpy(frame + RD_FRAME_HDR, p, n);
        if (n >= RD_TAG_LEN)   /* the input's first 16 payload bytes as the claimed tag */
            memcpy(frame + RD_HDR_TAG, p, RD_TAG_LEN);
        CHECK(rd_open_payload(opener[c], RD_TAG_DOWN, frame, frame + RD_FRAME_HDR, n) == 1);
    }
    free(frame);
    return 0;
}

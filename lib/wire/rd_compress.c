#include "wire/rd_compress.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

struct rd_compressor {
    ZSTD_CCtx *cctx;
    size_t cap;
    uint8_t *out;
};

struct rd_decompressor {
    ZSTD_DCtx *dctx;
};

int rd_compress_parse(const char *arg, int *level)
{
    *level = 0;
    if (!arg || strcmp(arg, "auto") == 0)
        return 0;
    char *end;
    long lv = strtol(arg, &end, 10);
    if (end == arg || *end || lv < RD_COMPRESS_MIN_LEVEL || lv > RD_COMPRESS_MAX_LEVEL || lv == 0)
        return -1;
    *level = (int)lv;
    return 0;
}

struct rd_compressor *rd_compressor_new(uint32_t chunk_size)
{
    struct rd_compressor *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cap = ZSTD_compressBound(chunk_size);
    c->cctx = ZSTD_createCCtx();
    c->out = malloc(c->cap);
    /* no checksum (the frame's tag covers the bytes), no content size beyond the header's */
    if (!c->cctx || !c->out || ZSTD_isError(ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_checksumFlag, 0))) {
        rd_compressor_free(c);
        return NULL;
    }
    return c;
}

void rd_compressor_free(struct rd_compressor *c)
{
    if (!c)
        return;
    ZSTD_freeCCtx(c->cctx);
    free(c->out);
    free(c);
}

long rd_compress_chunk(struct rd_compressor *c, int level, uint8_t *p, size_t n)
{
    if (n == 0)
        return 0;
    if (ZSTD_isError(ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_compressionLevel, level)))
        return -1;
    size_t z = ZSTD_compress2(c->cctx, c->out, c->cap, p, n);
    if (ZSTD_isError(z))
        return -1;
    if (z > n - n / 32)
        return (long)n;   /* not worth it: raw */
    memcpy(p, c->out, z);
    return (long)z;
}

struct rd_decompressor *rd_decompressor_new(void)
{
    struct rd_decompressor *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->dctx = ZSTD_createDCtx();
    if (!d->dctx) {
        free(d);
        return NULL;
    }
    return d;
}

void rd_decompressor_free(struct rd_decompressor *d)
{
    if (!d)
        return;
    ZSTD_freeDCtx(d->dctx);
    free(d);
}

int rd_decompress_chunk(struct rd_decompressor *d, const uint8_t *in, size_t n, uint8_t *out, size_t raw)
{
    /* exactly one frame, and it says the size the header said (the sender always writes it) */
    if (ZSTD_findFrameCompressedSize(in, n) != n || ZSTD_getFrameContentSize(in, n) != raw)
        return -1;
    size_t got = ZSTD_decompressDCtx(d->dctx, out, raw, in, n);
    return !ZSTD_isError(got) && got == raw ? 0 : -1;
}

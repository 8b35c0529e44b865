/* rd_compress.h - --compress: a DATA chunk compressed on its own as one zstd frame.
 *
 * Each chunk is independent (no dictionary, no history across chunks), so lanes compress and
 * decompress chunks in any order and a damaged chunk costs only itself. A chunk that does not
 * shrink by at least 1/32 goes raw (no COMPRESSED flag), so incompressible data costs the
 * attempt and never the receiver. The receiver decompresses into a buffer of exactly the raw
 * length the header names, which the frame parser bounded by the chunk size: a frame that
 * claims more, or decompresses to anything but that length, is refused, and nothing is
 * allocated from what a peer claims.
 */
#ifndef RD_COMPRESS_H
#define RD_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#define RD_COMPRESS_MIN_LEVEL (-7)   /* zstd's fast levels */
#define RD_COMPRESS_MAX_LEVEL 19

/* --compress's value, wherever it is read (rdsend/rdrecv, rdpipe/rdcp, an agent's seg line):
 * "auto" (or NULL) gives *level 0, else a zstd level from RD_COMPRESS_MIN_LEVEL to
 * RD_COMPRESS_MAX_LEVEL, not 0. Returns 0, or -1 if arg is neither. */
int rd_compress_parse(const char *arg, int *level);

/* One thread's compression state (not thread-safe): a zstd context and room for one
 * compressed chunk of up to chunk_size bytes. */
struct rd_compressor;
struct rd_compressor *rd_compressor_new(uint32_t chunk_size);
void rd_compressor_free(struct rd_compressor *c);
/* Compress p[0..n) at level (n <= chunk_size). If it shrinks enough, p then holds the zstd
 * frame and its length is returned; else p is unchanged and n is returned (send it raw).
 * -1 if zstd failed. */
long rd_compress_chunk(struct rd_compressor *c, int level, uint8_t *p, size_t n);

/* One thread's decompression state. */
struct rd_decompressor;
struct rd_decompressor *rd_decompressor_new(void);
void rd_decompressor_free(struct rd_decompressor *d);
/* Decompress the zstd frame in[0..n) into out[0..raw). 0 if it is exactly one frame of
 * exactly raw bytes; -1 otherwise (corrupt, truncated, longer or shorter than it said). */
int rd_decompress_chunk(struct rd_decompressor *d, const uint8_t *in, size_t n, uint8_t *out, size_t raw);

#endif

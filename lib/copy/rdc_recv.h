/* rdc_recv.h - the tree receiver's record engine without the network, so that `rdcp
 * --tree-recv` and the fuzzer (tests/fuzz/fuzz_tree_recv.c) drive the same code. */
#ifndef RDC_RECV_H
#define RDC_RECV_H

#include <stddef.h>
#include <stdint.h>

struct rdc_rcv;

/* A receiver that builds the tree under dst (nsrc sources; preserve = -p, which takes ACLs too;
 * xattrs = -X, user.* attributes; nosync: do not make the tree durable before finish
 * returns). NULL (message said) when dst cannot be used. */
struct rdc_rcv *rdc_rcv_new(const char *dst, int nsrc, int preserve, int xattrs, int nosync);
/* Files bigger than size fail on their own (the fuzzer's guard: a record claiming 1 TB would
 * preallocate it). Default: no limit. */
void rdc_rcv_max_file(struct rdc_rcv *r, uint64_t size);
struct rd_sink;
/* The engine's sink that delivers the stream: it lends its frames (rd_sink_hold), so the
 * workers write big files' bytes out of them. Without it (the fuzzer) they are written on
 * the thread that consumes the stream. */
void rdc_rcv_sink(struct rdc_rcv *r, struct rd_sink *s);
/* The --resume manifest ("m HEX" lines) on fd out, of the names in DST that this copy writes
 * (rdc_manifest.h; NULL: all of DST). */
struct rdc_roots;
void rdc_rcv_manifest(struct rdc_rcv *r, int out, const struct rdc_roots *roots);
/* Sources on several hosts copy in one run per host, each with a receiver of its own; what
 * the earlier runs made (rdc_rcv_report_made) is refused here as a name this run made, so
 * `rdcp h1:x h2:x DST/` refuses the second x as `rdcp a/x b/x DST/` does, never replaces it. */
void rdc_rcv_earlier(struct rdc_rcv *r, const char *rel);
/* After finish: an RDC_TAG "made HEX" line on stderr for each file, symlink, FIFO, socket and
 * hard link this receiver made (its name relative to the base, hex). */
void rdc_rcv_report_made(const struct rdc_rcv *r);
/* The next n bytes of the record stream: RD_OK or an rd error (rd_fail recorded). */
int rdc_rcv_consume(void *r, const void *buf, size_t n);
/* The stream is complete: set directory metadata, make everything durable. */
int rdc_rcv_finish(void *r);
/* Paths that failed on their own so far (each named on stderr). */
uint64_t rdc_rcv_errors(const struct rdc_rcv *r);
/* The stream broke: say so about a partial file kept for --resume; then the statistics
 * line for the agent. */
void rdc_rcv_report(struct rdc_rcv *r, double secs);
void rdc_rcv_free(struct rdc_rcv *r);

#endif

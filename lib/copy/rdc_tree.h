/* rdc_tree.h - rdcp's native tree protocol: records that describe a file tree, serialized into
 * one rd engine stream (the engine batches them into big checksummed frames).
 *
 * Every record starts with one type byte; integers are little endian; a "str" is u32 length +
 * bytes (any bytes: names are never interpreted beyond '/' separators).
 *   'R' root      u32 index, u8 kind ('d' dir, 'f' file, 'l' symlink), u8 contents (source had
 *                 a trailing '/': its contents go into DST), str basename
 *   'd' dir       str path, meta
 *   'f' file      str path, meta, u64 size, u64 start (bytes the destination already has: the
 *                 prefix of a partial file), u8 flags (RDC_F_SKIP: complete at the destination,
 *                 RDC_F_LINKED: 'h' records name it again, ...),
 *                 str tmp (the partial file to continue, "" = new temporary file)
 *   'D' data      u64 offset, u64 len, then len bytes of the current file
 *   'e' end       u8 status (0 ok, 1 the source failed: discard), 16 bytes XXH3-128 of the file
 *                 (zeros under RDC_F_NOHASH)
 *   'l' symlink   str path, meta, str target
 *   'n' node      str path, meta, u8 type ('p' a FIFO, 's' a socket): made again empty, as
 *                 cp -r makes them; device nodes are never sent, and refused when they are
 *   'h' hardlink  str path, u32 root, str target path (inside root)
 *   'x' xattrs    u32 count, count x (str name, str value): the extended attributes of the 'd',
 *                 'f' or 'n' record just before it (a file's come before its data); at most one;
 *                 anywhere else the stream is malformed. Which names a receiver takes:
 *                 copy/rdc_xattr.h
 *   'a' atimes    (no body) from here on every meta also carries the access time: sent first,
 *                 under -p. A stream without it (an older sender) gives each file the mtime
 *                 as its atime, as before 2026-12-07
 *   'Z' end of tree
 * meta = u32 mode, u32 uid, u32 gid, i64 mtime_s, u32 mtime_ns, and after an 'a' record
 * i64 atime_s, u32 atime_ns (below 10^9, else the stream is malformed). Paths are relative to
 * their root ("" = the root itself); records of root i follow its 'R'.
 *
 * Resume manifest (destination -> source, before the stream; one binary entry per line, hex):
 *   u8 kind ('T' dst type: size = 1 if DST is a directory, 'F' complete file, 'P' partial file),
 *   u64 size (F: file size; P: bytes present), i64 mtime_s, u32 mtime_ns, 16 bytes hash
 *   (F: whole file; P: of the first size bytes), str path (relative to DST), str tmp (P: name of
 *   the temporary file in the same directory).
 */
#ifndef RDC_TREE_H
#define RDC_TREE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define RDC_F_SKIP 1u
#define RDC_F_SPARSE 2u            /* the source has holes: no fallocate */
/* The end record's hash is not computed (sent as zeros), for a file sent whole (start 0): the
 * engine's frame tags authenticate every byte of the stream, in order and end to end, so a
 * whole-file hash of the same bytes on both sides could only agree. A file continued from a
 * partial one (start > 0) is always hashed: its hash also covers the prefix the destination
 * already holds, which no tag saw; the receiver ignores the flag there. */
#define RDC_F_NOHASH 4u
/* The file has other names, sent as 'h' records after it: a receiver that cannot make this
 * first name still keeps its data, for the first of them it can make (older receivers ignore
 * the bit: the other names are then refused, as before 2026-12-07). */
#define RDC_F_LINKED 8u
#define RDC_MAX_HDR (1u << 17)     /* biggest non-data record */
#define RDC_TMP_PREFIX ".rdcp."

struct rdc_meta {
    uint32_t mode, uid, gid;
    int64_t mtime_s;
    uint32_t mtime_ns;
    int64_t atime_s;           /* the access time (-p): on the wire after an 'a' record only */
    uint32_t atime_ns;
};

/* growable byte buffer */
struct rdc_buf {
    unsigned char *p;
    size_t len, cap;
};
void rdc_put(struct rdc_buf *b, const void *p, size_t n);
void rdc_put_u8(struct rdc_buf *b, uint8_t v);
void rdc_put_u32(struct rdc_buf *b, uint32_t v);
void rdc_put_u64(struct rdc_buf *b, uint64_t v);
void rdc_put_str(struct rdc_buf *b, const char *s, size_t n);
/* atimes: the stream's 'a' record was sent (the atime follows the mtime) */
void rdc_put_meta(struct rdc_buf *b, const struct rdc_meta *m, int atimes);
void rdc_buf_free(struct rdc_buf *b);

/* reader over bytes; short is set when the data ended early */
struct rdc_rd {
    const unsigned char *p;
    size_t n, off;
    int short_;
};
uint8_t rdc_get_u8(struct rdc_rd *r);
uint32_t rdc_get_u32(struct rdc_rd *r);
uint64_t rdc_get_u64(struct rdc_rd *r);
/* points into the data (not NUL-terminated); *len its length */
const char *rdc_get_str(struct rdc_rd *r, size_t *len);
/* atimes: after an 'a' record (else the atime is the mtime); an atime_ns of 10^9 or more
 * sets short_ = 2 (malformed) */
void rdc_get_meta(struct rdc_rd *r, struct rdc_meta *m, int atimes);
/* { atime, mtime } for utimensat/futimens */
void rdc_meta_times(const struct rdc_meta *m, struct timespec ts[2]);
void rdc_get_bytes(struct rdc_rd *r, void *out, size_t n);

struct rdc_manifest_entry {
    uint8_t kind;
    uint64_t size;
    int64_t mtime_s;
    uint32_t mtime_ns;
    unsigned char hash[16];
    char *path;        /* malloc'd, NUL-terminated (paths never contain NUL) */
    char *tmp;
};

/* A source with a glob character (*, ? or [), which the source host expands (as scp's remote
 * shell does) when no file has that very name. */
int rdc_is_pattern(const char *path);
/* A pattern that this host expands: no file has that very name (rdc_send.c's sources). */
int rdc_expands_here(const char *path);
/* Where root i goes, relative to DST: "" (DST itself) or "BASENAME". NULL when it cannot go
 * anywhere (several sources and DST is not a directory). */
const char *rdc_root_rel(int dst_is_dir, int nsrc, int contents, const char *basename);

/* "a" + "/" + "b" ("" parts left out); malloc'd */
char *rdc_join(const char *a, const char *b);
/* The last path component of a source argument ("dir/" -> "dir", "/" -> "/"); malloc'd. */
char *rdc_basename(const char *path);
/* A source whose contents go into DST (its entries are the roots), not itself: a directory
 * named "d/", ".", "..", "/". base: rdc_basename(src). The walk and the --resume list
 * (rdc_list.h) must agree on it. */
int rdc_contents_source(const char *src, const char *base, int is_dir);

/* a path for messages: control bytes and backslashes escaped as \\ooo; malloc'd */
char *rdc_shown(const char *path);

/* hex line helpers for the manifest */
char *rdc_manifest_line(const struct rdc_manifest_entry *e);   /* malloc'd hex */
int rdc_manifest_parse(const char *hex, struct rdc_manifest_entry *e);

/* XXH3-128 of fd's [0, len) (holes read as zeros); 0 or -1 with errno */
struct XXH3_state_s;
int rdc_hash_prefix(int fd, uint64_t len, struct XXH3_state_s *st);
/* Hash n zero bytes (a hole); -1 as soon as *stop is set (may be NULL): n comes from a
 * record, and a hole of petabytes must not outlive the transfer that named it. */
int rdc_hash_zeros(struct XXH3_state_s *st, uint64_t n, atomic_int *stop);
void rdc_hash_final(struct XXH3_state_s *st, unsigned char out[16]);

/* stderr lines the initiator parses ("@rdcp ..."), everything else is a message; they begin
 * with RDR_ROLE_REPORT (remote/rdr_role.h), so the agent never takes one for the error */
#define RDC_TAG "@rdcp "

/* the tree roles, run by the agent as `rdcp --tree-send ...` / `rdcp --tree-recv ...` */
int rdc_tree_send_main(int argc, char **argv);
int rdc_tree_recv_main(int argc, char **argv);

#endif

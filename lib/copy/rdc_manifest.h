/* rdc_manifest.h - the --resume manifest of `rdcp --tree-recv`: what DST already holds. */
#ifndef RDC_MANIFEST_H
#define RDC_MANIFEST_H

#include "copy/rdc_set.h"

/* The names in DST a copy writes, a source NAME going to DST/NAME: the walk below lists those
 * alone, so the source host learns nothing of the rest of DST (`rdcp --resume host:proj ~/`
 * would hand it the listing and hashes of the whole home directory).
 *   pats:  the initiator's --root words: each a name, or a source's pattern (rdc_is_pattern)
 *          that lists what it may match;
 *   names: the source host's own list of its top-level names (a contents copy, `SRC/`):
 *          taken literally, looked up in a hash set (a flat directory may hold 10^6).
 * The partial files of each (rdc_tmp_key) are listed too. */
struct rdc_roots {
    char **pats;
    int npats;
    struct rdc_set names, keys;   /* keys: rdc_tmp_key of each of names */
};

/* a name from the source's list (rdr_said_root_name's: no '/', not "." nor "..") */
void rdc_roots_add_name(struct rdc_roots *o, const char *name);
void rdc_roots_free(struct rdc_roots *o);

/* Write "m HEX" lines to out: complete files with their hash, partial temporary files with
 * the hash of what they hold. base is the directory fd the receiver works in: DST itself
 * (pre "") or DST's directory (pre = DST's name). The walk opens every directory with
 * O_NOFOLLOW from its parent's fd, so no symlink (nor one swapped in meanwhile) leads out.
 * roots: what the walk lists at DST's top (above); NULL: all of DST. */
void rdc_make_manifest(int out, int base, const char *pre, int dst_is_dir, const struct rdc_roots *roots);

#endif

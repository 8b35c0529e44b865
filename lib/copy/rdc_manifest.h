/* rdc_manifest.h - the --resume manifest of `rdcp --tree-recv`: what DST already holds. */
#ifndef RDC_MANIFEST_H
#define RDC_MANIFEST_H

/* Write "m HEX" lines to out: complete files with their hash, partial temporary files with
 * the hash of what they hold. base is the directory fd the receiver works in: DST itself
 * (pre "") or DST's directory (pre = DST's name). The walk opens every directory with
 * O_NOFOLLOW from its parent's fd, so no symlink (nor one swapped in meanwhile) leads out.
 * roots (nroots of them; 0: all of DST): the names in DST that this copy writes, a source
 * NAME going to DST/NAME. The walk then lists those alone: the source host learns nothing of
 * the rest of DST (`rdcp --resume host:proj ~/` would hand it the listing and hashes of the
 * whole home directory). */
void rdc_make_manifest(int out, int base, const char *pre, int dst_is_dir, char *const *roots, int nroots);

#endif

/* rdc_manifest.h - the --resume manifest of `rdcp --tree-recv`: what DST already holds. */
#ifndef RDC_MANIFEST_H
#define RDC_MANIFEST_H

/* Write "m HEX" lines to out: complete files with their hash, partial temporary files with
 * the hash of what they hold. base is the directory fd the receiver works in: DST itself
 * (pre "") or DST's directory (pre = DST's name). The walk opens every directory with
 * O_NOFOLLOW from its parent's fd, so no symlink (nor one swapped in meanwhile) leads out. */
void rdc_make_manifest(int out, int base, const char *pre, int dst_is_dir);

#endif

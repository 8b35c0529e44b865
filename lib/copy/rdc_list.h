/* rdc_list.h - `rdcp --tree-send --list-fd N`: the names a copy of these sources writes at
 * DST's top, for --resume. A contents source (`d/`, `.`) writes names the initiator cannot
 * know; without this list the destination would tell the source host all of DST
 * (rdc_manifest.h). Run by the source's agent at setup, before the destination walks. */
#ifndef RDC_LIST_H
#define RDC_LIST_H

/* Each name as a line "r" + its hex on fd out, as the walk (rdc_walk.c) will name its roots:
 * a contents source's entries, any other source's base name. A source the walk will refuse
 * (not there, a directory without -r) lists nothing: it writes nothing either. 0, or RD_EIO
 * when fd out fails. */
int rdc_list_roots(int out, char *const *srcs, int nsrc, int recursive, int follow);

#endif

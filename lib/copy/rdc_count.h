/* rdc_count.h - rdcp --count: how many files and bytes the sources hold, for the progress
 * line's total, walked beside the transfer (the walk itself is rdc_walk.h). */
#ifndef RDC_COUNT_H
#define RDC_COUNT_H

#include <stdint.h>

struct rdc_count {
    uint64_t files, bytes;   /* every non-directory entry; the sizes of regular files */
};

/* Counts what a copy of srcs[0..nsrc) takes: with recursive, the trees below directories
 * (with follow, through symlinks); without, a directory counts nothing. Never fails: what
 * cannot be read is left out (the walk names it), and so is a directory that is its own
 * ancestor (follow), or one whose parent cannot be found again (see rdc_count.c). */
struct rdc_count rdc_count_sources(char *const *srcs, int nsrc, int recursive, int follow);

#endif

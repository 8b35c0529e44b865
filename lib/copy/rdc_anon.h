/* rdc_anon.h - a file made without a name (O_TMPFILE) in a directory beneath DST, named only
 * once it is complete: the receiver's workers write small files this way. A file that fails
 * before it is named vanishes with its fd, so nothing partial can ever carry a name; and a new
 * name costs one directory entry where a temporary name, then a rename, cost three (creating
 * and renaming were a third of the receiver's CPU on 20,000 small files). */
#ifndef RDC_ANON_H
#define RDC_ANON_H

#include <sys/types.h>

/* An unnamed regular file (O_RDWR, close-on-exec) in the directory dfd, created with `mode`
 * (the umask or the directory's default ACL applied, as for any new file); -1 with errno
 * where the filesystem or the kernel has no O_TMPFILE, or there is no /proc to name it
 * through later (the caller then names a temporary file as before). RDCP_NO_TMPFILE set:
 * always -1 (the tests' older-kernel path). */
int rdc_anon_open(int dfd, mode_t mode);

/* Give fd (from rdc_anon_open, written and complete) the name `name` in dfd, never replacing
 * what is there: -1 with errno EEXIST when the name is taken. */
int rdc_anon_link(int fd, int dfd, const char *name);

/* Give fd the name `name` in dfd, replacing a file of that name: linked under a temporary
 * name (rdc_tmp_try), closed, then renamed over it. fd is closed in every case. 0, or -1
 * with errno and *what (the failed step, for the message); nothing is left under any name. */
int rdc_anon_replace(int fd, int dfd, const char *name, const char **what);

#endif

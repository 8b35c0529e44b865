/* rdc_safe.h - filesystem access beneath one directory that never passes through a symlink
 * (the tree receiver's defence against a hostile stream: "a -> /etc", then "a/passwd"). */
#ifndef RDC_SAFE_H
#define RDC_SAFE_H

#include <stddef.h>
#include <sys/types.h>

/* Why p[0..n) is not a relative path a record may name (components separated by single '/',
 * none empty, "." or "..", no NUL, not absolute), or NULL when it is. n = 0 is not a valid
 * name (the root itself is handled apart). */
const char *rdc_name_bad(const char *p, size_t n);

/* A directory fd (O_RDONLY, close-on-exec) for base/rel, resolved without following any
 * symlink and without leaving base: openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) where the
 * kernel has it, else an O_NOFOLLOW | O_DIRECTORY openat per component. rel "" = base
 * itself; a rel of PATH_MAX bytes or more is resolved a part at a time. -1 with errno (ELOOP
 * or ENOTDIR where a component is a symlink or a file). */
int rdc_open_beneath(int base, const char *rel);

/* Create a new temporary file ".rdcp.NAME.XXXXXX" (random suffix, O_EXCL | O_NOFOLLOW, `mode`
 * with the umask or the directory's default ACL applied) in the directory dfd for the final
 * name `name`; *tmp gets its name (malloc'd). Returns the fd (O_RDWR) or -1 with errno. */
int rdc_create_tmp(int dfd, const char *name, mode_t mode, char **tmp);

/* Make NAME in dfd, whose open fd is fd (its stat st), a file of its own: a copy of fd's
 * content, owner, mode and extended attributes under a temporary name (rdc_create_tmp),
 * renamed over NAME. Its fd (read-write), or -1 with errno, and NAME as it was (also when the
 * owner cannot be kept: EPERM). For a hard link whose metadata is about to change: the other
 * names keep theirs. */
struct stat;
int rdc_unshare(int dfd, const char *name, int fd, const struct stat *st);

/* Lock the partial file fd for as long as this process holds it open (flock): how a later
 * copy tells a partial file a running rdcp writes from one an interrupted copy left
 * (rdc_stale.h). Best effort: where the filesystem has no locks, nothing is locked. -1 with
 * errno EBUSY when another process holds it (a partial file a running rdcp writes), else 0. */
int rdc_tmp_lock(int fd);

/* openat(dfd, name, flags | O_NOATIME), where the kernel allows it (the file's owner, or
 * root): under relatime the first read of a file whose atime is a day old sets it, and dirties
 * its inode. *denied is set at the first EPERM (not the owner), and later calls stop asking. */
int rdc_open_noatime(int dfd, const char *name, int flags, int *denied);

/* What a temporary file's name keeps of NAME (malloc'd): NAME itself up to 200 bytes (NAME_MAX
 * is 255: room for the prefix and the suffix); a longer one as its first 184 bytes, '~' and
 * 16 hex digits of its hash (201 bytes, longer than any NAME kept whole), so that a later copy
 * still finds that file's partial. */
#define RDC_TMP_KEEP 200
char *rdc_tmp_key(const char *name);

/* rel ("a/b/NAME") with its last component as rdc_tmp_key keeps it (malloc'd): what
 * rdc_tmp_final gives back for a partial file of rel, joined to its directory. */
char *rdc_tmp_key_path(const char *rel);

/* A temporary file's name ".rdcp.KEY.XXXXXX" -> "KEY" (malloc'd: rdc_tmp_key of its NAME), or
 * NULL for any other name. */
char *rdc_tmp_final(const char *tmp);

/* The same names, made by make(dfd, tmpname, arg) (>= 0: done, its result is returned; -1 with
 * errno EEXIST: the next random name); rdc_create_tmp is make = openat(O_CREAT | O_EXCL). */
int rdc_tmp_try(int dfd, const char *name, char **tmp, int (*make)(int dfd, const char *t, void *arg), void *arg);

/* The directory part of a path ("a/b/c" -> "a/b", "c" -> "", "/c" -> "/"), malloc'd, and a
 * pointer to its last component. */
char *rdc_dir_of(const char *rel, const char **base);

#endif

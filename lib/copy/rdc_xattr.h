/* rdc_xattr.h - extended attributes and POSIX ACLs of rdcp's files and directories: what the
 * sender reads into an 'x' record, which names a receiver takes, and setting them.
 *
 * Only two families travel, each asked for by the user:
 *   - POSIX ACLs (system.posix_acl_access of a file, directory, FIFO or socket, and
 *     system.posix_acl_default of a directory) with -p, as cp -p keeps them with the mode;
 *   - user.* attributes with -X (and -a), as cp -a keeps them.
 * security.* and trusted.* never travel: SELinux labels and IMA/EVM data belong to the
 * destination's policy, and file capabilities (security.capability) or overlayfs' trusted.*
 * attributes sent by a hostile source would grant privileges. A receiver refuses every other
 * name whatever the sender says.
 *
 * The 'x' record (rdc_tree.h): u32 count, then count x (str name, str value). */
#ifndef RDC_XATTR_H
#define RDC_XATTR_H

#include "copy/rdc_tree.h"

#include <stddef.h>

#define RDC_XATTR_ACLS 1u    /* -p */
#define RDC_XATTR_USER 2u    /* -X */
#define RDC_XATTR_MAX_VALUE 65536u   /* the kernel's XATTR_SIZE_MAX */
#define RDC_XATTR_MAX_NAME 255u      /* XATTR_NAME_MAX */

/* Does a name belong to the families in `which` (RDC_XATTR_*)? dir: a directory's (only a
 * directory has a default ACL). */
int rdc_xattr_wanted(const char *name, size_t n, unsigned which, int dir);

/* Append the 'x' record of fd's attributes (fd >= 0, O_PATH too) or path's (fd < 0; follow:
 * through a symlink) in the families `which` to b; nothing when it has none. 0, or -1 with errno (E2BIG:
 * more than a record holds) and nothing appended. */
int rdc_xattr_record(struct rdc_buf *b, int fd, const char *path, int follow, unsigned which,
                     int dir);

/* Check the body of an 'x' record (after its type byte): 1 if whole and well formed, 0 if
 * incomplete, -1 if malformed. *len: its length when whole. */
int rdc_xattr_parse(const unsigned char *p, size_t n, size_t *len);

/* Keep the attributes of a well-formed body that rdc_xattr_wanted takes, as a new body
 * (malloc'd, *out_len), or NULL when none is; refused(ctx, name, n) for each other one. */
unsigned char *rdc_xattr_filter(const unsigned char *p, size_t n, unsigned which, int dir, size_t *out_len,
                                void (*refused)(void *ctx, const char *name, size_t n), void *ctx);

/* Set every attribute of a body (from rdc_xattr_filter) on fd, each tried even after one
 * failed. 0, or the first failure's errno with *failed its name (malloc'd) and *more how
 * many others failed. An O_PATH fd (a FIFO or a socket, which cannot be opened
 * for reading without side effects) is reached through /proc/self/fd. */
int rdc_xattr_apply(int fd, const unsigned char *p, size_t n, char **failed, unsigned *more);

#endif

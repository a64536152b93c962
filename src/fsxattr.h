/* fsxattr.h - FUSE extended-attribute callbacks: the mount's counters and
 * recent failures on the root, each entity's ETag and Timestamp. */
#ifndef AZTFS_FSXATTR_H
#define AZTFS_FSXATTR_H

#include <stddef.h>

#define XATTR_ERRORS "user.aztfs.errors"        /* root: failring_json */
#define XATTR_PENDING "user.aztfs.pending"      /* root: write-behind's queue */
#define XATTR_DISCARD "user.aztfs.discard"      /* root, set: drop a failed change */
#define XATTR_ETAG "user.aztfs.etag"            /* entity: its ETag as the service gave it */
#define XATTR_TIMESTAMP "user.aztfs.timestamp"  /* entity: its Timestamp, UTC, 100 ns */

/* getxattr: on "/", user.aztfs.stats (stats_json) and user.aztfs.errors
 * (failring_json), neither listed; on an entity, user.aztfs.etag and
 * user.aztfs.timestamp of the entity as stored (an open file's unsaved
 * changes have none yet: ENODATA). Other user.* names: ENODATA; other
 * namespaces (security.*, system.*): ENOTSUP. */
int fs_getxattr(const char *path, const char *name, char *value, size_t size);

/* listxattr: the two names of an entity (so getfattr -d shows them);
 * nothing elsewhere. */
int fs_listxattr(const char *path, char *list, size_t size);

/* setxattr and removexattr: ENOTSUP for every name. The mount stores no
 * extended attributes, and its own are read-only; ENOTSUP is what cp and mv
 * take quietly as "this file system keeps no xattrs". */
int fs_setxattr(const char *path, const char *name, const char *value, size_t size,
                int flags);
int fs_removexattr(const char *path, const char *name);

#endif

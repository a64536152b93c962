/* fswrite.h - FUSE callbacks that change files: create, open for writing,
 * write, truncate, the commits at flush/fsync/release, unlink, rename,
 * chmod, chown, utimens. Each returns 0 (write: the bytes written) or
 * -errno, as libfuse's struct fuse_operations says; doc/USAGE.md,
 * "Writing", says what each does. */
#ifndef AZTFS_FSWRITE_H
#define AZTFS_FSWRITE_H

#include "fs.h"
#include "fspath.h"

struct open_file;

/* Create PATH and open it for writing: a scratch file (kept in memory),
 * or a new entity file, inserted at its first commit. -EPERM where the
 * tree has no place for a file. */
int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi);

/* Open entity PATH (FP parsed from it) for writing: the text and ETag as
 * read now (from the cache when fresh), or a new file another handle has
 * open and not yet saved (a new file of its own: the first to close
 * inserts it, as with two creates); O_TRUNC empties the copy but commits
 * nothing by itself. */
int fs_open_write(struct aztfs *a, const char *path, struct fspath *fp,
                  struct fuse_file_info *fi);

/* Write into the handle's copy (or the scratch file): SIZE, -EFBIG past
 * OPEN_FILE_MAX, -ESTALE on a removed scratch file. */
int fs_write(const char *path, const char *buf, size_t size, off_t off,
             struct fuse_file_info *fi);
/* Truncate the handle's copy; by path, an entity is changed and saved at
 * once (guarded by its ETag). */
int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi);
/* Commit the handle's changes in one request (fs_fsync: the same); a new
 * file flushed before any write (touch) is inserted now. */
int fs_flush(const char *path, struct fuse_file_info *fi);
int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi);

/* fsync of directory PATH (of "/": what sync(1) of the mount means here,
 * libfuse 3.14 passing no syncfs): with -o writeback, every queued change
 * under it sent, or -EIO when one failed; else 0. */
int fs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi);

/* At release of write handle OF, still named PATH: a file created with
 * O_TRUNC or O_APPEND and closed without any write (': > new.json')
 * becomes an entity without properties. Errors here reach no application;
 * they are logged. */
int fs_release_write(const char *path, struct open_file *of);

/* Delete an entity (guarded by its ETag) or a scratch file; a new file not
 * yet saved goes without a request. Files open on it keep their copy. */
int fs_unlink(const char *path);
/* Rename within a partition (one transaction; a scratch file onto an
 * entity saves it); -EXDEV across partitions, -EINVAL with flags. */
int fs_rename(const char *from, const char *to, unsigned int flags);
/* Accepted and ignored on entities and directories (modes are fixed; the
 * owner is the mounting user: -EPERM for anyone else); kept on scratch
 * files. */
int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi);
int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi);
int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi);

#endif

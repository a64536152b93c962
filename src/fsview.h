/* fsview.h - FUSE callbacks for query views (/t/.where/FILTER/...,
 * /t/pk/.where/FILTER/...; view.h): stat, open for reading and listing
 * them, and EROFS for every change. The directory and change callbacks
 * here front the ordinary ones (fsdir.h, fswrite.h): a path outside a view
 * is handed on as it is. Each returns 0 or -errno, as libfuse's struct
 * fuse_operations says. */
#ifndef AZTFS_FSVIEW_H
#define AZTFS_FSVIEW_H

#include "fs.h"
#include "fspath.h"

/* getattr of PATH, parsed as FP (FSP_WHERE and deeper): ".where" when its
 * table (partition) exists, a view directory once its listing is had (a
 * filter the service refuses: -EINVAL, logged), an entity the view lists
 * with the size and mtime of the entity outside the view. */
int fs_view_attr(struct aztfs *a, const char *path, struct fspath *fp, struct stat *st);

/* open of PATH (FP: FSP_WHERE and deeper): an entity of the view, read as
 * the entity outside it is; -EROFS (logged) for writing, -EISDIR for a
 * directory. */
int fs_view_open(struct aztfs *a, const char *path, struct fspath *fp,
                 struct fuse_file_info *fi);

/* Directories: ".where" lists nothing, a view lists what its query
 * returned (complete at opendir); other paths go to fsdir. */
int fs_view_opendir(const char *path, struct fuse_file_info *fi);
int fs_view_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                    struct fuse_file_info *fi, enum fuse_readdir_flags flags);
int fs_view_releasedir(const char *path, struct fuse_file_info *fi);

/* Changes: -EROFS with one log line when a path is in a view (or is a
 * ".where"); else the ordinary callback's answer. */
int fs_view_create(const char *path, mode_t mode, struct fuse_file_info *fi);
int fs_view_truncate(const char *path, off_t size, struct fuse_file_info *fi);
int fs_view_unlink(const char *path);
int fs_view_rename(const char *from, const char *to, unsigned int flags);
int fs_view_mkdir(const char *path, mode_t mode);
int fs_view_rmdir(const char *path);
int fs_view_chmod(const char *path, mode_t mode, struct fuse_file_info *fi);
int fs_view_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi);
int fs_view_utimens(const char *path, const struct timespec tv[2],
                    struct fuse_file_info *fi);

#endif

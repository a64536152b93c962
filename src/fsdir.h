/* fsdir.h - FUSE directory callbacks: listings streamed page by page
 * through an open directory handle, mkdir and rmdir of tables and
 * partitions. Each returns 0 (readdir: 0 when done or the buffer is full)
 * or -errno, as libfuse's struct fuse_operations says. */
#ifndef AZTFS_FSDIR_H
#define AZTFS_FSDIR_H

#include "fs.h"

/* Open directory PATH: a snapshot of its listing (scan_view) and, once the
 * remote names are handed out, its local names (mkdir'd partitions,
 * scratch files, new files not yet saved). -ENOTDIR for a file. */
int fs_opendir(const char *path, struct fuse_file_info *fi);
/* Hand out the names of the directory opened as FI from offset OFF: 1 and
 * 2 follow "." and "..", 3 + i follows remote name i, local names come
 * after. Offsets stay valid while the directory is open. */
int fs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
               struct fuse_file_info *fi, enum fuse_readdir_flags flags);
/* Close the directory opened as FI. */
int fs_releasedir(const char *path, struct fuse_file_info *fi);

/* mkdir: a table at the top (-EINVAL for an invalid name, -EEXIST), a
 * partition that exists locally until a file is written in it; -EPERM
 * deeper. */
int fs_mkdir(const char *path, mode_t mode);
/* rmdir: a table or partition that holds no entity (-ENOTEMPTY). */
int fs_rmdir(const char *path);

#endif

/* scratch.h - files the mount keeps locally (editor/rsync temporaries) and local-only directories. */
#ifndef AZTFS_SCRATCH_H
#define AZTFS_SCRATCH_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "log.h"

struct scratch;

/* Attributes of a scratch file. */
struct scratch_attr {
    size_t size;
    mode_t mode;              /* permission bits only */
    struct timespec mtime;
};

/* New empty store whose files together may hold at most MAX_BYTES (-o
 * scratch_size): each file counts its size rounded up to SCRATCH_PAGE, and
 * the counts add up to no more than MAX_BYTES (a file's buffer holds at
 * most about twice its size). A write or truncate that cannot fit fails
 * with -ENOSPC and logs one error line on LOG (kept, not copied; NULL:
 * stderr). Returns NULL on ENOMEM. */
struct scratch *scratch_new(size_t max_bytes, const struct logger *log);
void scratch_free(struct scratch *s);

/* Create an empty file at PATH with MODE. -EEXIST if present, -ENOMEM. */
int scratch_create(struct scratch *s, const char *path, mode_t mode);
/* Attributes of PATH: 0 or -ENOENT. */
int scratch_stat(struct scratch *s, const char *path, struct scratch_attr *out);
/* Read up to SIZE bytes at OFF into BUF: bytes read, or -ENOENT. */
ssize_t scratch_read(struct scratch *s, const char *path, char *buf, size_t size, off_t off);
/* Write SIZE bytes at OFF (growing the file, zero-filling any gap): bytes
 * written, -ENOENT, -EFBIG (over SCRATCH_MAX_BYTES), -ENOSPC (over the
 * store's bound; logged, nothing written), -ENOMEM. */
ssize_t scratch_write(struct scratch *s, const char *path, const char *buf, size_t size,
                      off_t off);
/* Set the length (shrinking releases memory): 0, -ENOENT, -EFBIG, -ENOSPC
 * (logged), -ENOMEM. */
int scratch_truncate(struct scratch *s, const char *path, off_t size);
int scratch_chmod(struct scratch *s, const char *path, mode_t mode);
int scratch_utimens(struct scratch *s, const char *path, const struct timespec *mtime);
/* Take the whole content of PATH: malloc'd copy in *data and *len (caller frees). */
int scratch_get(struct scratch *s, const char *path, char **data, size_t *len);
/* Remove PATH: 0 or -ENOENT. */
int scratch_unlink(struct scratch *s, const char *path);
/* Rename FROM to TO, replacing TO: 0 or -ENOENT. */
int scratch_rename(struct scratch *s, const char *from, const char *to);
/* Call FN(ctx, name, attr) for each file directly inside directory DIR. */
void scratch_list(struct scratch *s, const char *dir,
                  void (*fn)(void *ctx, const char *name, const struct scratch_attr *a),
                  void *ctx);
/* Number of files directly inside DIR. */
size_t scratch_count(struct scratch *s, const char *dir);

/* Bytes the files count now (*used, at most *max_bytes) and the bound
 * given to scratch_new, for statfs. */
void scratch_usage(struct scratch *s, size_t *used, size_t *max_bytes);

/* Local directories (partitions made with mkdir, not yet in the table). */
int scratch_mkdir(struct scratch *s, const char *path);      /* 0, -EEXIST, -ENOMEM */
int scratch_is_dir(struct scratch *s, const char *path);      /* 1 or 0 */
int scratch_rmdir(struct scratch *s, const char *path);       /* 0 or -ENOENT */
/* Does DIR hold a local directory directly inside it? 1 or 0. */
int scratch_has_dirs(struct scratch *s, const char *dir);
/* Call FN(ctx, name) for each local directory directly inside DIR. */
void scratch_list_dirs(struct scratch *s, const char *dir,
                       void (*fn)(void *ctx, const char *name), void *ctx);

#define SCRATCH_MAX_BYTES (8 * 1024 * 1024)   /* one file; a multiple of SCRATCH_PAGE */
#define SCRATCH_PAGE 4096                      /* unit of a file's buffer */

#endif

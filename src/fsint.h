/* fsint.h - internals shared by the FUSE callback modules (fsops.c, fsdir.c, fswrite.c, fspending.c). */
#ifndef AZTFS_FSINT_H
#define AZTFS_FSINT_H

#include <pthread.h>

#include "fsops.h"
#include "fspath.h"

#define FILE_MODE (S_IFREG | 0644)
#define DIR_MODE  (S_IFDIR | 0755)
/* Largest entity file text accepted in an open handle (the entity limit is
 * checked at commit; this only bounds memory). */
#define OPEN_FILE_MAX (4 * 1024 * 1024)
/* Entities fetched at once when a listed entity is no longer cached: a
 * page (1000), but no more than a quarter of the cache at 1 KiB each, so
 * that the page's first entities are still cached when it is in. */
#define READ_AHEAD_MAX 1000
#define READ_AHEAD_MIN 32

/* State of one open file (fi->fh). */
struct open_file {
    pthread_mutex_t lock;
    int scratch;              /* a scratch file: the bytes live in a->scratch */
    char *data;               /* entity text (read: as opened; write: edited copy) */
    size_t len, cap;
    char *etag;               /* ETag of the entity as read at open, NULL if new */
    int is_new;               /* created by this handle and not yet in the table */
    int written;              /* changed since the last commit */
    int ever_written;         /* write/truncate happened at all */
    int failed;               /* the last commit failed */
    int replace;              /* a new file renamed onto an entity: its saves
                                 replace it, even with -o merge */
    int append;               /* opened O_APPEND: writes go to the end of our copy */
    int trunc_open;           /* opened with O_TRUNC (bash's '>' flushes before writing) */
    uint64_t ino;             /* inode number of the name it was opened by */
    int detached;             /* its name was removed or replaced (unlink, or a
                                 rename onto it) while it was open */
    char *path;               /* registered path of a write handle (pending list) */
    struct open_file *pnext;  /* next in a->pending */
};

static inline struct aztfs *fs_ctx(void)
{
    return fuse_get_context()->private_data;
}

static inline struct open_file *fs_handle(const struct fuse_file_info *fi)
{
    return fi ? (struct open_file *)(uintptr_t)fi->fh : NULL;
}

/* "PARENT/NAME" (PARENT "/" gives "/NAME"); NULL on ENOMEM. */
char *fs_path_join(const char *parent, const char *name);

/* The entity at PATH (FP parsed from it): from the cache when fresh, else a
 * point query. Returns 0 with *out filled (release with cache_file_clear),
 * -ENOENT, or -errno. */
int fs_load_entity(struct aztfs *a, struct fspath *fp, const char *path,
                   struct cache_file *out);

/* Log the one line a failed operation gets: "OP PATH failed: WHY (HTTP
 * status, service code, attempts)". WHY NULL: strerror(-RC). Failures
 * that are answers (ENOENT, EEXIST for creates) are the caller's to skip. */
void fs_log_failure(struct aztfs *a, const char *op, const char *path, int rc,
                    const struct az_status *st, const char *why);

/* After a change at PATH (a file or a directory): drop what our cache and
 * the kernel know of it, so that the next stat or read asks again. Every
 * mutation goes through here: the kernel keeps attributes for attr_timeout,
 * and a saved entity is rendered canonically (its size is not what was
 * written). */
void fs_invalidate(struct aztfs *a, const char *path);

/* Fill in FP->pk / FP->rk for long-form names by listing. */
int fs_resolve_keys(struct aztfs *a, struct fspath *fp);

/* Is there at least one entity in partition FP->pk? 1, 0 or -errno.
 * FRESH: ask the service even when a listing is cached. */
int fs_partition_exists(struct aztfs *a, struct fspath *fp, int fresh);

/* How an entity is shown: its file name (malloc'd), size and mtime. */
struct fs_shown {
    char *name;
    size_t len;
    struct timespec mtime;
};

/* Render wire entity E and cache it in directory DIR. With SHOWN non-NULL,
 * *SHOWN describes the file (free SHOWN->name); with COPY non-NULL, *COPY
 * receives the rendered file too (release with cache_file_clear), even when
 * the cache does not keep it. Returns 0 or -errno (logged). */
int fs_cache_entity(struct aztfs *a, const char *dir, json_t *e, struct fs_shown *shown,
                    struct cache_file *copy);

/* Does table NAME exist, and hold an entity? Asked with a one-entity query,
 * which a SAS scoped to the table allows. Returns 1 (it holds at least one
 * entity), 0 (it exists, empty), -ENOENT, or -errno (details in *st). */
int fs_table_probe(struct aztfs *a, const char *name, struct az_status *st);

/* Attributes of a directory, an entity file of LEN bytes, a scratch file. */
void fs_fill_dir_stat(const struct aztfs *a, const char *path, struct stat *st);
void fs_fill_file_stat(const struct aztfs *a, const char *path, size_t len,
                       struct timespec mtime, struct stat *st);
void fs_fill_scratch_stat(const struct aztfs *a, const char *path,
                          const struct scratch_attr *sa, struct stat *st);

/* Directory callbacks (fsdir.c): listings stream page by page through an
 * open directory handle. */
int fs_opendir(const char *path, struct fuse_file_info *fi);
int fs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
               struct fuse_file_info *fi, enum fuse_readdir_flags flags);
int fs_releasedir(const char *path, struct fuse_file_info *fi);

/* Write callbacks (fswrite.c). */
int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi);
int fs_open_write(struct aztfs *a, const char *path, struct fspath *fp,
                  struct fuse_file_info *fi);
int fs_write(const char *path, const char *buf, size_t size, off_t off,
             struct fuse_file_info *fi);
int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi);
int fs_flush(const char *path, struct fuse_file_info *fi);
int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi);
int fs_release_write(const char *path, struct open_file *of);
int fs_unlink(const char *path);
int fs_mkdir(const char *path, mode_t mode);
int fs_rmdir(const char *path);
int fs_rename(const char *from, const char *to, unsigned int flags);
int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi);
int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi);
int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi);

/* Hand OF to the kernel as FI's handle for the file opened at PATH. */
void fs_attach(struct fuse_file_info *fi, struct open_file *of, const char *path);

/* Attributes of the open file OF whose name is gone (libfuse hands a NULL
 * path for it): its own copy's size, no links. */
void fs_fill_handle_stat(const struct aztfs *a, struct open_file *of, struct stat *st);

/* Mark the write handles open on PATH detached: the name now belongs to
 * another entity (or none), so they no longer speak for it. */
void fs_pending_detach(struct aztfs *a, const char *path);

/* A new handle (zeroed, lock initialised), or NULL on ENOMEM. */
struct open_file *fs_open_file_new(void);
void fs_open_file_free(struct open_file *of);

/* A new handle holding the file at PATH: a new file another handle of
 * this mount has open and not yet saved (a copy of its bytes, is_new set),
 * else the entity (text and ETag, from the cache when fresh, else a point
 * query). The kernel opens only names it knows, so a name that holds
 * neither is a stale entry of its cache (the entity was deleted elsewhere,
 * or a new file's save failed): -ESTALE, and the kernel looks the name up
 * again and opens (or, with O_CREAT, creates) it once more. Returns 0 with
 * *out, -ESTALE, or -errno. */
int fs_open_entity(struct aztfs *a, struct fspath *fp, const char *path,
                   struct open_file **out);

/* Write handles are registered by path while open (fspending.c), so that a
 * stat by path (futimens, chmod, ls) sees a new or changed entity before it
 * is saved. A handle shows an unsaved file while it is new (and its save
 * did not fail) or written since its last save.
 * fs_pending_size: 0 and *len when PATH has such a handle, else -ENOENT. */
int fs_pending_add(struct aztfs *a, const char *path, struct open_file *of);
void fs_pending_remove(struct aztfs *a, struct open_file *of);
int fs_pending_size(struct aztfs *a, const char *path, size_t *len);

/* Is PATH a new file open and not yet saved? 1 or 0. */
int fs_pending_is_new(struct aztfs *a, const char *path);

/* The bytes of the new file open at PATH and not yet saved: 0 with *data
 * (malloc'd, NUL-terminated) and *len, -ENOENT when there is none, or
 * -ENOMEM. */
int fs_pending_copy(struct aztfs *a, const char *path, char **data, size_t *len);

/* Call FN(CTX, NAME) for each new file open and not yet saved directly
 * inside directory DIR (pending_lock held: FN must not call back). */
void fs_pending_list(struct aztfs *a, const char *dir,
                     void (*fn)(void *ctx, const char *name), void *ctx);

/* A rename made through this mount moved FROM to TO (in one partition):
 * the write handles open on FROM (not detached) now speak for TO, as on a
 * local disk. A saved handle holding ETag OLD_ETAG (the entity the rename
 * moved) takes NEW_ETAG (what the service answered for TO), so that its
 * save replaces what the rename wrote; one holding another ETag was read
 * before a later change and keeps it (its save is ESTALE). A new handle
 * (OLD_ETAG NULL) stays new, or with NEW_ETAG (TO is an entity with that
 * ETag) replaces TO at its close. Detach the handles on TO first. Returns
 * how many handles followed, or -ENOMEM when one could not (it keeps its
 * ETag, so its save is refused, never misplaced). */
int fs_pending_follow(struct aztfs *a, const char *from, const char *to,
                      const char *old_etag, const char *new_etag);

#endif

/* fs.h - the state of one mount (struct aztfs, the FUSE session's user
 * data) and its session. fs/lowlevel.c serves libfuse's low-level API by
 * node id; the path-level adapters it calls (fs/fuseops.c, fs/dir.c,
 * fs/write.c, with fs/handles.c) translate paths, file handles and errno,
 * and call the store layer (store.h) for anything the service holds. */
#ifndef AZTFS_FS_FS_H
#define AZTFS_FS_FS_H

#define FUSE_USE_VERSION 312
#include <fuse.h> /* struct fuse_operations: the path-level table */
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <sys/types.h>
#include <time.h>

#include "store/store.h"

struct fs_handles;
struct fs_inodes;
struct prefetch;
struct view_pending;

/* Everything one mount needs; the FUSE session's user data. */
struct aztfs {
    struct store store;              /* the service, the cache, the log */
    pthread_mutex_t fuse_lock;       /* guards FUSE against the end of its session */
    struct fuse_session *se;         /* the running mount: set at init, NULL once its
                                 * loop has ended (fs_end_session); guarded by
                                 * fuse_lock */
    struct fs_inodes *inodes;        /* owned: the kernel's node ids (fs/inode.c) */
    struct fuse_operations ops;      /* the path-level table fs/lowlevel.c calls
                                 * (fs_view_wrap's over next_ops); read-only after */
    struct scratch *scratch;         /* owned: scratch files and local directories */
    struct fuse_operations next_ops; /* the table fs_view_wrap's guards forward
                                 * to (fs_operations); read-only after */
    struct fs_forget *forget;        /* owned: keeps the names the kernel holds bounded */
    struct http_pace *pace;          /* owned: the request rate the store's and
                                 * write-behind's clients share (-o max_rps) */
    struct fs_handles *handles;      /* owned: open files (write handles also by path), conflicts */
    struct view_pending *views;      /* owned: query views looked up, waiting for readdir */
    struct prefetch *prefetch;       /* owned: partition listings fetched ahead (NULL: off) */
    double attr_timeout;             /* seconds the kernel keeps a stat without asking */
    time_t mount_time;               /* mtime of directories */
    uid_t uid;                       /* owner of every file: set by open_mount, and by
                                 * aztfs_init before any other callback */
    gid_t gid;                       /* as uid */
    mode_t file_mode;                /* permission bits of entity files (-o file_mode=, umask=) */
    mode_t dir_mode;                 /* and of directories (-o dir_mode=, umask=) */
    int ino32;                       /* -o ino32: inode numbers folded to 32 bits */
};

/* The mount the calling thread's request serves (fs/lowlevel.c); NULL on
 * a thread that serves none. */
struct aztfs *fs_ctx(void);

/* Was the request the calling thread serves interrupted (the process
 * waiting for it got a signal: ^C, SIGKILL)? 0 on a thread that serves
 * none. */
int fs_interrupted(void);

/* The operations table for mount A (fs/fuseops.c): OUT filled, and A's
 * next_ops (what the read-only wrapper forwards to) set. */
void fs_operations(struct aztfs *a, struct fuse_operations *out);

/* The session that serves mount A on libfuse's low-level API
 * (fs/lowlevel.c), ARGS its options: A's operations table (a->ops) is
 * set, and A is the session's user data. NULL after libfuse's message. */
struct fuse_session *fs_session_new(struct fuse_args *args, struct aztfs *a);

/* The mount's session answered the kernel's INIT (fs/fuseops.c): the
 * store's hooks reach it from now on. */
void fs_init(struct aztfs *a);

/* The FUSE loop of A has ended: from now on the store's hooks (asked from
 * any thread, also while write-behind sends what is left) no longer reach
 * the session, which is about to be freed (fs/fuseops.c). */
void fs_end_session(struct aztfs *a);

struct fs_forget;

/* A forgetter that keeps at most KEEP names in the kernel (0: never
 * tells it to drop any); LG (borrowed) hears each round at debug level.
 * NULL on ENOMEM. */
struct fs_forget *fs_forget_new(unsigned long keep, const struct logger *lg);

/* The kernel was given the last component of PATH as an entry of the
 * directory whose node id is PARENT (a lookup's answer, a readdirplus
 * entry, a create): keep it, to be dropped in turn. G may be NULL. */
void fs_forget_named(struct fs_forget *g, uint64_t parent, const char *path);

/* Start G's thread for the mount served by SE at MOUNTPOINT (absolute, as
 * realpath gives it; copied), after daemonizing. It tells the kernel a
 * name is stale with fuse_lowlevel_notify_inval_entry. It never tells it
 * of a name in use: a process's working or root directory (SHARED: with
 * -o allow_other, a process it cannot look at may be inside, so then no
 * directory's name), a mount point, a directory open through H (the
 * mount's handles, borrowed), or a name above one. 0 or -errno. */
int fs_forget_start(struct fs_forget *g, struct fuse_session *se, const char *mountpoint,
                    struct fs_handles *h, int shared);

/* Ask G's thread to end, and wait up to MS milliseconds for it: 1 when
 * it has ended (or never ran), 0 while it is still telling the kernel of
 * a name. That waits for the lock of the name's directory, which a
 * request queued and not yet served may hold: serve the queue
 * (fs_serve_queued) between the waits. The session's descriptor may be
 * closed (fuse_session_unmount) only once the thread has ended, or it
 * could write to a number reused by then. G may be NULL. */
int fs_forget_stopped(struct fs_forget *g, int ms);

/* Stop (if needed) and free G; NULL is fine. */
void fs_forget_free(struct fs_forget *g);

/* Serve the requests the kernel had queued for SE when its loop ended:
 * the RELEASE of a close() made just before SIGTERM, a FORGET, a lookup
 * that holds a directory's lock. Reads nothing that is not already
 * queued, serves at most MAX requests, and asks the session to end again
 * before it returns. Ends A's session first (fs_end_session), so that a
 * read among them stops at once. Call before the handles are closed.
 * Returns how many it served. */
unsigned fs_serve_queued(struct aztfs *a, struct fuse_session *se, unsigned max);

/* The kernel's node ids of a mount (fs/inode.c): NULL on ENOMEM. Free
 * once the session is gone. */
struct fs_inodes *fs_inodes_new(void);
void fs_inodes_free(struct fs_inodes *t);

/* The open handles of a mount (the write handles also by path) and its
 * recent conflicts, behind one lock. NULL on ENOMEM.
 * fs_handles_free frees H, closing first any handle still in it (see
 * fs_handles_close_all): call it once the FUSE loop has ended. */
struct fs_handles *fs_handles_new(void);
void fs_handles_free(struct fs_handles *h);

/* Close every handle of H still open, files and directories: once the
 * FUSE loop has ended (no callback runs any more), before what they use
 * (the store, the prefetch pool, the views' queries) is freed. */
void fs_handles_close_all(struct fs_handles *h);

/* ---- fs/scratch.c: files the mount keeps locally (editor/rsync temporaries) and local-only directories. */

struct scratch;

/* Attributes of a scratch file. */
struct scratch_attr {
    size_t size;
    mode_t mode; /* permission bits only */
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
ssize_t scratch_write(struct scratch *s, const char *path, const char *buf, size_t size, off_t off);
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
                  void (*fn)(void *ctx, const char *name, const struct scratch_attr *a), void *ctx);
/* Number of files directly inside DIR. */
size_t scratch_count(struct scratch *s, const char *dir);

/* Bytes the files count now (*used, at most *max_bytes) and the bound
 * given to scratch_new, for statfs. */
void scratch_usage(struct scratch *s, size_t *used, size_t *max_bytes);

/* Local directories (partitions made with mkdir, not yet in the table). */
int scratch_mkdir(struct scratch *s, const char *path);  /* 0, -EEXIST, -ENOMEM */
int scratch_is_dir(struct scratch *s, const char *path); /* 1 or 0 */
int scratch_rmdir(struct scratch *s, const char *path);  /* 0 or -ENOENT */
/* Does DIR hold a local directory directly inside it? 1 or 0. */
int scratch_has_dirs(struct scratch *s, const char *dir);
/* Call FN(ctx, name) for each local directory directly inside DIR. */
void scratch_list_dirs(struct scratch *s, const char *dir, void (*fn)(void *ctx, const char *name),
                       void *ctx);

#define SCRATCH_MAX_BYTES (8 * 1024 * 1024) /* one file; a multiple of SCRATCH_PAGE */
#define SCRATCH_PAGE 4096                   /* unit of a file's buffer */

#endif

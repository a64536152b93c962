/* fscommon.h - what the FUSE adapters share: open-file handles, the
 * pending list (write handles by path), the conflict ring, and the
 * attributes a path is shown with. */
#ifndef AZTFS_FSCOMMON_H
#define AZTFS_FSCOMMON_H

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

#include "buf.h"
#include "fs.h"
#include "fspath.h"

#define FILE_MODE (S_IFREG | 0644)
#define DIR_MODE  (S_IFDIR | 0755)
/* Largest entity file text accepted in an open handle (the entity limit is
 * checked at commit; this only bounds memory). */
#define OPEN_FILE_MAX (4 * 1024 * 1024)

/* What every handle given to the kernel starts with (an open file's, an
 * open directory's, fsdir.c's or fsview.c's): its place in the mount's
 * list of open handles, and how to free it. The list is what frees the
 * handles still open when the mount ends (the kernel's RELEASE may never
 * come: an unmount drops the requests not yet read, and SIGTERM ends the
 * session with files open). */
struct fs_open_link {
    struct fs_open_link *prev, *next;
    void (*close)(struct fs_open_link *l);    /* frees the whole handle */
};

/* State of one open file (fi->fh). */
struct open_file {
    struct fs_open_link link;  /* first: the handle is its link (fs_attach) */
    pthread_mutex_t lock;
    int scratch;              /* a scratch file: the bytes live in a->scratch */
    struct buf data;          /* entity text (read: as opened; write: edited copy) */
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
    struct open_file *pnext;  /* next in the pending list */
};

/* The handle FUSE keeps for FI (NULL when FI is NULL). */
static inline struct open_file *fs_handle(const struct fuse_file_info *fi)
{
    return fi ? (struct open_file *)(uintptr_t)fi->fh : NULL;
}

/* --- handles ------------------------------------------------------------------- */

/* Give the open directory L (CLOSE frees it) to the kernel as FI's handle,
 * and keep it in the list of the mount of the callback this runs in. */
void fs_dir_attach(struct fuse_file_info *fi, struct fs_open_link *l,
                   void (*close)(struct fs_open_link *l));

/* The kernel released directory handle L: out of the list, and closed. */
void fs_dir_release(struct fs_handles *h, struct fs_open_link *l);

/* Close every handle of H still open, files and directories: once the
 * FUSE loop has ended (no callback runs any more), before what they use
 * (the store, the prefetch pool, the views' queries) is freed. */
void fs_handles_close_all(struct fs_handles *h);

/* A new handle (zeroed, empty text, lock initialised), or NULL on ENOMEM. */
struct open_file *fs_open_file_new(void);
void fs_open_file_free(struct open_file *of);

/* Make OF's text *TEXT (LEN bytes, malloc'd and NUL-terminated, as the
 * store hands out entity text), taken without a copy: *TEXT is NULLed. */
void fs_handle_take_text(struct open_file *of, char **text, size_t len);

/* Make OF's text exactly LEN bytes (growth zero-filled). Returns 0, -EFBIG
 * past OPEN_FILE_MAX, or -ENOMEM; OF's text is unchanged on failure. OF's
 * lock held. */
int fs_handle_resize(struct open_file *of, size_t len);

/* Hand OF to the kernel as FI's handle for the file opened at PATH. Called
 * from the open or create callback: OF joins the handles of the mount it
 * serves (fs_ctx()), which own it until fs_handle_release frees it, or until
 * fs_handles_close_all does when the kernel never released it. */
void fs_attach(struct fuse_file_info *fi, struct open_file *of, const char *path);

/* The release of OF (NULL: nothing), a handle fs_attach gave to the mount
 * of H: OF leaves H (and its pending list) and is freed. */
void fs_handle_release(struct fs_handles *h, struct open_file *of);

/* A new handle holding the file at PATH: a new file another handle of
 * this mount has open and not yet saved (a copy of its bytes, is_new set),
 * else the entity (text and ETag, store_load_current; WRITING: an open that
 * may save). The kernel opens only names it knows, so a name that holds
 * neither is a stale entry of its cache
 * (the entity was deleted elsewhere, or a new file's save failed): -ESTALE,
 * and the kernel looks the name up again and opens (or, with O_CREAT,
 * creates) it once more. Returns 0 with *out, -ESTALE, or -errno. */
int fs_open_entity(struct aztfs *a, struct fspath *fp, const char *path, int writing,
                   struct open_file **out);

/* --- the mount's handles, the pending list, the conflict ring --------------------- */

/* The open handles of a mount (the write handles also by path) and its
 * recent conflicts, behind one lock. NULL on ENOMEM.
 * fs_handles_free frees H, closing first any handle still in it (see
 * fs_handles_close_all): call it once the FUSE loop has ended. */
struct fs_handles *fs_handles_new(void);
void fs_handles_free(struct fs_handles *h);

/* Write handles are registered by path while open, so that a stat by path
 * (futimens, chmod, ls) sees a new or changed entity before it is saved.
 * A handle shows an unsaved file while it is new (and its save did not
 * fail) or written since its last save.
 * fs_pending_add: 0 or -ENOMEM (fs_handle_release unregisters OF).
 * fs_pending_size: 0 and *len when PATH has such a handle, else -ENOENT. */
int fs_pending_add(struct fs_handles *h, const char *path, struct open_file *of);
int fs_pending_size(struct fs_handles *h, const char *path, size_t *len);

/* Is PATH a new file open and not yet saved? 1 or 0. */
int fs_pending_is_new(struct fs_handles *h, const char *path);

/* The bytes of the new file open at PATH and not yet saved: 0 with *data
 * (malloc'd, NUL-terminated) and *len, -ENOENT when there is none, or
 * -ENOMEM. */
int fs_pending_copy(struct fs_handles *h, const char *path, char **data, size_t *len);

/* Call FN(CTX, NAME) for each new file open and not yet saved directly
 * inside directory DIR (the lock held: FN must not call back). */
void fs_pending_list(struct fs_handles *h, const char *dir,
                     void (*fn)(void *ctx, const char *name), void *ctx);

/* Mark the write handles open on PATH detached: the name now belongs to
 * another entity (or none), so they no longer speak for it. */
void fs_pending_detach(struct fs_handles *h, const char *path);

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
int fs_pending_follow(struct fs_handles *h, const char *from, const char *to,
                      const char *old_etag, const char *new_etag);

/* The kernel answers ESTALE from a path operation (unlink, rename,
 * truncate) by revalidating the path and running the operation once more;
 * by then we would have read the new ETag, and the retry would overwrite or
 * delete the change we just refused to touch. So a conflict at PATH is
 * noted for a moment (fs_conflict_note; best effort), and the retry gets
 * the same answer: fs_conflict_take says 1 when one was noted for PATH in
 * the last moment (and consumes the note), else 0. */
void fs_conflict_note(struct fs_handles *h, const char *path);
int fs_conflict_take(struct fs_handles *h, const char *path);

/* --- attributes ------------------------------------------------------------------ */

/* Attributes of a directory, an entity file of LEN bytes, a scratch file. */
void fs_fill_dir_stat(const struct aztfs *a, const char *path, struct stat *st);
/* The inode number A shows for INO (fspath_ino): INO itself, or with
 * -o ino32 its two halves XORed (never 0; 1 only for the root), so that
 * 32-bit programs can stat every file. Two paths may then share a number. */
uint64_t fs_ino(const struct aztfs *a, uint64_t ino);

void fs_fill_file_stat(const struct aztfs *a, const char *path, size_t len,
                       struct timespec mtime, struct stat *st);
void fs_fill_scratch_stat(const struct aztfs *a, const char *path,
                          const struct scratch_attr *sa, struct stat *st);

/* The store's hook (store_set_hooks) for a path it dropped: the kernel
 * drops its attributes and entries for PATH too. CTX unused. */
void fs_kernel_forget(void *ctx, const char *path);

#endif

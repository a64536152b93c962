/* fs_i.h - the private face of the fs/ folder: its parts below, each
 * with its own contract. */
#ifndef AZTFS_FS_FS_I_H
#define AZTFS_FS_FS_I_H

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <stddef.h>

#include "util/util.h"
#include "fs/fs.h"
#include "names/names.h"

/* ---- context.c: the calling thread's request and mount (fs_ctx,
 * fs_interrupted in fs.h). */

/* The calling thread serves REQ (NULL: INIT, no request) of mount A from
 * now on; returns A. */
struct aztfs *fs_call_enter(struct aztfs *a, fuse_req_t req);

/* ... and no longer. */
void fs_call_leave(void);

/* ---- inode.c: the kernel's node ids, each a name in a directory,
 * counted as the kernel counts its lookups. One lock; ids are the
 * nodes' addresses (FUSE_ROOT_ID the root's). */

struct fs_inodes;

/* The kernel is given NAME in directory PARENT: its node (made when new)
 * counted once more, its id in *OUT. 0 or -ENOMEM. */
int fs_inodes_ref(struct fs_inodes *t, fuse_ino_t parent, const char *name, fuse_ino_t *out);

/* The kernel forgets NLOOKUP of INO's count: at 0 the node goes (once
 * nothing below it is counted either). */
void fs_inodes_forget(struct fs_inodes *t, fuse_ino_t ino, uint64_t nlookup);

/* The path of INO ("/" the root's) in *OUT (malloc'd; NULL on error): 0,
 * -ESTALE (its name, or one above it, was removed), -ENOMEM. */
int fs_inodes_path(struct fs_inodes *t, fuse_ino_t ino, char **out);

/* The path of NAME in directory PARENT, as fs_inodes_path. */
int fs_inodes_child_path(struct fs_inodes *t, fuse_ino_t parent, const char *name, char **out);

/* NAME in PARENT was removed: its node, if any, leaves the directory (a
 * path asked of it is -ESTALE), and goes when the kernel forgets it. */
void fs_inodes_remove(struct fs_inodes *t, fuse_ino_t parent, const char *name);

/* NAME in PARENT was renamed to NEWNAME in NEWPARENT (EXCHANGE: the two
 * swapped): the nodes follow; one the rename replaced is removed. 0 or
 * -ENOMEM (then nothing moved). */
int fs_inodes_rename(struct fs_inodes *t, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                     const char *newname, int exchange);

/* The id of the node at PATH: 0, or -ENOENT when the kernel holds none. */
int fs_inodes_find(struct fs_inodes *t, const char *path, fuse_ino_t *out);

/* How many nodes are in the table (the root left out). */
size_t fs_inodes_count(struct fs_inodes *t);

/* ---- handles.c: what the FUSE adapters share: open-file handles, the
 * pending list (write handles by path), the conflict ring, and the
 * attributes a path is shown with. */

#define FILE_MODE (S_IFREG | 0644)
#define DIR_MODE (S_IFDIR | 0755)
/* Largest entity file text accepted in an open handle (the entity limit is
 * checked at commit; this only bounds memory). */
#define OPEN_FILE_MAX (4 * 1024 * 1024)

/* What every handle given to the kernel starts with (an open file's, an
 * open directory's, fs/dir.c's or fs/viewops.c's): its place in the mount's
 * list of open handles, and how to free it. The list is what frees the
 * handles still open when the mount ends (the kernel's RELEASE may never
 * come: an unmount drops the requests not yet read, and SIGTERM ends the
 * session with files open). */
struct fs_open_link {
    struct fs_open_link *prev, *next;      /* guarded by fs_handles.lock */
    void (*close)(struct fs_open_link *l); /* frees the whole handle: set before
                                                 it joins the list */
    char *dir_path;                        /* an open directory's path (malloc'd by fs_dir_attach;
                       NULL for a file, or when out of memory) */
};

struct export_stream;
struct import_stream;

/* The kinds of open file; each is served by its struct fs_file_kind. */
enum fs_kind {
    FS_ENTITY,  /* an entity's text, read or edited in the handle's copy */
    FS_SCRATCH, /* a scratch file: the bytes live in a->scratch */
    FS_EXPORT,  /* a stream read: its export_stream in OF->stream */
    FS_IMPORT,  /* a stream written: its import_stream in OF->import */
    FS_KIND_COUNT
};

/* State of one open file (fi->fh). What is set before the handle is given
 * to the kernel (fs_attach) and never changes is read without a lock. */
struct open_file {
    struct fs_open_link link; /* first: the handle is its link (fs_attach) */
    pthread_mutex_t lock;
    enum fs_kind kind;            /* what it is (FS_ENTITY unless said): set
                                 before fs_attach */
    struct buf data;              /* entity text (read: as opened; write: edited copy);
                                 guarded by lock */
    char *etag;                   /* ETag of the entity as read at open, NULL if new;
                                 guarded by lock */
    int is_new;                   /* created by this handle and not yet in the table;
                                 guarded by lock */
    int written;                  /* changed since the last commit; guarded by lock */
    int ever_written;             /* write/truncate happened at all; guarded by lock */
    int failed;                   /* the last commit failed; guarded by lock */
    int refused;                  /* a write was refused (EFBIG): the text is not what
                                 was written, so no commit sends it; guarded by lock */
    char *placeholder;            /* the ETag of the empty entity this handle made
                                 before any content of it was saved (an O_EXCL
                                 create's under write-behind, or a flush before the
                                 first write): removed if the content is refused;
                                 guarded by lock */
    int replace;                  /* a new file renamed onto an entity: its saves
                                 replace it, even with -o merge; guarded by lock */
    int append;                   /* opened O_APPEND: writes go to the end of our copy;
                                 set before fs_attach */
    int trunc_open;               /* opened with O_TRUNC (bash's '>' flushes before
                                 writing); set before fs_attach */
    uint64_t ino;                 /* inode number of the name it was opened by; guarded
                                 by fs_handles.lock and lock (written with both
                                 held: fs_pending_follow) */
    int detached;                 /* its name was removed or replaced (unlink, or a
                                 rename onto it) while it was open; guarded by lock */
    char *path;                   /* registered path of a write handle (pending list);
                                 guarded by fs_handles.lock and lock (written with
                                 both held, read with either) */
    struct open_file *pnext;      /* next in the pending list; guarded by
                                 fs_handles.lock */
    unsigned refs;                /* walks of the pending list (fs/handles.c) that
                                 stand on it with the list's lock dropped, to
                                 wait for LOCK; guarded by fs_handles.lock */
    int released;                 /* the kernel released it while walked: the last
                                 walk frees it; guarded by fs_handles.lock */
    struct export_stream *stream; /* an export stream's handle (fs/stream.c):
                                     set before fs_attach, freed with OF */
    /* a stream opened for writing (fs/stream.c): set before fs_attach,
     * freed with OF (what it holds sent first) */
    struct import_stream *import;
};

/* How a handle of one kind is served (as curl's struct Curl_cftype): the
 * table of each kind (an entity's and a scratch file's in fs/fuseops.c,
 * fs_kind_export and fs_kind_import in fs/stream.c) is what fs/fuseops.c's
 * callbacks call through; nothing else asks a handle what it is. Each
 * returns as its callback does (0 or -errno; read and write the bytes),
 * PATH being the name the handle has now (NULL once removed). */
struct fs_file_kind {
    /* getattr by handle: 1 with *ST filled from what the handle holds, 0
     * to answer by PATH. NULL: by PATH. */
    int (*attr)(struct aztfs *a, const char *path, struct open_file *of, struct stat *st);
    /* NULL: -EBADF (the kind is never open for it) */
    int (*read)(const char *path, struct open_file *of, char *buf, size_t size, off_t off);
    int (*write)(const char *path, struct open_file *of, const char *buf, size_t size, off_t off);
    /* truncate by handle (SIZE >= 0). NULL: by PATH, as with no handle. */
    int (*truncate)(const char *path, struct open_file *of, off_t size);
    /* a close of one copy of the descriptor; fsync. NULL: 0, nothing to do */
    int (*flush)(const char *path, struct open_file *of);
    int (*fsync)(const char *path, struct open_file *of);
    /* the last close, before the handle is freed. NULL: nothing. */
    void (*release)(const char *path, struct open_file *of);
};

extern const struct fs_file_kind fs_kind_export, fs_kind_import;

/* getattr by an entity's (or an import stream's) handle OF: its unsaved
 * text shows as it is (1, *ST filled), else 0. */
int fs_handle_attr(struct aztfs *a, const char *path, struct open_file *of, struct stat *st);

/* The handle FUSE keeps for FI (NULL when FI is NULL). */
static inline struct open_file *fs_handle(const struct fuse_file_info *fi)
{
    return fi ? (struct open_file *)(uintptr_t)fi->fh : NULL;
}

/* --- handles ------------------------------------------------------------------- */

/* Give the open directory L at PATH (CLOSE frees it) to the kernel as FI's
 * handle, and keep it in the list of the mount of the callback this runs
 * in (with its path: fs_handles_each_dir). */
void fs_dir_attach(struct fuse_file_info *fi, struct fs_open_link *l,
                   void (*close)(struct fs_open_link *l), const char *path);

/* Call FN(CTX, PATH) for the path of each directory open through H (H's
 * lock held: FN must not call back). Returns -ENOMEM when one's path is not
 * known (out of memory at its open), else 0. */
int fs_handles_each_dir(struct fs_handles *h, void (*fn)(void *ctx, const char *path), void *ctx);

/* The kernel released directory handle L: out of the list, and closed. */
void fs_dir_release(struct fs_handles *h, struct fs_open_link *l);

/* A new handle (zeroed, empty text, lock initialised), or NULL on ENOMEM. */
struct open_file *fs_open_file_new(void);
void fs_open_file_free(struct open_file *of);

/* Make OF's text *TEXT (LEN bytes, malloc'd and NUL-terminated, as the
 * store hands out entity text), taken without a copy: *TEXT is NULLed. */
void fs_handle_take_text(struct open_file *of, char **text, size_t len);

/* Make OF's text exactly LEN bytes (growth zero-filled). Returns 0, -EFBIG
 * past OPEN_FILE_MAX, or -ENOMEM; OF's text is unchanged on failure. OF's
 * lock held, or OF not yet given to the kernel (fs_open_write): not
 * asserted. */
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
void fs_pending_list(struct fs_handles *h, const char *dir, void (*fn)(void *ctx, const char *name),
                     void *ctx);

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
int fs_pending_follow(struct fs_handles *h, const char *from, const char *to, const char *old_etag,
                      const char *new_etag);

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

void fs_fill_file_stat(const struct aztfs *a, const char *path, size_t len, struct timespec mtime,
                       struct stat *st);
void fs_fill_scratch_stat(const struct aztfs *a, const char *path, const struct scratch_attr *sa,
                          struct stat *st);

/* The store's hook (store_set_hooks) for a path it dropped: the kernel
 * drops its attributes of PATH too (CTX: the mount), when the change was
 * a request's of the calling thread. */
void fs_kernel_forget(void *ctx, const char *path);

/* ---- inuse.c: the names under the mount the kernel has in use (a
 * process's working or root directory, a mount point, an open directory),
 * which fs/forget.c never tells it are stale. */

struct fs_inuse {
    char **paths; /* in use, below the mount point ("/T/P"); malloc'd */
    size_t n, cap;
    int unknown; /* a process's directories could not be read: any
                       directory may be in use */
};

/* Gather into *U (cleared first) what is in use under MOUNTPOINT (absolute,
 * as realpath gives it): the mount points inside it, the directories open
 * through H (may be NULL), and with PROCS the working and root directory of
 * every process (SHARED: other users may enter the mount, so a process
 * whose links cannot be read sets u->unknown). 0 or -errno (*U then holds
 * part of it: trust none of it). Release with fs_inuse_clear. */
int fs_inuse_collect(struct fs_inuse *u, const char *mountpoint, struct fs_handles *h, int shared,
                     int procs);

/* Is PATH (below the mount point), or a name under it, in use? 1 or 0. */
int fs_inuse_holds(const struct fs_inuse *u, const char *path);

/* May PATH name a directory (by where it is in the tree)? 1 or 0. */
int fs_inuse_may_be_dir(const char *path);

void fs_inuse_clear(struct fs_inuse *u);

/* ---- dir.c: FUSE directory callbacks: listings streamed page by page
 * through an open directory handle, mkdir and rmdir of tables and
 * partitions. Each returns 0 (readdir: 0 when done or the buffer is full)
 * or -errno, as libfuse's struct fuse_operations says. */

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
/* A change OP ("mkdir", "create", ...) of PATH refused with RC (-errno)
 * for the reason WHY, a sentence: one log line "PATH: WHY", and the
 * failure kept for user.aztfs.errors. Returns RC. */
int fs_refused(struct aztfs *a, const char *op, const char *path, int rc, const char *why);
/* OP of PATH refused with -EINVAL: its last component is not the one
 * spelling of a key (doc/NAMES.md, "One name per key"); the reason names
 * the key the component spells literally and that key's name
 * ("50%.json": the key '50%' is named '50%25.json'). Returns -EINVAL. */
int fs_refuse_name(struct aztfs *a, const char *op, const char *path);
/* rmdir: a table or partition that holds no entity (-ENOTEMPTY). */
int fs_rmdir(const char *path);

/* ---- fs/viewops.c: FUSE callbacks for query views (/t/.where/FILTER/...,
 * /t/pk/.where/FILTER/...; store/store.h): stat, open for reading and listing
 * them, and EROFS for every change. The directory and change callbacks
 * here front the ordinary ones (fs/dir.c, fs/write.c): a path outside a view
 * is handed on as it is. Each returns 0 or -errno, as libfuse's struct
 * fuse_operations says. */

/* getattr of PATH, parsed as FP (FSP_WHERE and deeper): ".where" when its
 * table (partition) exists, a view directory once its listing is had (a
 * filter the service refuses: -EINVAL, logged), an entity the view lists
 * with the size and mtime of the entity outside the view. */
int fs_view_attr(struct aztfs *a, const char *path, struct fspath *fp, struct stat *st);

/* open of PATH (FP: FSP_WHERE and deeper): an entity of the view, read as
 * the entity outside it is; -EROFS (logged) for writing, -EISDIR for a
 * directory. */
int fs_view_open(struct aztfs *a, const char *path, struct fspath *fp, struct fuse_file_info *fi);

/* Directories in a view (fspath_in_view): ".where" lists nothing, a view
 * lists what its query returned (complete at opendir); fs/fuseops.c sends
 * other paths to fs/dir.c. Released as any directory (fs_releasedir). */
int fs_view_opendir(const char *path, struct fuse_file_info *fi);
int fs_view_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                    struct fuse_file_info *fi, enum fuse_readdir_flags flags);

/* Wrap OPS once (as sshfs's cache_wrap): every change (create, truncate by
 * name, unlink, rename, mkdir, rmdir, chmod, chown, utimens) at a path in
 * a query view or at an export stream gets -EROFS with one log line
 * (fs_refuse); any other goes on to the table struct aztfs.next_ops holds
 * (what OPS was before). */
void fs_view_wrap(struct fuse_operations *ops);

/* -EROFS for change OP ("create", "unlink", ...) at PATH, in a query view
 * or an export stream, with one log line saying which is read-only. */
int fs_refuse(const char *op, const char *path);

/* ---- stream.c: FUSE callbacks for streams (/t/.ndjson, /t/pk/.ndjson,
 * /t/.where/F/.ndjson, /t/pk/.where/F/.ndjson, /t/.where/F/pk/.ndjson;
 * doc/USAGE.md, "Export streams" and "Import"): never listed, read in
 * order (export), a table's or a partition's written in order (import).
 * Other changes are refused by fs/viewops.c's callbacks (fs_refuse). */

/* getattr of stream PATH (FP: FSP_STREAM, FSP_VIEW_STREAM): a regular file
 * of size 0 (its length is known only once read: read it to its end),
 * with the mount's file mode (a view's less its write bits), the time now;
 * when its table, partition (or a partition made with mkdir) and view
 * stand (export_exists). 0 or -errno. */
int fs_stream_attr(struct aztfs *a, const char *path, struct fspath *fp, struct stat *st);

/* open of stream PATH (FP as for fs_stream_attr): for reading, the query
 * started and its first page fetched (export_open: its failures are the
 * open's); write-only, a table's or a partition's stream imports
 * (import_open: Insert with O_APPEND, else Insert Or Replace; O_TRUNC
 * changes nothing); -EROFS (logged) for writing a view's, -EINVAL (logged)
 * for O_RDWR. */
int fs_stream_open(struct aztfs *a, const char *path, struct fspath *fp, struct fuse_file_info *fi);

/* ---- write.c: FUSE callbacks that change files: create, open for writing,
 * write, truncate, the commits at flush/fsync/release, unlink, rename,
 * chmod, chown, utimens. Each returns 0 (write: the bytes written) or
 * -errno, as libfuse's struct fuse_operations says; doc/USAGE.md,
 * "Writing", says what each does. */

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
int fs_open_write(struct aztfs *a, const char *path, struct fspath *fp, struct fuse_file_info *fi);

/* Write into entity handle OF's copy: SIZE, or -EFBIG past OPEN_FILE_MAX
 * (fs_kind_entity's write). */
int fs_entity_write(const char *path, struct open_file *of, const char *buf, size_t size,
                    off_t off);
/* Truncate entity handle OF's copy (fs_kind_entity's truncate). */
int fs_entity_truncate(const char *path, struct open_file *of, off_t size);
/* Truncate PATH to SIZE (>= 0) by its name (fs/fuseops.c has asked the
 * handle's kind first): a scratch file cut, an entity changed and saved
 * at once (guarded by its ETag). */
int fs_truncate(const char *path, off_t size);
/* Commit entity handle OF's changes in one request (fs_entity_fsync: the
 * same, then, with write-behind, until the service has them); a new file
 * flushed before any write (touch) is inserted now. */
int fs_entity_flush(const char *path, struct open_file *of);
int fs_entity_fsync(const char *path, struct open_file *of);

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

/* ---- xattr.c: FUSE extended-attribute callbacks: the mount's counters and
 * recent failures on the root, each entity's ETag and Timestamp. */

#define XATTR_ERRORS "user.aztfs.errors"       /* root: failring_json */
#define XATTR_PENDING "user.aztfs.pending"     /* root: write-behind's queue */
#define XATTR_DISCARD "user.aztfs.discard"     /* root, set: drop a failed change */
#define XATTR_ETAG "user.aztfs.etag"           /* entity: its ETag as the service gave it */
#define XATTR_TIMESTAMP "user.aztfs.timestamp" /* entity: its Timestamp, UTC, 100 ns */

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
int fs_setxattr(const char *path, const char *name, const char *value, size_t size, int flags);
int fs_removexattr(const char *path, const char *name);

#endif

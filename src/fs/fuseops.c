/* fs/fuseops.c - the path-level read-side callbacks (getattr, open, read, release, statfs) and the operations table fs/lowlevel.c calls. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "fs/fs_i.h"
#include "store/store.h"

/* Should a read stop? When the FUSE request it serves was interrupted (the
 * process waiting for it got a signal: ^C, SIGKILL), or the mount is going
 * away (unmount, SIGTERM). Asked from any thread. */
static int aztfs_cancelled(void *ctx)
{
    struct aztfs *a = ctx;
    int exited;

    if (fs_interrupted())
        return 1;
    pthread_mutex_lock(&a->fuse_lock);
    exited = !a->se || fuse_session_exited(a->se);
    pthread_mutex_unlock(&a->fuse_lock);
    return exited;
}

/* See fs.h. */
void fs_end_session(struct aztfs *a)
{
    pthread_mutex_lock(&a->fuse_lock);
    a->se = NULL;
    pthread_mutex_unlock(&a->fuse_lock);
}

/* See fs.h. */
unsigned fs_serve_queued(struct aztfs *a, struct fuse_session *se, unsigned max)
{
    struct fuse_buf buf = { .mem = NULL };
    struct pollfd p = { .fd = fuse_session_fd(se), .events = POLLIN };
    unsigned n = 0;

    fs_end_session(a);
    /* libfuse drops what it reads once the session has exited: clear that,
     * read only what poll says is there, then exit again */
    fuse_session_reset(se);
    while (n < max && poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
        if (fuse_session_receive_buf(se, &buf) <= 0)
            break; /* unmounted (ENODEV) or a new signal */
        fuse_session_process_buf(se, &buf);
        n++;
    }
    free(buf.mem);
    fuse_session_exit(se);
    return n;
}

/* See fs.h. The kernel's timeouts and the handling of a name removed
 * while open (hard_remove: open handles hold their own copy) are
 * fs/lowlevel.c's answers; direct_io is every handle's (fs_attach). */
void fs_init(struct aztfs *a)
{
    store_set_hooks(&a->store, aztfs_cancelled, fs_kernel_forget, a);
}

/* Attributes of the open file OF whose name is gone (libfuse hands a NULL
 * path for it): its own copy's size, no links. */
static void fill_handle_stat(const struct aztfs *a, struct open_file *of, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = fs_ino(a, of->ino);
    st->st_mode = S_IFREG | a->file_mode;
    st->st_nlink = 0;
    st->st_uid = a->uid;
    st->st_gid = a->gid;
    pthread_mutex_lock(&of->lock);
    st->st_size = (off_t)of->data.len; /* 0 but for an entity's */
    pthread_mutex_unlock(&of->lock);
    st->st_blksize = 4096;
    st->st_blocks = (st->st_size + 511) / 512;
    clock_gettime(CLOCK_REALTIME, &st->st_mtim);
    st->st_atim = st->st_ctim = st->st_mtim;
}

/* --- the entity's and the scratch file's kinds (fs_i.h) --------------------------------- */

/* An entity handle's copy, as opened (reading) or as edited (writing). */
static int entity_read(const char *path, struct open_file *of, char *buf, size_t size, off_t off)
{
    int rc;

    (void)path;
    pthread_mutex_lock(&of->lock);
    rc = (int)buf_read(&of->data, (size_t)off, buf, size);
    pthread_mutex_unlock(&of->lock);
    return rc;
}

/* A write handle still named PATH ends (fs_release_write). */
static void entity_release(const char *path, struct open_file *of)
{
    if (of->path && path)
        fs_release_write(path, of);
}

static const struct fs_file_kind kind_entity = {
    .attr = fs_handle_attr,
    .read = entity_read,
    .write = fs_entity_write,
    .truncate = fs_entity_truncate,
    .flush = fs_entity_flush,
    .fsync = fs_entity_fsync,
    .release = entity_release,
};

/* A scratch file's bytes live in a->scratch by name; a removed one's went
 * with its name. */
static int scratch_file_read(const char *path, struct open_file *of, char *buf, size_t size,
                             off_t off)
{
    (void)of;
    return path ? (int)scratch_read(fs_ctx()->scratch, path, buf, size, off) : -ESTALE;
}

static int scratch_file_write(const char *path, struct open_file *of, const char *buf, size_t size,
                              off_t off)
{
    (void)of;
    return path ? (int)scratch_write(fs_ctx()->scratch, path, buf, size, off) : -ESTALE;
}

/* Attributes, truncate: by name; nothing to commit. */
static const struct fs_file_kind kind_scratch = {
    .read = scratch_file_read,
    .write = scratch_file_write,
};

/* What serves handle OF: its kind's table. */
static const struct fs_file_kind *kind_of(const struct open_file *of)
{
    static const struct fs_file_kind *const kinds[FS_KIND_COUNT] = {
        [FS_ENTITY] = &kind_entity,
        [FS_SCRATCH] = &kind_scratch,
        [FS_EXPORT] = &fs_kind_export,
        [FS_IMPORT] = &fs_kind_import,
    };

    return kinds[of->kind];
}

/* getattr of PATH, parsed as FP, by what it names. */
static int path_attr(struct aztfs *a, const char *path, struct fspath *fp, struct stat *st)
{
    struct scratch_attr sa;
    struct timespec mt;
    size_t len;
    int rc = 0;

    switch (fp->kind) {
    case FSP_ROOT:
        fs_fill_dir_stat(a, path, st);
        break;
    case FSP_TABLE:
        if ((rc = store_table_exists(&a->store, fp->table)) == 0)
            fs_fill_dir_stat(a, path, st);
        break;
    case FSP_PARTITION:
        rc = scratch_is_dir(a->scratch, path) ? 1 : store_partition_exists(&a->store, fp, 0);
        rc = rc < 0 ? rc : rc == 1 ? 0 : -ENOENT;
        if (rc == 0)
            fs_fill_dir_stat(a, path, st);
        break;
    case FSP_ENTITY:
        if (fs_pending_size(a->handles, path, &len) == 0) { /* open, unsaved */
            clock_gettime(CLOCK_REALTIME, &mt);
            fs_fill_file_stat(a, path, len, mt, st);
        } else if ((rc = store_entity_attr(&a->store, fp, path, &len, &mt)) == 0) {
            fs_fill_file_stat(a, path, len, mt, st);
        }
        break;
    case FSP_SCRATCH:
        if ((rc = scratch_stat(a->scratch, path, &sa)) == 0)
            fs_fill_scratch_stat(a, path, &sa, st);
        break;
    case FSP_STREAM:
    case FSP_VIEW_STREAM:
        rc = fs_stream_attr(a, path, fp, st);
        break;
    default: /* FSP_WHERE and deeper: a query view */
        rc = fs_view_attr(a, path, fp, st);
        break;
    }
    return rc;
}

static int aztfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct open_file *of = fs_handle(fi);
    struct fspath fp;
    int rc;

    if (!path) { /* an open file whose name was removed (hard_remove) */
        if (!of)
            return -ESTALE;
        fill_handle_stat(a, of, st);
        return 0;
    }
    if (of && kind_of(of)->attr && kind_of(of)->attr(a, path, of, st))
        return 0;
    if ((rc = fspath_parse(path, &fp)) < 0) {
        /* the kernel looks a name up before it creates, makes or renames
         * onto it: a name no key can have is refused here, once */
        const char *why = rc == -EINVAL || rc == -ENAMETOOLONG ? fspath_invalid_reason(path) : NULL;

        char msg[256];

        if (why) {
            snprintf(msg, sizeof(msg), "not a valid name: %s", why);
            fs_refused(a, "look up", path, rc, msg);
        }
        return rc;
    }
    rc = path_attr(a, path, &fp, st);
    fspath_free(&fp);
    return rc;
}

/* Open scratch file PATH (emptied with O_TRUNC). */
static int open_scratch(struct aztfs *a, const char *path, struct fuse_file_info *fi)
{
    struct open_file *of = NULL;
    struct scratch_attr sa;
    int rc = scratch_stat(a->scratch, path, &sa);

    if (rc == 0 && (fi->flags & O_TRUNC))
        rc = scratch_truncate(a->scratch, path, 0);
    if (rc == 0 && !(of = fs_open_file_new()))
        rc = -ENOMEM;
    if (rc == 0) {
        of->kind = FS_SCRATCH;
        fs_attach(fi, of, path);
    }
    return rc;
}

static int aztfs_open(const char *path, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct open_file *of;
    struct fspath fp;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind == FSP_STREAM || fp.kind == FSP_VIEW_STREAM)
        rc = fs_stream_open(a, path, &fp, fi);
    else if (fp.kind >= FSP_WHERE)
        rc = fs_view_open(a, path, &fp, fi);
    else if (fp.kind == FSP_SCRATCH)
        rc = open_scratch(a, path, fi);
    else if (fp.kind != FSP_ENTITY)
        rc = -EISDIR;
    else if ((fi->flags & O_ACCMODE) != O_RDONLY)
        rc = fs_open_write(a, path, &fp, fi);
    else if ((rc = fs_open_entity(a, &fp, path, 0, &of)) == 0) {
        fs_attach(fi, of, path);
        fi->noflush = 1; /* a read-only handle has nothing to commit at close */
    }
    fspath_free(&fp);
    return rc;
}

/* --- the callbacks: through the handle's kind ------------------------------------------- */

static int aztfs_read(const char *path, char *buf, size_t size, off_t off,
                      struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);

    if (off < 0)
        return -EINVAL;
    return kind_of(of)->read ? kind_of(of)->read(path, of, buf, size, off) : -EBADF;
}

static int aztfs_write(const char *path, const char *buf, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);

    if (off < 0)
        return -EINVAL;
    return kind_of(of)->write ? kind_of(of)->write(path, of, buf, size, off) : -EBADF;
}

static int aztfs_flush(const char *path, struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);

    return of && kind_of(of)->flush ? kind_of(of)->flush(path, of) : 0;
}

static int aztfs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);

    (void)datasync;
    return of && kind_of(of)->fsync ? kind_of(of)->fsync(path, of) : 0;
}

/* Through a handle whose kind cuts its own way (an entity's copy, an
 * import stream's '>'), else by name (fs/write.c); fs_view_wrap's guard
 * has refused a read-only name already. */
static int aztfs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);

    if (size < 0)
        return -EINVAL;
    if (of && kind_of(of)->truncate)
        return kind_of(of)->truncate(path, of, size);
    return fs_truncate(path, size);
}

/* Directories: a query view's (fs/viewops.c) or the tree's (fs/dir.c);
 * both are released alike. */
static int aztfs_opendir(const char *path, struct fuse_file_info *fi)
{
    return fspath_in_view(path) ? fs_view_opendir(path, fi) : fs_opendir(path, fi);
}

static int aztfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                         struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    return path && fspath_in_view(path) ? fs_view_readdir(path, buf, filler, off, fi, flags) :
                                          fs_readdir(path, buf, filler, off, fi, flags);
}

static int aztfs_release(const char *path, struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);

    if (of && kind_of(of)->release)
        kind_of(of)->release(path, of);
    fs_handle_release(fs_ctx()->handles, of);
    return 0;
}

/* The service tells no size, used or free, so df shows a file system of
 * size 0 (as for proc or sysfs; plain `df` leaves it out, `df MOUNTPOINT`
 * shows it), not made-up terabytes. No count of files either. */
static int aztfs_statfs(const char *path, struct statvfs *sv)
{
    (void)path;
    memset(sv, 0, sizeof(*sv));
    sv->f_bsize = 4096;
    sv->f_frsize = 4096;
    sv->f_namemax = 255;
    return 0;
}

/* The table before the read-only wrapper (fs_view_wrap). */
static const struct fuse_operations base_ops = {
    .getxattr = fs_getxattr,
    .listxattr = fs_listxattr,
    .setxattr = fs_setxattr,
    .removexattr = fs_removexattr,
    .getattr = aztfs_getattr,
    .opendir = aztfs_opendir,
    .readdir = aztfs_readdir,
    .releasedir = fs_releasedir,
    .open = aztfs_open,
    .read = aztfs_read,
    .release = aztfs_release,
    .statfs = aztfs_statfs,
    .create = fs_create,
    .write = aztfs_write,
    .truncate = aztfs_truncate,
    .flush = aztfs_flush,
    .fsync = aztfs_fsync,
    .fsyncdir = fs_fsyncdir,
    .unlink = fs_unlink,
    .mkdir = fs_mkdir,
    .rmdir = fs_rmdir,
    .rename = fs_rename,
    .chmod = fs_chmod,
    .chown = fs_chown,
    .utimens = fs_utimens,
};

/* See fs/fs.h. */
void fs_operations(struct aztfs *a, struct fuse_operations *out)
{
    a->next_ops = base_ops;
    *out = base_ops;
    fs_view_wrap(out);
}

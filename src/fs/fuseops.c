/* fs/fuseops.c - FUSE read-side callbacks (getattr, open, read, release, statfs, init) and the operations table. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "fs/fs_i.h"
#include <fuse_lowlevel.h> /* fuse_session_exited, _receive_buf */
#include "store/store.h"

/* Should a read stop? When the FUSE request it serves was interrupted (the
 * process waiting for it got a signal: ^C, SIGKILL), or the mount is going
 * away (unmount, SIGTERM). Asked from any thread. */
static int aztfs_cancelled(void *ctx)
{
    struct aztfs *a = ctx;
    int exited;

    if (fuse_interrupted())
        return 1;
    pthread_mutex_lock(&a->fuse_lock);
    exited = !a->fuse || fuse_session_exited(fuse_get_session(a->fuse));
    pthread_mutex_unlock(&a->fuse_lock);
    return exited;
}

/* See fs.h. */
void fs_end_session(struct aztfs *a)
{
    pthread_mutex_lock(&a->fuse_lock);
    a->fuse = NULL;
    pthread_mutex_unlock(&a->fuse_lock);
}

/* See fs.h. */
unsigned fs_serve_queued(struct aztfs *a, struct fuse *f, unsigned max)
{
    struct fuse_session *se = fuse_get_session(f);
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

static void *aztfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    struct aztfs *a = fs_ctx();

    pthread_mutex_lock(&a->fuse_lock);
    a->fuse = fuse_get_context()->fuse;
    pthread_mutex_unlock(&a->fuse_lock);
    if (cfg->set_uid) /* -o uid=/gid=: chown to what is shown works */
        a->uid = cfg->uid;
    if (cfg->set_gid)
        a->gid = cfg->gid;
    store_set_hooks(&a->store, aztfs_cancelled, fs_kernel_forget, a);

    cfg->use_ino = 1;
    cfg->readdir_ino = 1;
    cfg->entry_timeout = a->store.cache_timeout;
    /* The kernel answers stat itself for attr_timeout: every change made
     * through the mount drops its copy (fs_kernel_forget), and readdirplus
     * refreshes it, so rsync's lstat after a listing costs no round trip. */
    cfg->attr_timeout = a->attr_timeout;
    cfg->negative_timeout = a->store.negative_timeout;
    cfg->direct_io = 1; /* reads return the entity as opened: see doc/ */
    cfg->nullpath_ok = 0;
    /* rm of a file whose release is still on its way (close(2) does not
     * wait for it) must delete the entity, not rename it to .fuse_hidden*:
     * open handles hold their own copy */
    cfg->hard_remove = 1;
    return a;
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
    st->st_size = of->scratch ? 0 : (off_t)of->data.len;
    pthread_mutex_unlock(&of->lock);
    st->st_blksize = 4096;
    st->st_blocks = (st->st_size + 511) / 512;
    clock_gettime(CLOCK_REALTIME, &st->st_mtim);
    st->st_atim = st->st_ctim = st->st_mtim;
}

/* getattr through entity handle OF: unsaved changes show as they are (1,
 * *st filled); else 0 (the entity as stored is asked for by path). */
static int handle_attr(struct aztfs *a, const char *path, struct open_file *of, struct stat *st)
{
    struct timespec mt;
    int unsaved;

    pthread_mutex_lock(&of->lock);
    unsaved = of->written || of->is_new || !of->path;
    if (unsaved) {
        clock_gettime(CLOCK_REALTIME, &mt);
        fs_fill_file_stat(a, path, of->data.len, mt, st);
    }
    pthread_mutex_unlock(&of->lock);
    return unsaved;
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
    if (of && !of->scratch && !of->stream && handle_attr(a, path, of, st))
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
    if (rc == 0)
        fs_forget_named(a->forget, path); /* a lookup's or a create's answer */
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
        of->scratch = 1;
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

static int aztfs_read(const char *path, char *buf, size_t size, off_t off,
                      struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);
    int rc = 0;

    if (off < 0)
        return -EINVAL;
    if (of->stream)
        return fs_stream_read(of, buf, size, off);
    if (of->scratch) /* a removed scratch file's bytes went with its name */
        return path ? (int)scratch_read(fs_ctx()->scratch, path, buf, size, off) : -ESTALE;
    pthread_mutex_lock(&of->lock);
    rc = (int)buf_read(&of->data, (size_t)off, buf, size);
    pthread_mutex_unlock(&of->lock);
    return rc;
}

/* A stream opened for writing imports (fs/stream.c); other files are
 * written as fs/write.c says. */
static int aztfs_write(const char *path, const char *buf, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);

    return of && of->import && off >= 0 ? fs_stream_write(of, buf, size, off) :
                                          fs_write(path, buf, size, off, fi);
}

static int aztfs_flush(const char *path, struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);

    return of && of->import ? fs_stream_flush(of) : fs_flush(path, fi);
}

static int aztfs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);

    return of && of->import ? fs_stream_flush(of) : fs_fsync(path, datasync, fi);
}

static int aztfs_release(const char *path, struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);

    if (of && !of->scratch && of->path && path)
        fs_release_write(path, of);
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

const struct fuse_operations aztfs_ops = {
    .getxattr = fs_getxattr,
    .listxattr = fs_listxattr,
    .setxattr = fs_setxattr,
    .removexattr = fs_removexattr,
    .init = aztfs_init,
    .getattr = aztfs_getattr,
    .opendir = fs_view_opendir,
    .readdir = fs_view_readdir,
    .releasedir = fs_view_releasedir,
    .open = aztfs_open,
    .read = aztfs_read,
    .release = aztfs_release,
    .statfs = aztfs_statfs,
    .create = fs_view_create,
    .write = aztfs_write,
    .truncate = fs_view_truncate,
    .flush = aztfs_flush,
    .fsync = aztfs_fsync,
    .fsyncdir = fs_fsyncdir,
    .unlink = fs_view_unlink,
    .mkdir = fs_view_mkdir,
    .rmdir = fs_view_rmdir,
    .rename = fs_view_rename,
    .chmod = fs_view_chmod,
    .chown = fs_view_chown,
    .utimens = fs_view_utimens,
};

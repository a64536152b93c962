/* fs/viewops.c - FUSE callbacks for query views: stat, read, list; EROFS for changes (fs_i.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs_i.h"
#include "store/store.h"

/* An open view directory: its names as they come. */
struct view_dir {
    struct fs_open_link link; /* first: the handle is its link (fs_dir_attach) */
    pthread_mutex_t lock;
    struct view_reader *r; /* NULL for ".where" (it lists nothing); set by
                                   fs_view_opendir, used with lock held */
    int err;               /* a page failed: later calls fail the same; guarded
                                   by lock */
};

static void view_dir_free(struct view_dir *d)
{
    if (!d)
        return;
    pthread_mutex_destroy(&d->lock);
    view_reader_free(d->r);
    free(d);
}

/* Close an open view directory (released, or open when the mount ends). */
static void view_dir_close(struct fs_open_link *l)
{
    view_dir_free((struct view_dir *)l);
}

/* See fs_i.h. */
int fs_refuse(const char *op, const char *path)
{
    const char *what =
        fspath_is_stream(path) ? "an export stream is read-only" : "a query view is read-only";
    struct failure f = { op, path, EROFS, 0, NULL, what };

    log_error(&fs_ctx()->store.log, "%s %s: %s", op, path, what);
    failring_add(fs_ctx()->store.log.failures, &f); /* user.aztfs.errors */
    return -EROFS;
}

/* Is PATH read-only by its names: in a query view, or an export stream? */
static int read_only(const char *path)
{
    return path && (fspath_in_view(path) || fspath_is_stream(path));
}

/* See fs/fs_i.h. */
int fs_view_attr(struct aztfs *a, const char *path, struct fspath *fp, struct stat *st)
{
    struct fspath nfp;
    struct timespec mt;
    char *npath;
    size_t len;
    int rc;

    switch (fp->kind) {
    case FSP_WHERE:
        rc = view_where_exists(&a->store, fp);
        break;
    case FSP_VIEW:
    case FSP_VIEW_PARTITION:
        rc = view_lookup(&a->store, a->views, fp, path);
        break;
    case FSP_VIEW_ENTITY:
        if ((rc = view_entity(&a->store, a->views, fp, &nfp, &npath)) < 0)
            return rc;
        rc = store_entity_attr(&a->store, &nfp, npath, &len, &mt);
        if (rc == 0)
            fs_fill_file_stat(a, path, len, mt, st);
        fspath_free(&nfp);
        free(npath);
        return rc;
    default:
        return -ENOENT;
    }
    if (rc == 0)
        fs_fill_dir_stat(a, path, st);
    return rc;
}

/* See fs/fs_i.h. */
int fs_view_open(struct aztfs *a, const char *path, struct fspath *fp, struct fuse_file_info *fi)
{
    struct open_file *of;
    struct fspath nfp;
    char *npath;
    int rc;

    if (fp->kind != FSP_VIEW_ENTITY)
        return -EISDIR;
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
        return fs_refuse("write", path);
    if ((rc = view_entity(&a->store, a->views, fp, &nfp, &npath)) < 0)
        return rc;
    if ((rc = fs_open_entity(a, &nfp, npath, 0, &of)) == 0) {
        fs_attach(fi, of, path);
        fi->noflush = 1;
    }
    fspath_free(&nfp);
    free(npath);
    return rc;
}

/* See fs/fs_i.h. */
int fs_view_opendir(const char *path, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct view_dir *d;
    struct fspath fp;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind == FSP_VIEW_ENTITY || fp.kind == FSP_VIEW_STREAM || fp.kind < FSP_WHERE)
        rc = -ENOTDIR;
    else if (!(d = calloc(1, sizeof(*d))) || lock_init(&d->lock) != 0) {
        free(d);
        rc = -ENOMEM;
    } else {
        /* ".where" lists nothing: there is no way to enumerate filters */
        if (fp.kind != FSP_WHERE)
            rc = view_reader_open(&a->store, a->views, &fp, path, &d->r);
        if (rc == 0)
            fs_dir_attach(fi, &d->link, view_dir_close, path);
        else
            view_dir_free(d);
    }
    fspath_free(&fp);
    return rc;
}

/* See fs/fs_i.h. */
int fs_view_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                    struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    struct aztfs *a = fs_ctx();
    struct view_dir *d = (struct view_dir *)(uintptr_t)fi->fh;
    struct listing_ent e;
    struct stat st;
    size_t pos;
    int rc = 0;

    (void)flags;
    if (off < 0)
        return -EINVAL;
    pthread_mutex_lock(&d->lock);
    pos = (size_t)off;
    store_dir_read(&a->store, path); /* a walk of the table: its reads take the snapshot */
    if ((rc = d->err) < 0 || (pos == 0 && filler(buf, ".", NULL, ++pos, 0)) ||
        (pos == 1 && filler(buf, "..", NULL, ++pos, 0)))
        goto out;
    while (d->r && (rc = view_reader_get(d->r, pos - 2, &e)) == 0) {
        char *p = fspath_join(path, e.name);

        if (!p) {
            rc = -ENOMEM;
            break;
        }
        if (view_reader_files(d->r))
            fs_fill_file_stat(a, p, (size_t)e.size, e.mtime, &st);
        else
            fs_fill_dir_stat(a, p, &st);
        pos++;
        if (filler(buf, e.name, &st, (off_t)pos, FUSE_FILL_DIR_PLUS)) {
            free(p);
            rc = 0;
            goto out;
        }
        free(p);
    }
    if (rc < 0)
        d->err = rc; /* the page may be asked for again by a new opendir */
    else
        rc = 0;
out:
    pthread_mutex_unlock(&d->lock);
    return rc;
}

/* --- changes: read-only in a view and in an export stream: one wrapper ---------------- */

/* The table the guards forward to (fs_view_wrap's caller's). */
static const struct fuse_operations *next(void)
{
    return &fs_ctx()->next_ops;
}

static int ro_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    return read_only(path) ? fs_refuse("create", path) : next()->create(path, mode, fi);
}

/* Through a handle, its kind decides (an import stream's '>' is no
 * change); by name, a read-only one is refused. */
static int ro_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    if (!fs_handle(fi) && read_only(path))
        return fs_refuse("truncate", path);
    return next()->truncate(path, size, fi);
}

static int ro_unlink(const char *path)
{
    return read_only(path) ? fs_refuse("unlink", path) : next()->unlink(path);
}

static int ro_rename(const char *from, const char *to, unsigned int flags)
{
    if (read_only(from) || read_only(to))
        return fs_refuse("rename", read_only(from) ? from : to);
    return next()->rename(from, to, flags);
}

static int ro_mkdir(const char *path, mode_t mode)
{
    return read_only(path) ? fs_refuse("mkdir", path) : next()->mkdir(path, mode);
}

static int ro_rmdir(const char *path)
{
    return read_only(path) ? fs_refuse("rmdir", path) : next()->rmdir(path);
}

static int ro_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    return read_only(path) ? fs_refuse("chmod", path) : next()->chmod(path, mode, fi);
}

static int ro_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    return read_only(path) ? fs_refuse("chown", path) : next()->chown(path, uid, gid, fi);
}

static int ro_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    return read_only(path) ? fs_refuse("utimens", path) : next()->utimens(path, tv, fi);
}

/* See fs/fs_i.h. */
void fs_view_wrap(struct fuse_operations *ops)
{
    ops->create = ro_create;
    ops->truncate = ro_truncate;
    ops->unlink = ro_unlink;
    ops->rename = ro_rename;
    ops->mkdir = ro_mkdir;
    ops->rmdir = ro_rmdir;
    ops->chmod = ro_chmod;
    ops->chown = ro_chown;
    ops->utimens = ro_utimens;
}

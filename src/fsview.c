/* fsview.c - FUSE callbacks for query views: stat, read, list; EROFS for changes (fsview.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fscommon.h"
#include "fsdir.h"
#include "fsview.h"
#include "fswrite.h"
#include "store.h"
#include "view.h"

/* An open view directory: its listing, complete, and what its names are. */
struct view_dir {
    struct listing *l;
    int files;                  /* entity files (else partition directories) */
};

/* -EROFS for OP on PATH, with its log line. */
static int refuse(const char *op, const char *path)
{
    log_error(&fs_ctx()->store.log, "%s %s: a query view is read-only", op, path);
    return -EROFS;
}

/* Does the view directory FP list entity files (not partitions)? */
static int lists_files(const struct fspath *fp)
{
    return fp->kind == FSP_VIEW_PARTITION || (fp->kind == FSP_VIEW && fp->scoped);
}

/* See fsview.h. */
int fs_view_attr(struct aztfs *a, const char *path, struct fspath *fp, struct stat *st)
{
    struct listing *l;
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
        if ((rc = view_listing(&a->store, fp, path, &l)) == 0)
            listing_unref(l);
        break;
    case FSP_VIEW_ENTITY:
        if ((rc = view_entity(&a->store, fp, &nfp, &npath)) < 0)
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

/* See fsview.h. */
int fs_view_open(struct aztfs *a, const char *path, struct fspath *fp,
                 struct fuse_file_info *fi)
{
    struct open_file *of;
    struct fspath nfp;
    char *npath;
    int rc;

    if (fp->kind != FSP_VIEW_ENTITY)
        return -EISDIR;
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
        return refuse("write", path);
    if ((rc = view_entity(&a->store, fp, &nfp, &npath)) < 0)
        return rc;
    if ((rc = fs_open_entity(a, &nfp, npath, 0, &of)) == 0) {
        fs_attach(fi, of, path);
        fi->noflush = 1;
    }
    fspath_free(&nfp);
    free(npath);
    return rc;
}

/* See fsview.h. */
int fs_view_opendir(const char *path, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct view_dir *d;
    struct fspath fp;
    int rc;

    if (!fspath_in_view(path))
        return fs_opendir(path, fi);
    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind == FSP_VIEW_ENTITY || fp.kind < FSP_WHERE)
        rc = -ENOTDIR;
    else if (!(d = calloc(1, sizeof(*d))))
        rc = -ENOMEM;
    else {
        d->files = lists_files(&fp);
        if (fp.kind == FSP_WHERE)   /* no way to enumerate filters */
            rc = (d->l = listing_new()) ? 0 : -ENOMEM;
        else
            rc = view_listing(&a->store, &fp, path, &d->l);
        if (rc == 0)
            fi->fh = (uint64_t)(uintptr_t)d;
        else
            free(d);
    }
    fspath_free(&fp);
    return rc;
}

/* See fsview.h. */
int fs_view_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                    struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    struct aztfs *a = fs_ctx();
    struct view_dir *d = (struct view_dir *)(uintptr_t)fi->fh;
    struct listing_ent e;
    struct stat st;
    size_t pos;

    if (!path || !fspath_in_view(path))
        return fs_readdir(path, buf, filler, off, fi, flags);
    if (off < 0)
        return -EINVAL;
    pos = (size_t)off;
    if (pos == 0 && filler(buf, ".", NULL, ++pos, 0))
        return 0;
    if (pos == 1 && filler(buf, "..", NULL, ++pos, 0))
        return 0;
    for (; pos - 2 < listing_count(d->l); pos++) {
        char *p;
        int full;

        listing_get(d->l, pos - 2, &e);
        if (!(p = fspath_join(path, e.name)))
            return -ENOMEM;
        if (d->files)
            fs_fill_file_stat(a, p, (size_t)e.size, e.mtime, &st);
        else
            fs_fill_dir_stat(a, p, &st);
        free(p);
        full = filler(buf, e.name, &st, (off_t)pos + 1, FUSE_FILL_DIR_PLUS);
        if (full)
            return 0;
    }
    return 0;
}

/* See fsview.h. */
int fs_view_releasedir(const char *path, struct fuse_file_info *fi)
{
    struct view_dir *d = (struct view_dir *)(uintptr_t)fi->fh;

    if (!path || !fspath_in_view(path))
        return fs_releasedir(path, fi);
    listing_unref(d->l);
    free(d);
    return 0;
}

/* --- changes: read-only in a view -------------------------------------------- */

int fs_view_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    return fspath_in_view(path) ? refuse("create", path) : fs_create(path, mode, fi);
}

int fs_view_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    return path && fspath_in_view(path) ? refuse("truncate", path)
                                        : fs_truncate(path, size, fi);
}

int fs_view_unlink(const char *path)
{
    return fspath_in_view(path) ? refuse("unlink", path) : fs_unlink(path);
}

int fs_view_rename(const char *from, const char *to, unsigned int flags)
{
    if (fspath_in_view(from) || fspath_in_view(to))
        return refuse("rename", fspath_in_view(from) ? from : to);
    return fs_rename(from, to, flags);
}

int fs_view_mkdir(const char *path, mode_t mode)
{
    return fspath_in_view(path) ? refuse("mkdir", path) : fs_mkdir(path, mode);
}

int fs_view_rmdir(const char *path)
{
    return fspath_in_view(path) ? refuse("rmdir", path) : fs_rmdir(path);
}

int fs_view_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    return path && fspath_in_view(path) ? refuse("chmod", path) : fs_chmod(path, mode, fi);
}

int fs_view_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    return path && fspath_in_view(path) ? refuse("chown", path)
                                        : fs_chown(path, uid, gid, fi);
}

int fs_view_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    return path && fspath_in_view(path) ? refuse("utimens", path) : fs_utimens(path, tv, fi);
}

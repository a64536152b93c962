/* fs/lowlevel.c - the mount on libfuse's low-level API. Each request's node
 * ids become paths through the inode table (fs/inode.c), the path-level
 * operations table (fs_operations: fs/fuseops.c's, wrapped once by
 * fs_view_wrap) is called with them, and the answer keeps the kernel's
 * counts: every entry answered (a lookup, a create, mkdir, mknod, a
 * readdirplus entry) counts one lookup of its node, each FORGET takes
 * them back. The callbacks learn their mount and request from the calling
 * thread (fs/context.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "fs/fs_i.h"
#include <fuse_lowlevel.h>

static struct aztfs *enter(fuse_req_t req)
{
    return fs_call_enter(fuse_req_userdata(req), req);
}

static void leave(void)
{
    fs_call_leave();
}

static void reply_rc(fuse_req_t req, int rc)
{
    fuse_reply_err(req, rc < 0 ? -rc : 0);
}

/* The path of INO in *PATH (malloc'd). NULLOK: a node whose name was
 * removed (an open file: hard_remove) is served with a NULL path, as
 * libfuse's high-level API does for a call with a file handle. */
static int path_of(struct aztfs *a, fuse_ino_t ino, int nullok, char **path)
{
    int rc = fs_inodes_path(a->inodes, ino, path);

    return rc == -ESTALE && nullok ? 0 : rc;
}

/* The entry E for NAME in PARENT at PATH with attributes ST: its node
 * counted once more, and the name kept to be told stale in turn. */
static int entry_of(struct aztfs *a, fuse_ino_t parent, const char *name, const char *path,
                    const struct stat *st, struct fuse_entry_param *e)
{
    int rc;

    memset(e, 0, sizeof(*e));
    if ((rc = fs_inodes_ref(a->inodes, parent, name, &e->ino)) < 0)
        return rc;
    e->attr = *st;
    e->attr_timeout = a->attr_timeout;
    e->entry_timeout = a->store.cache_timeout;
    fs_forget_named(a->forget, parent, path);
    return 0;
}

/* Answer E; the count it took is given back when the kernel never got it
 * (the request interrupted). */
static void reply_entry(struct aztfs *a, fuse_req_t req, const struct fuse_entry_param *e)
{
    if (fuse_reply_entry(req, e) != 0 && e->ino)
        fs_inodes_forget(a->inodes, e->ino, 1);
}

/* Attributes of the new name PATH (NAME in PARENT), through FI when
 * given, as an entry in *E. */
static int lookup_path(struct aztfs *a, fuse_ino_t parent, const char *name, const char *path,
                       struct fuse_file_info *fi, struct fuse_entry_param *e)
{
    struct stat st;
    int rc = a->ops.getattr(path, &st, fi);

    return rc < 0 ? rc : entry_of(a, parent, name, path, &st, e);
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)conn;
    fs_call_enter(userdata, NULL);
    fs_init(userdata);
    fs_call_leave();
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct aztfs *a = enter(req);
    struct fuse_entry_param e;
    char *path;
    int rc = fs_inodes_child_path(a->inodes, parent, name, &path);

    if (rc == 0)
        rc = lookup_path(a, parent, name, path, NULL, &e);
    if (rc == -ENOENT && a->store.negative_timeout > 0) {
        memset(&e, 0, sizeof(e)); /* the absence, kept that long */
        e.entry_timeout = a->store.negative_timeout;
        rc = 0;
    }
    if (rc < 0)
        reply_rc(req, rc);
    else
        reply_entry(a, req, &e);
    free(path);
    leave();
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    struct aztfs *a = fuse_req_userdata(req);

    fs_inodes_forget(a->inodes, ino, nlookup);
    fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    struct aztfs *a = fuse_req_userdata(req);

    for (size_t i = 0; i < count; i++)
        fs_inodes_forget(a->inodes, forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct aztfs *a = enter(req);
    struct stat st;
    char *path;
    int rc = path_of(a, ino, fi != NULL, &path);

    if (rc == 0)
        rc = a->ops.getattr(path, &st, fi);
    if (rc < 0)
        reply_rc(req, rc);
    else
        fuse_reply_attr(req, &st, a->attr_timeout);
    free(path);
    leave();
}

/* The times of a setattr: each given, now, or left as it is. */
static void times_of(const struct stat *attr, int valid, struct timespec tv[2])
{
    tv[0].tv_sec = tv[1].tv_sec = 0;
    tv[0].tv_nsec = (valid & FUSE_SET_ATTR_ATIME_NOW) ? UTIME_NOW : UTIME_OMIT;
    tv[1].tv_nsec = (valid & FUSE_SET_ATTR_MTIME_NOW) ? UTIME_NOW : UTIME_OMIT;
    if ((valid & FUSE_SET_ATTR_ATIME) && !(valid & FUSE_SET_ATTR_ATIME_NOW))
        tv[0] = attr->st_atim;
    if ((valid & FUSE_SET_ATTR_MTIME) && !(valid & FUSE_SET_ATTR_MTIME_NOW))
        tv[1] = attr->st_mtim;
}

/* chmod, chown, truncate and utimens in libfuse's order, then the
 * attributes they leave. */
static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
                       struct fuse_file_info *fi)
{
    struct aztfs *a = enter(req);
    struct stat st;
    char *path;
    int rc = path_of(a, ino, fi != NULL, &path);

    if (rc == 0 && (valid & FUSE_SET_ATTR_MODE))
        rc = a->ops.chmod(path, attr->st_mode, fi);
    if (rc == 0 && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
        rc = a->ops.chown(path, (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1,
                          (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1, fi);
    if (rc == 0 && (valid & FUSE_SET_ATTR_SIZE))
        rc = a->ops.truncate(path, attr->st_size, fi);
    if (rc == 0 && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
        struct timespec tv[2];

        times_of(attr, valid, tv);
        rc = a->ops.utimens(path, tv, fi);
    }
    if (rc == 0)
        rc = a->ops.getattr(path, &st, fi);
    if (rc < 0)
        reply_rc(req, rc);
    else
        fuse_reply_attr(req, &st, a->attr_timeout);
    free(path);
    leave();
}

/* The path of NAME in PARENT, or an error answered. */
static char *child_or_reply(struct aztfs *a, fuse_req_t req, fuse_ino_t parent, const char *name)
{
    char *path;
    int rc = fs_inodes_child_path(a->inodes, parent, name, &path);

    if (rc < 0)
        reply_rc(req, rc);
    return path;
}

/* Make NAME in PARENT: a directory (DIR), else a regular file made as
 * create does and then closed (any other kind ENOSYS, as libfuse's
 * high-level API answers without a mknod); answered with its entry. */
static void make_name(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, int dir)
{
    struct aztfs *a = enter(req);
    struct fuse_file_info fi = { .flags = O_CREAT | O_EXCL | O_WRONLY };
    struct fuse_entry_param e;
    char *path = child_or_reply(a, req, parent, name);
    int rc;

    if (path) {
        rc = dir          ? a->ops.mkdir(path, mode) :
            S_ISREG(mode) ? a->ops.create(path, mode, &fi) :
                            -ENOSYS;
        if (rc == 0) {
            rc = lookup_path(a, parent, name, path, dir ? NULL : &fi, &e);
            if (!dir)
                a->ops.release(path, &fi);
        }
        if (rc < 0)
            reply_rc(req, rc);
        else
            reply_entry(a, req, &e);
    }
    free(path);
    leave();
}

static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
    (void)rdev;
    make_name(req, parent, name, mode, 0);
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    make_name(req, parent, name, mode, 1);
}

/* unlink and rmdir: the name leaves the table when the operation took it. */
static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, int dir)
{
    struct aztfs *a = enter(req);
    char *path = child_or_reply(a, req, parent, name);
    int rc;

    if (path) {
        rc = dir ? a->ops.rmdir(path) : a->ops.unlink(path);
        if (rc == 0)
            fs_inodes_remove(a->inodes, parent, name);
        reply_rc(req, rc);
    }
    free(path);
    leave();
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    remove_name(req, parent, name, 0);
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    remove_name(req, parent, name, 1);
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
    struct aztfs *a = enter(req);
    char *from = child_or_reply(a, req, parent, name), *to = NULL;
    int rc;

    if (from && (to = child_or_reply(a, req, newparent, newname))) {
        rc = a->ops.rename(from, to, flags);
        if (rc == 0)
            rc = fs_inodes_rename(a->inodes, parent, name, newparent, newname,
                                  (flags & RENAME_EXCHANGE) != 0);
        reply_rc(req, rc);
    }
    free(from);
    free(to);
    leave();
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct aztfs *a = enter(req);
    char *path;
    int rc = path_of(a, ino, 0, &path);

    if (rc == 0 && (rc = a->ops.open(path, fi)) == 0) {
        if (fuse_reply_open(req, fi) != 0)
            a->ops.release(path, fi); /* interrupted: the kernel has no handle */
    } else {
        reply_rc(req, rc);
    }
    free(path);
    leave();
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
    struct aztfs *a = enter(req);
    struct fuse_entry_param e;
    char *path = child_or_reply(a, req, parent, name);
    int rc;

    if (path) {
        if ((rc = a->ops.create(path, mode, fi)) == 0 &&
            (rc = lookup_path(a, parent, name, path, fi, &e)) < 0)
            a->ops.release(path, fi);
        if (rc < 0) {
            reply_rc(req, rc);
        } else if (fuse_reply_create(req, &e, fi) != 0) {
            a->ops.release(path, fi); /* interrupted: the kernel has no handle */
            fs_inodes_forget(a->inodes, e.ino, 1);
        }
    }
    free(path);
    leave();
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    struct aztfs *a = enter(req);
    char *path, *buf = NULL;
    int rc = path_of(a, ino, 1, &path);

    if (rc == 0 && !(buf = malloc(size ? size : 1)))
        rc = -ENOMEM;
    if (rc == 0)
        rc = a->ops.read(path, buf, size, off, fi);
    if (rc < 0)
        reply_rc(req, rc);
    else
        fuse_reply_buf(req, buf, (size_t)rc);
    free(buf);
    free(path);
    leave();
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    struct aztfs *a = enter(req);
    char *path;
    int rc = path_of(a, ino, 1, &path);

    if (rc == 0)
        rc = a->ops.write(path, buf, size, off, fi);
    if (rc < 0)
        reply_rc(req, rc);
    else
        fuse_reply_write(req, (size_t)rc);
    free(path);
    leave();
}

/* flush, fsync, release, fsyncdir, releasedir: through the handle, with
 * the path when the name is still there. */
enum by_handle { FLUSH, FSYNC, RELEASE, FSYNCDIR, RELEASEDIR };

static void by_handle(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, enum by_handle op,
                      int datasync)
{
    struct aztfs *a = enter(req);
    char *path;
    int rc = path_of(a, ino, 1, &path);

    if (rc == 0) {
        switch (op) {
        case FLUSH:
            rc = a->ops.flush(path, fi);
            break;
        case FSYNC:
            rc = a->ops.fsync(path, datasync, fi);
            break;
        case RELEASE:
            rc = a->ops.release(path, fi);
            break;
        case FSYNCDIR:
            rc = a->ops.fsyncdir(path, datasync, fi);
            break;
        case RELEASEDIR:
            rc = a->ops.releasedir(path, fi);
            break;
        }
    }
    reply_rc(req, rc);
    free(path);
    leave();
}

static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    by_handle(req, ino, fi, FLUSH, 0);
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    by_handle(req, ino, fi, RELEASE, 0);
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    by_handle(req, ino, fi, FSYNC, datasync);
}

static void ll_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    by_handle(req, ino, fi, FSYNCDIR, datasync);
}

static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    by_handle(req, ino, fi, RELEASEDIR, 0);
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct aztfs *a = enter(req);
    char *path;
    int rc = path_of(a, ino, 0, &path);

    if (rc == 0 && (rc = a->ops.opendir(path, fi)) == 0) {
        if (fuse_reply_open(req, fi) != 0)
            a->ops.releasedir(path, fi);
    } else {
        reply_rc(req, rc);
    }
    free(path);
    leave();
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct aztfs *a = enter(req);
    struct statvfs sv;
    int rc;

    (void)ino;
    if ((rc = a->ops.statfs("/", &sv)) < 0)
        reply_rc(req, rc);
    else
        fuse_reply_statfs(req, &sv);
    leave();
}

static void ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                        size_t size, int flags)
{
    struct aztfs *a = enter(req);
    char *path;
    int rc = path_of(a, ino, 0, &path);

    if (rc == 0)
        rc = a->ops.setxattr(path, name, value, size, flags);
    reply_rc(req, rc);
    free(path);
    leave();
}

/* getxattr (NAME given) and listxattr: the size asked for, or the bytes. */
static void get_or_list(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    struct aztfs *a = enter(req);
    char *path, *buf = NULL;
    int rc = path_of(a, ino, 0, &path);

    if (rc == 0 && size && !(buf = malloc(size)))
        rc = -ENOMEM;
    if (rc == 0)
        rc = name ? a->ops.getxattr(path, name, buf, size) : a->ops.listxattr(path, buf, size);
    if (rc < 0)
        reply_rc(req, rc);
    else if (size)
        fuse_reply_buf(req, buf, (size_t)rc);
    else
        fuse_reply_xattr(req, (size_t)rc);
    free(buf);
    free(path);
    leave();
}

static void ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    get_or_list(req, ino, name, size);
}

static void ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    get_or_list(req, ino, NULL, size);
}

static void ll_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
    struct aztfs *a = enter(req);
    char *path;
    int rc = path_of(a, ino, 0, &path);

    if (rc == 0)
        rc = a->ops.removexattr(path, name);
    reply_rc(req, rc);
    free(path);
    leave();
}

/* ---- directories: the entries of one answer ------------------------------------------ */

struct dir_answer {
    struct aztfs *a;
    fuse_req_t req;
    fuse_ino_t dir;
    const char *path; /* the directory's, as the listing is given it */
    int plus;         /* readdirplus */
    char *buf;
    size_t size, used;
    fuse_ino_t *counted; /* the nodes this answer counted (given back if it fails) */
    size_t ncounted, capcounted;
};

/* Remember that the answer counted INO; 0, or -ENOMEM (then not counted). */
static int note_counted(struct dir_answer *d, fuse_ino_t ino)
{
    if (d->ncounted == d->capcounted) {
        size_t cap = d->capcounted ? 2 * d->capcounted : 64;
        fuse_ino_t *p = realloc(d->counted, cap * sizeof(*p));

        if (!p)
            return -ENOMEM;
        d->counted = p;
        d->capcounted = cap;
    }
    d->counted[d->ncounted++] = ino;
    return 0;
}

/* The inode number of an entry given without attributes ("." and ".."),
 * as libfuse's high-level API gives it: not 0, which some readers take
 * for a deleted entry. */
#define UNKNOWN_INO 0xffffffffu

static int is_dot(const char *name)
{
    return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

/* A readdirplus entry: with its node counted when the filler gave its
 * attributes (FUSE_FILL_DIR_PLUS), else the name and type alone (node id
 * 0: the kernel makes no entry of it). */
static void plus_entry(struct dir_answer *d, const char *name, const struct stat *st,
                       enum fuse_fill_dir_flags flags, struct fuse_entry_param *e)
{
    char *path;

    memset(e, 0, sizeof(*e));
    if (st && (flags & FUSE_FILL_DIR_PLUS) && !is_dot(name) && d->path &&
        (path = fspath_join(d->path, name))) {
        if (entry_of(d->a, d->dir, name, path, st, e) == 0 && note_counted(d, e->ino) < 0) {
            fs_inodes_forget(d->a->inodes, e->ino, 1);
            memset(e, 0, sizeof(*e));
        }
        free(path);
    }
    if (!e->ino) {
        e->attr.st_ino = st ? st->st_ino : UNKNOWN_INO;
        e->attr.st_mode = st ? st->st_mode : 0;
    }
}

/* The filler the path-level readdir calls: 1 when the answer is full. */
static int fill(void *buf, const char *name, const struct stat *st, off_t off,
                enum fuse_fill_dir_flags flags)
{
    struct dir_answer *d = buf;
    size_t left = d->size - d->used, need;

    if (!d->plus) {
        struct stat s = { .st_ino = st ? st->st_ino : UNKNOWN_INO,
                          .st_mode = st ? st->st_mode : 0 };

        if ((need = fuse_add_direntry(d->req, NULL, 0, name, NULL, 0)) > left)
            return 1;
        fuse_add_direntry(d->req, d->buf + d->used, left, name, &s, off);
    } else {
        struct fuse_entry_param e;

        if ((need = fuse_add_direntry_plus(d->req, NULL, 0, name, NULL, 0)) > left)
            return 1;
        plus_entry(d, name, st, flags, &e);
        fuse_add_direntry_plus(d->req, d->buf + d->used, left, name, &e, off);
    }
    d->used += need;
    return 0;
}

static void read_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     struct fuse_file_info *fi, int plus)
{
    struct aztfs *a = enter(req);
    struct dir_answer d = { .a = a, .req = req, .dir = ino, .plus = plus, .size = size };
    char *path;
    int rc = path_of(a, ino, 1, &path);

    d.path = path; /* NULL: the directory was removed; its entries count nothing */
    if (rc == 0 && !(d.buf = malloc(size ? size : 1)))
        rc = -ENOMEM;
    if (rc == 0)
        rc = a->ops.readdir(path, &d, fill, off, fi, plus ? FUSE_READDIR_PLUS : 0);
    /* an error drops the entries filled before it, as libfuse's
     * high-level API does; the nodes they counted are given back */
    if (rc < 0)
        reply_rc(req, rc);
    if (rc < 0 || fuse_reply_buf(req, d.buf, d.used) != 0)
        for (size_t i = 0; i < d.ncounted; i++) /* the kernel never saw them */
            fs_inodes_forget(a->inodes, d.counted[i], 1);
    free(d.counted);
    free(d.buf);
    free(path);
    leave();
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    read_dir(req, ino, size, off, fi, 0);
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
    read_dir(req, ino, size, off, fi, 1);
}

static const struct fuse_lowlevel_ops lowlevel_ops = {
    .init = ll_init,
    .lookup = ll_lookup,
    .forget = ll_forget,
    .forget_multi = ll_forget_multi,
    .getattr = ll_getattr,
    .setattr = ll_setattr,
    .mknod = ll_mknod,
    .mkdir = ll_mkdir,
    .unlink = ll_unlink,
    .rmdir = ll_rmdir,
    .rename = ll_rename,
    .open = ll_open,
    .read = ll_read,
    .write = ll_write,
    .flush = ll_flush,
    .release = ll_release,
    .fsync = ll_fsync,
    .opendir = ll_opendir,
    .readdir = ll_readdir,
    .readdirplus = ll_readdirplus,
    .releasedir = ll_releasedir,
    .fsyncdir = ll_fsyncdir,
    .statfs = ll_statfs,
    .setxattr = ll_setxattr,
    .getxattr = ll_getxattr,
    .listxattr = ll_listxattr,
    .removexattr = ll_removexattr,
    .create = ll_create,
};

/* See fs.h. */
struct fuse_session *fs_session_new(struct fuse_args *args, struct aztfs *a)
{
    fs_operations(a, &a->ops);
    return fuse_session_new(args, &lowlevel_ops, sizeof(lowlevel_ops), a);
}

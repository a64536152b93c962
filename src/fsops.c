/* fsops.c - FUSE callbacks: the tree of tables, partitions and entity files. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "entity.h"
#include "fsint.h"
#include <fuse_lowlevel.h>     /* fuse_session_exited */
#include "keycodec.h"
#include "stats.h"

/* "PARENT/NAME" (PARENT "/" gives "/NAME"); NULL on ENOMEM. */
char *fs_path_join(const char *parent, const char *name)
{
    char *p;

    if (asprintf(&p, "%s/%s", strcmp(parent, "/") == 0 ? "" : parent, name) < 0)
        return NULL;
    return p;
}

void fs_fill_dir_stat(const struct aztfs *a, const char *path, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = fspath_ino(path);
    st->st_mode = DIR_MODE;
    st->st_nlink = 2;
    st->st_uid = a->uid;
    st->st_gid = a->gid;
    st->st_blksize = 4096;
    st->st_atime = st->st_mtime = st->st_ctime = a->mount_time;
}

void fs_fill_file_stat(const struct aztfs *a, const char *path, size_t len,
                       struct timespec mtime, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = fspath_ino(path);
    st->st_mode = FILE_MODE;
    /* 2 links: editors (vim's backupcopy=auto) then rewrite the file in
     * place, one guarded write, instead of renaming it away and creating
     * it anew (a delete and an insert). Inodes are unique, so cp -a, tar
     * and du still see distinct files. */
    st->st_nlink = 2;
    st->st_uid = a->uid;
    st->st_gid = a->gid;
    st->st_size = (off_t)len;
    st->st_blksize = 4096;
    st->st_blocks = (blkcnt_t)((len + 511) / 512);
    st->st_atim = st->st_mtim = st->st_ctim = mtime;
}

/* Render wire entity E and cache it at DIR/name(RK). On success *name_out
 * (if non-NULL) receives the malloc'd file name. Returns 0 or -errno. */
int fs_cache_entity(struct aztfs *a, const char *dir, json_t *e, struct fs_shown *shown,
                    struct cache_file *copy)
{
    struct entity_error err;
    const char *rk = json_string_value(json_object_get(e, "RowKey"));
    const char *ts = json_string_value(json_object_get(e, "Timestamp"));
    const char *etag = json_string_value(json_object_get(e, "odata.etag"));
    struct timespec mtime = { a->mount_time, 0 };
    char *text = NULL, *name = NULL, *path = NULL;
    size_t len;
    int rc;

    if (!rk) {
        log_warn(&a->log, "%s: an entity without a RowKey was skipped", dir);
        return -EIO;
    }
    rc = entity_render(e, &text, &len, &err);
    if (rc < 0) {
        log_warn(&a->log, "%s: entity '%s' cannot be shown: %s", dir, rk, err.text);
        return rc;
    }
    if (ts)
        entity_parse_datetime(ts, &mtime);
    rc = -ENOMEM;
    if (!(name = keycodec_file_encode(rk)) || !(path = fs_path_join(dir, name)))
        goto out;
    rc = cache_put_file(a->cache, path, text, len, etag, mtime);
    if (rc == 0 && copy) {
        copy->data = text;
        copy->len = len;
        copy->mtime = mtime;
        copy->etag = etag ? strdup(etag) : NULL;
        text = NULL;
        if (etag && !copy->etag) {
            cache_file_clear(copy);
            rc = -ENOMEM;
        }
    }
    if (rc == 0 && shown) {
        shown->name = name;
        shown->len = len;
        shown->mtime = mtime;
        name = NULL;
    }
out:
    free(text);
    free(name);
    free(path);
    return rc;
}

/* See fsint.h. */
void fs_log_failure(struct aztfs *a, const char *op, const char *path, int rc,
                    const struct az_status *st, const char *why)
{
    const char *reason = why ? why : strerror(-rc);

    if (!st || (st->http_status == 0 && st->attempts == 0))
        log_error(&a->log, "%s %s failed: %s", op, path, reason);
    else if (st->http_status == 0)
        log_error(&a->log, "%s %s failed: %s (no response: %s; attempts %d)", op, path,
                  reason, st->message, st->attempts);
    else
        log_error(&a->log, "%s %s failed: %s (HTTP %ld %s%s%s; attempts %d)", op, path,
                  reason, st->http_status, st->code[0] ? st->code : "-",
                  st->message[0] ? ": " : "", st->message, st->attempts);
}

/* See fsint.h. -ENOENT from libfuse means the kernel has no inode for the
 * path, so there is nothing to drop. */
void fs_invalidate(struct aztfs *a, const char *path)
{
    struct fuse_context *ctx = fuse_get_context();

    cache_invalidate(a->cache, path);
    if (ctx && ctx->fuse)
        (void)fuse_invalidate_path(ctx->fuse, path);
}

/* Entities of a read-ahead, rendered into the cache. */
struct read_ahead {
    struct aztfs *a;
    const char *dir;
};

static int on_read_ahead_page(void *p, json_t *value)
{
    struct read_ahead *ra = p;
    size_t i;
    json_t *e;

    json_array_foreach(value, i, e)
        if (fs_cache_entity(ra->a, ra->dir, e, NULL, NULL) == -ENOMEM)
            return -ENOMEM;
    return 1;       /* one page is enough */
}

/* Fetch entity FP and the ones after it in its partition (one page of
 * READ_AHEAD) into the cache: what a listed entity evicted from a too-small
 * cache costs when grep or rsync read a partition in order. Returns 0 or
 * -errno (the caller then falls back to a point query). */
static int read_ahead(struct aztfs *a, const struct fspath *fp)
{
    struct read_ahead ra = { a, fp->parent };
    struct cache_stats cs;
    struct az_status st;
    size_t top;
    char *lpk = table_odata_literal(fp->pk), *lrk = table_odata_literal(fp->rk);
    char *filter = NULL;
    int rc = -ENOMEM;

    cache_get_stats(a->cache, &cs);
    top = cs.max_bytes / 4 / 1024;
    top = top > READ_AHEAD_MAX ? READ_AHEAD_MAX : top < READ_AHEAD_MIN ? READ_AHEAD_MIN : top;
    if (lpk && lrk &&
        asprintf(&filter, "PartitionKey eq %s and RowKey ge %s", lpk, lrk) >= 0)
        rc = table_query(a->tc, fp->table, filter, NULL, (int)top, on_read_ahead_page, &ra,
                         &st);
    else
        filter = NULL;
    free(filter);
    free(lpk);
    free(lrk);
    return rc;
}

/* The entity at PATH: from the cache when fresh, else (when its partition's
 * listing is fresh, so a reader is likely walking it) a read-ahead, else a
 * point query. */
int fs_load_entity(struct aztfs *a, struct fspath *fp, const char *path,
                       struct cache_file *out)
{
    struct az_status st;
    json_t *e = NULL;
    int rc, listed;

    if (cache_get_file(a->cache, path, out) == 0)
        return 0;
    /* A fresh listing of the partition that lacks the name settles it. */
    rc = cache_dir_lookup(a->cache, fp->parent, fp->file_name, NULL);
    if (rc == -ENOENT)
        return rc;
    listed = rc == 0;
    if ((rc = fs_resolve_keys(a, fp)) < 0)
        return rc;
    if (cache_get_file(a->cache, path, out) == 0)   /* resolving may have listed */
        return 0;
    if (listed && read_ahead(a, fp) == 0 && cache_get_file(a->cache, path, out) == 0)
        return 0;
    rc = table_get_entity(a->tc, fp->table, fp->pk, fp->rk, &e, NULL, &st);
    if (rc == -ENOENT && listed)
        fs_invalidate(a, fp->parent);   /* it named an entity deleted since */
    else if (rc < 0)
        fs_log_failure(a, "read", path, rc, &st, NULL);
    if (rc < 0)
        return rc;
    rc = fs_cache_entity(a, fp->parent, e, NULL, out);
    json_decref(e);
    return rc;
}

static int on_first_entity(void *p, json_t *value)
{
    int *found = p;

    *found = json_array_size(value) > 0;
    return *found ? 1 : 0;
}

/* Does partition FP->pk of FP->table hold at least one entity? */
int fs_partition_exists(struct aztfs *a, struct fspath *fp, int fresh)
{
    struct az_status st = { 0 };
    char *tdir = NULL, *pdir = NULL, *lit = NULL, *filter = NULL;
    int found = 0, rc;

    if (asprintf(&tdir, "/%s", fp->table) < 0)
        return -ENOMEM;
    if (asprintf(&pdir, "%s/%s", tdir, fp->pk_name) < 0) {
        free(tdir);
        return -ENOMEM;
    }
    rc = -EAGAIN;
    if (!fresh) {
        rc = cache_exists(a->cache, pdir) ? 0 : cache_dir_lookup(a->cache, tdir, fp->pk_name,
                                                                 NULL);
    }
    free(tdir);
    if (rc != -EAGAIN) {
        free(pdir);
        return rc == 0 ? 1 : rc == -ENOENT ? 0 : rc;
    }
    if (!fp->pk) {
        free(pdir);
        rc = fs_resolve_keys(a, fp);
        return rc == 0 ? 1 : rc == -ENOENT ? 0 : rc;
    }
    if (!(lit = table_odata_literal(fp->pk)) ||
        asprintf(&filter, "PartitionKey eq %s", lit) < 0) {
        free(lit);
        free(pdir);
        return -ENOMEM;
    }
    rc = table_query(a->tc, fp->table, filter, "RowKey", 1, on_first_entity, &found, &st);
    if (rc < 0 && rc != -ENOENT)
        fs_log_failure(a, "look up", pdir, rc, &st, NULL);
    if (rc == 0 && found)
        cache_put_exists(a->cache, pdir);
    free(filter);
    free(lit);
    free(pdir);
    return rc < 0 ? rc : found;
}

/* See fsint.h. */
int fs_table_probe(struct aztfs *a, const char *name, struct az_status *st)
{
    int found = 0;
    int rc = table_query(a->tc, name, NULL, "PartitionKey", 1, on_first_entity, &found, st);

    return rc < 0 ? rc : found;
}

/* Does table NAME exist, when the cached root listing cannot say?
 * With -o tables=, only the tables named there are shown. */
static int table_known(struct aztfs *a, const char *name)
{
    struct az_status st = { 0 };
    int rc;

    if (a->tables) {
        rc = -ENOENT;
        for (char **t = a->tables; *t; t++)
            if (strcmp(*t, name) == 0 && (rc = fs_table_probe(a, name, &st)) > 0)
                rc = 0;
    } else {
        rc = table_exists(a->tc, name, &st);
        rc = rc < 0 ? rc : rc == 1 ? 0 : -ENOENT;
    }
    if (rc < 0 && rc != -ENOENT)
        fs_log_failure(a, "look up table", name, rc, &st, NULL);
    return rc;
}

/* --- FUSE callbacks ------------------------------------------------------ */

/* Should a read stop? When the FUSE request it serves was interrupted (the
 * process waiting for it got a signal: ^C, SIGKILL), or the mount is going
 * away (unmount, SIGTERM). Asked from any thread. */
static int aztfs_cancelled(void *ctx)
{
    struct aztfs *a = ctx;

    return fuse_interrupted() || (a->fuse && fuse_session_exited(fuse_get_session(a->fuse)));
}

static void *aztfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    struct aztfs *a = fs_ctx();

    a->fuse = fuse_get_context()->fuse;
    if (cfg->set_uid)           /* -o uid=/gid=: chown to what is shown works */
        a->uid = cfg->uid;
    if (cfg->set_gid)
        a->gid = cfg->gid;
    table_client_set_cancel(a->tc, aztfs_cancelled, a);

    cfg->use_ino = 1;
    cfg->readdir_ino = 1;
    cfg->entry_timeout = a->cache_timeout;
    /* The kernel answers stat itself for attr_timeout: every change made
     * through the mount drops its copy (fs_invalidate), and readdirplus
     * refreshes it, so rsync's lstat after a listing costs no round trip. */
    cfg->attr_timeout = a->attr_timeout;
    cfg->negative_timeout = a->cache_timeout > 1 ? 1 : a->cache_timeout;
    cfg->direct_io = 1;       /* reads return the entity as opened: see doc/ */
    cfg->nullpath_ok = 0;
    /* rm of a file whose release is still on its way (close(2) does not
     * wait for it) must delete the entity, not rename it to .fuse_hidden*:
     * open handles hold their own copy */
    cfg->hard_remove = 1;
    return a;
}

void fs_fill_scratch_stat(const struct aztfs *a, const char *path,
                          const struct scratch_attr *sa, struct stat *st)
{
    fs_fill_file_stat(a, path, sa->size, sa->mtime, st);
    st->st_mode = S_IFREG | (sa->mode & 07777);
    st->st_nlink = 1;
}

/* Hand a handle to the kernel; see fsint.h. */
void fs_attach(struct fuse_file_info *fi, struct open_file *of, const char *path)
{
    of->ino = fspath_ino(path);
    fi->fh = (uint64_t)(uintptr_t)of;
    fi->direct_io = 1;
}

/* Attributes of an open file without a name; see fsint.h. */
void fs_fill_handle_stat(const struct aztfs *a, struct open_file *of, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = of->ino;
    st->st_mode = FILE_MODE;
    st->st_nlink = 0;
    st->st_uid = a->uid;
    st->st_gid = a->gid;
    pthread_mutex_lock(&of->lock);
    st->st_size = of->scratch ? 0 : (off_t)of->len;
    pthread_mutex_unlock(&of->lock);
    st->st_blksize = 4096;
    st->st_blocks = (st->st_size + 511) / 512;
    clock_gettime(CLOCK_REALTIME, &st->st_mtim);
    st->st_atim = st->st_ctim = st->st_mtim;
}

static int aztfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct open_file *of = fs_handle(fi);
    struct scratch_attr sa;
    struct fspath fp;
    struct cache_file f = { 0 };
    int rc;

    if (!path) {            /* an open file whose name was removed (hard_remove) */
        if (!of)
            return -ESTALE;
        fs_fill_handle_stat(a, of, st);
        return 0;
    }
    if (of && !of->scratch) {
        int unsaved;
        struct timespec mt;

        /* unsaved changes show as they are; otherwise the entity as stored */
        pthread_mutex_lock(&of->lock);
        unsaved = of->written || of->is_new || !of->path;
        if (unsaved) {
            clock_gettime(CLOCK_REALTIME, &mt);
            fs_fill_file_stat(a, path, of->len, mt, st);
        }
        pthread_mutex_unlock(&of->lock);
        if (unsaved)
            return 0;
    }
    if ((rc = fspath_parse(path, &fp)) < 0) {
        /* the kernel looks a name up before it creates, makes or renames
         * onto it: a name no key can have is refused here, once */
        const char *why = rc == -EINVAL || rc == -ENAMETOOLONG ?
                          fspath_invalid_reason(path) : NULL;

        if (why)
            log_error(&a->log, "%s: not a valid name: %s", path, why);
        return rc;
    }
    if (fp.kind == FSP_ENTITY) {
        size_t len;
        struct timespec mt;

        if (fs_pending_size(a, path, &len) == 0) {
            clock_gettime(CLOCK_REALTIME, &mt);
            fs_fill_file_stat(a, path, len, mt, st);
            fspath_free(&fp);
            return 0;
        }
    }
    switch (fp.kind) {
    case FSP_ROOT:
        fs_fill_dir_stat(a, path, st);
        break;
    case FSP_TABLE:
        rc = cache_dir_lookup(a->cache, "/", fp.table, NULL);
        if (rc == -EAGAIN)
            rc = table_known(a, fp.table);
        if (rc == 0)
            fs_fill_dir_stat(a, path, st);
        break;
    case FSP_PARTITION:
        rc = scratch_is_dir(a->scratch, path) ? 1 : fs_partition_exists(a, &fp, 0);
        rc = rc < 0 ? rc : rc == 1 ? 0 : -ENOENT;
        if (rc == 0)
            fs_fill_dir_stat(a, path, st);
        break;
    case FSP_ENTITY: {
        size_t len;
        struct timespec mt;

        /* the cached file, else the attributes its listing recorded, else
         * a point query */
        if ((rc = cache_file_attr(a->cache, path, &len, &mt)) < 0)
            rc = cache_dir_attr(a->cache, fp.parent, fp.file_name, &len, &mt);
        if (rc == 0)
            fs_fill_file_stat(a, path, len, mt, st);
        else if (rc != -ENOENT && (rc = fs_load_entity(a, &fp, path, &f)) == 0)
            fs_fill_file_stat(a, path, f.len, f.mtime, st);
        cache_file_clear(&f);
        break;
    }
    case FSP_SCRATCH:
        rc = scratch_stat(a->scratch, path, &sa);
        if (rc == 0)
            fs_fill_scratch_stat(a, path, &sa, st);
        break;
    }
    fspath_free(&fp);
    return rc;
}

/* Allocate a handle (data NULL, lock initialised); NULL on ENOMEM. */
struct open_file *fs_open_file_new(void)
{
    struct open_file *of = calloc(1, sizeof(*of));

    if (of && pthread_mutex_init(&of->lock, NULL) != 0) {
        free(of);
        return NULL;
    }
    return of;
}

void fs_open_file_free(struct open_file *of)
{
    if (!of)
        return;
    pthread_mutex_destroy(&of->lock);
    free(of->data);
    free(of->etag);
    free(of->path);
    free(of);
}

/* A new handle holding the file at PATH; see fsint.h. */
int fs_open_entity(struct aztfs *a, struct fspath *fp, const char *path,
                   struct open_file **out)
{
    struct cache_file f = { 0 };
    struct open_file *of;
    int is_new = 1, rc = fs_pending_copy(a, path, &f.data, &f.len);

    if (rc == -ENOENT) {
        is_new = 0;
        rc = fs_load_entity(a, fp, path, &f);
    }
    if (rc < 0)
        return rc == -ENOENT ? -ESTALE : rc;
    if (!(of = fs_open_file_new())) {
        cache_file_clear(&f);
        return -ENOMEM;
    }
    of->is_new = is_new;
    of->data = f.data;
    of->len = f.len;
    of->cap = f.len + 1;    /* cache copies are NUL-terminated */
    of->etag = f.etag;
    *out = of;
    return 0;
}

static int aztfs_open(const char *path, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct open_file *of;
    struct scratch_attr sa;
    struct fspath fp;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind == FSP_SCRATCH) {
        rc = scratch_stat(a->scratch, path, &sa);
        if (rc == 0 && (fi->flags & O_TRUNC))
            rc = scratch_truncate(a->scratch, path, 0);
        if (rc == 0 && !(of = fs_open_file_new()))
            rc = -ENOMEM;
        if (rc == 0) {
            of->scratch = 1;
            fs_attach(fi, of, path);
        }
        fspath_free(&fp);
        return rc;
    }
    if (fp.kind != FSP_ENTITY) {
        fspath_free(&fp);
        return -EISDIR;
    }
    if ((fi->flags & O_ACCMODE) != O_RDONLY) {
        rc = fs_open_write(a, path, &fp, fi);
        fspath_free(&fp);
        return rc;
    }
    rc = fs_open_entity(a, &fp, path, &of);
    fspath_free(&fp);
    if (rc < 0)
        return rc;
    fs_attach(fi, of, path);
    fi->noflush = 1;          /* a read-only handle has nothing to commit at close */
    return 0;
}

static int aztfs_read(const char *path, char *buf, size_t size, off_t off,
                      struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);
    int rc = 0;

    if (off < 0)
        return -EINVAL;
    if (of->scratch)        /* a removed scratch file's bytes went with its name */
        return path ? (int)scratch_read(fs_ctx()->scratch, path, buf, size, off) : -ESTALE;
    pthread_mutex_lock(&of->lock);
    if ((size_t)off < of->len) {
        if (size > of->len - (size_t)off)
            size = of->len - (size_t)off;
        memcpy(buf, of->data + off, size);
        rc = (int)size;
    }
    pthread_mutex_unlock(&of->lock);
    return rc;
}

static int aztfs_release(const char *path, struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);

    if (of && !of->scratch && of->path) {
        if (path)
            fs_release_write(path, of);
        fs_pending_remove(fs_ctx(), of);
    }
    fs_open_file_free(of);
    return 0;
}

static int aztfs_statfs(const char *path, struct statvfs *sv)
{
    memset(sv, 0, sizeof(*sv));
    sv->f_bsize = 4096;
    sv->f_frsize = 4096;
    sv->f_blocks = sv->f_bfree = sv->f_bavail = (fsblkcnt_t)1 << 32;
    sv->f_files = sv->f_ffree = sv->f_favail = (fsfilcnt_t)1 << 32;
    sv->f_namemax = 255;
    return 0;
}

/* Extended attributes: only the root's user.aztfs.stats (not listed, so
 * rsync -X and cp --preserve=xattr copy nothing). security.* and system.*
 * answer ENOTSUP, which ls asks once per run, not once per file. */
static int aztfs_getxattr(const char *path, const char *name, char *value, size_t size)
{
    char *json;
    size_t len;

    if (strcmp(path, "/") != 0 || strcmp(name, STATS_XATTR) != 0)
        return strncmp(name, "user.", 5) == 0 ? -ENODATA : -ENOTSUP;
    if (!(json = stats_json(fs_ctx())))
        return -ENOMEM;
    len = strlen(json);
    if (size > 0 && size < len) {
        free(json);
        return -ERANGE;
    }
    if (size > 0)
        memcpy(value, json, len);
    free(json);
    return (int)len;
}

static int aztfs_listxattr(const char *path, char *list, size_t size)
{
    return 0;
}

const struct fuse_operations aztfs_ops = {
    .getxattr = aztfs_getxattr,
    .listxattr = aztfs_listxattr,
    .init = aztfs_init,
    .getattr = aztfs_getattr,
    .opendir = fs_opendir,
    .readdir = fs_readdir,
    .releasedir = fs_releasedir,
    .open = aztfs_open,
    .read = aztfs_read,
    .release = aztfs_release,
    .statfs = aztfs_statfs,
    .create = fs_create,
    .write = fs_write,
    .truncate = fs_truncate,
    .flush = fs_flush,
    .fsync = fs_fsync,
    .unlink = fs_unlink,
    .mkdir = fs_mkdir,
    .rmdir = fs_rmdir,
    .rename = fs_rename,
    .chmod = fs_chmod,
    .chown = fs_chown,
    .utimens = fs_utimens,
};

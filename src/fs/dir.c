/* fs/dir.c - FUSE directory callbacks: opendir, readdir, releasedir, mkdir, rmdir (fs_i.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs_i.h"
#include "store/store.h"

#ifndef AZTFS_DOCDIR /* set by Makefile.am: $(docdir) */
#define AZTFS_DOCDIR "/usr/share/doc/aztfs"
#endif
#define ONE_NAME "NAMES.md in " AZTFS_DOCDIR ", \"One name per key\""

/* An open directory. Offsets: 1 and 2 follow "." and "..", 3 + i follows
 * remote entry i, and local names (mkdir'd directories, scratch files)
 * come after the remote ones. The remote names only grow while the handle
 * is open, so every offset handed out stays valid: telldir/seekdir work and
 * a second pass (rewinddir) sees the same snapshot. */
struct dir_handle {
    struct fs_open_link link; /* first: the handle is its link (fs_dir_attach) */
    pthread_mutex_t lock;
    enum fsp_kind kind;         /* set by fs_opendir */
    struct scan_view *view;     /* remote names: complete, or growing page by page;
                                  set by fs_opendir, used with lock held */
    int err;                    /* a page failed: later calls fail the same; guarded by
                                  lock */
    struct listing *local;      /* local names not listed remotely, once known; guarded
                                  by lock */
    struct prefetch_walk *walk; /* a table's: its partitions fetched ahead (or NULL);
                                    set by fs_opendir, used with lock held */
    int at_end;                 /* the remote names were read to their end; guarded by
                                  lock */
};

static void dir_handle_free(struct dir_handle *h)
{
    if (!h)
        return;
    pthread_mutex_destroy(&h->lock);
    scan_view_free(h->view);
    listing_unref(h->local);
    free(h);
}

/* Close an open directory (released, or still open when the mount ends). */
static void dir_close(struct fs_open_link *l)
{
    struct dir_handle *h = (struct dir_handle *)l;

    prefetch_walk_end(h->walk, h->at_end); /* abandoned halfway: cancelled */
    dir_handle_free(h);
}

/* See fs/fs_i.h. */
int fs_opendir(const char *path, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct dir_handle *h;
    struct fspath fp;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind > FSP_PARTITION) {
        fspath_free(&fp);
        return -ENOTDIR;
    }
    if (!(h = calloc(1, sizeof(*h))) || lock_init(&h->lock) != 0) {
        free(h);
        fspath_free(&fp);
        return -ENOMEM;
    }
    h->kind = fp.kind;
    if (fp.kind == FSP_PARTITION) /* a fetch ahead under way is joined */
        prefetch_claim(a->prefetch, path);
    rc = scan_view_open(&a->store, &fp, path, &h->view);
    if (rc == 0 && fp.kind == FSP_TABLE && a->prefetch)
        h->walk = prefetch_walk_new(a->prefetch, fp.table);
    if (rc == -ENOENT && fp.kind == FSP_PARTITION && scratch_is_dir(a->scratch, path))
        rc = (h->view = scan_view_empty()) ? 0 : -ENOMEM; /* mkdir'd, nothing remote */
    fspath_free(&fp);
    if (rc < 0) {
        dir_handle_free(h);
        return rc;
    }
    fs_dir_attach(fi, &h->link, dir_close, path);
    return 0;
}

/* See fs/fs_i.h. */
int fs_releasedir(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    fs_dir_release(fs_ctx()->handles, (struct fs_open_link *)(uintptr_t)fi->fh);
    return 0;
}

/* A table's partition E is handed out: fetch its listing ahead of the walk. */
static void fetch_ahead(struct dir_handle *h, const char *path, const struct listing_ent *e)
{
    char *dir = fspath_join(path, e->name);

    if (dir) /* best effort: without it the walker lists it itself */
        (void)prefetch_add(h->walk, e->key, e->key_len, dir);
    free(dir);
}

static void add_local_name(struct dir_handle *h, const char *name)
{
    struct timespec none = { 0, 0 };

    /* best effort: a name that cannot be added is not shown */
    if (scan_view_find(h->view, name) < 0 && listing_find(h->local, name) < 0)
        (void)listing_add(h->local, name, name, 0, 0, none);
}

static void on_local_name(void *p, const char *name)
{
    add_local_name(p, name);
}

static void on_local_file(void *p, const char *name, const struct scratch_attr *sa)
{
    (void)sa;
    add_local_name(p, name);
}

/* The local names of directory PATH, once (after the remote ones). */
static int list_local(struct aztfs *a, struct dir_handle *h, const char *path)
{
    if (h->local)
        return 0;
    if (!(h->local = listing_new()))
        return -ENOMEM;
    if (h->kind == FSP_TABLE)
        scratch_list_dirs(a->scratch, path, on_local_name, h);
    else if (h->kind == FSP_PARTITION) {
        scratch_list(a->scratch, path, on_local_file, h);
        fs_pending_list(a->handles, path, on_local_name, h); /* new files not yet saved */
    }
    return 0;
}

/* Attributes of entry E of a partition, at PATH. Returns 1 with *st filled
 * (*plus: complete enough for readdirplus), 0 to leave the entry out (a
 * local file removed since). */
static int partition_entry_stat(struct aztfs *a, const char *path, const struct listing_ent *e,
                                int local, struct stat *st, int *plus)
{
    struct scratch_attr sa;
    struct timespec mt;
    size_t len;

    *plus = 1;
    if (fs_pending_size(a->handles, path, &len) == 0) {
        clock_gettime(CLOCK_REALTIME, &mt); /* open, with unsaved changes */
        fs_fill_file_stat(a, path, len, mt, st);
    } else if (local) {
        if (scratch_stat(a->scratch, path, &sa) < 0)
            return 0;
        fs_fill_scratch_stat(a, path, &sa, st);
    } else if (store_cached_attr(&a->store, path, &len, &mt) == 0) {
        fs_fill_file_stat(a, path, len, mt, st);
    } else if (e->has_attr) {
        fs_fill_file_stat(a, path, (size_t)e->size, e->mtime, st);
    } else {
        memset(st, 0, sizeof(*st));
        st->st_ino = fs_ino(a, fspath_ino(path));
        st->st_mode = FILE_MODE;
        *plus = 0;
    }
    return 1;
}

/* Pass entry E of directory DIR to FILLER with offset NEXT. Returns
 * FILLER's answer (1: the buffer is full). */
static int fill_entry(struct aztfs *a, enum fsp_kind kind, const char *dir,
                      const struct listing_ent *e, int local, off_t next, void *buf,
                      fuse_fill_dir_t filler)
{
    struct stat st;
    char *path = fspath_join(dir, e->name);
    int plus = 1, full = 0;

    if (!path)
        return 1;
    if (kind != FSP_PARTITION)
        fs_fill_dir_stat(a, path, &st);
    if (kind != FSP_PARTITION || partition_entry_stat(a, path, e, local, &st, &plus))
        full = filler(buf, e->name, &st, next, plus ? FUSE_FILL_DIR_PLUS : 0);
    free(path);
    return full;
}

/* See fs/fs_i.h. */
int fs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
               struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    struct aztfs *a = fs_ctx();
    struct dir_handle *h = (struct dir_handle *)(uintptr_t)fi->fh;
    struct listing_ent e;
    size_t pos, n;
    int rc = 0;

    (void)flags;
    if (off < 0)
        return -EINVAL;
    pthread_mutex_lock(&h->lock);
    if (h->err) {
        rc = h->err;
        goto out;
    }
    pos = (size_t)off;
    if (h->kind == FSP_PARTITION || h->kind == FSP_TABLE)
        store_dir_read(&a->store, path); /* a walk: its reads take this snapshot */
    if (pos == 0 && filler(buf, ".", NULL, ++pos, 0))
        goto out;
    if (pos == 1 && filler(buf, "..", NULL, ++pos, 0))
        goto out;
    for (; (rc = scan_view_get(h->view, pos - 2, &e)) == 0; pos++) {
        if (h->walk)
            fetch_ahead(h, path, &e);
        if (fill_entry(a, h->kind, path, &e, 0, (off_t)pos + 1, buf, filler))
            goto out;
    }
    if (rc == 1)
        h->at_end = 1;
    if (rc < 0) {
        h->err = rc;
        goto out;
    }
    if ((rc = list_local(a, h, path)) < 0)
        goto out;
    for (n = scan_view_count(h->view); pos - 2 - n < listing_count(h->local); pos++) {
        listing_get(h->local, pos - 2 - n, &e);
        if (fill_entry(a, h->kind, path, &e, 1, (off_t)pos + 1, buf, filler))
            break;
    }
out:
    pthread_mutex_unlock(&h->lock);
    return rc;
}

/* See fs_i.h. */
int fs_refused(struct aztfs *a, const char *op, const char *path, int rc, const char *why)
{
    struct failure f = { op, path, -rc, 0, NULL, why };

    log_error(&a->store.log, "%s: %s", path, why);
    failring_add(a->store.log.failures, &f); /* user.aztfs.errors */
    return rc;
}

/* See fs_i.h. */
int fs_refuse_name(struct aztfs *a, const char *op, const char *path)
{
    const char *name = strrchr(path, '/') + 1, *sfx = ".json";
    size_t len = strlen(name), sl = strlen(sfx);
    int file = len > sl && strcmp(name + len - sl, sfx) == 0;
    char *key = strndup(name, file ? len - sl : len), *right = NULL, *why = NULL;
    int rc;

    /* the name read as the key it spells literally ("50%" in "50%.json") */
    if (key)
        right = file ? keycodec_file_encode(key) : keycodec_encode(key);
    if (!right ||
        asprintf(&why,
                 "not the name of a key: each key has one spelling, '%%' "
                 "written %%25 and a leading '.' %%2E (" ONE_NAME "); the key '%s' is named '%s'",
                 key, right) < 0)
        why = NULL;
    rc = fs_refused(a, op, path, -EINVAL, why ? why : "not the name of a key (" ONE_NAME ")");
    free(why);
    free(right);
    free(key);
    return rc;
}

/* See fs/fs_i.h. */
int fs_mkdir(const char *path, mode_t mode)
{
    struct aztfs *a = fs_ctx();
    struct fspath fp;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0) {
        if (rc == -ENOENT && strchr(path + 1, '/') == NULL)
            return fs_refused(a, "mkdir", path, -EINVAL,
                              "not a valid table name (a letter, then 2-62 "
                              "letters or digits; 'Tables' is reserved)");
        if (rc == -ENOENT && strchr(strchr(path + 1, '/') + 1, '/') == NULL)
            return fs_refuse_name(a, "mkdir", path); /* a partition's */
        if (rc == -ENOENT)
            return fs_refused(a, "mkdir", path, -EPERM,
                              "directories are tables (at the top) or partitions "
                              "(inside a table), nothing deeper");
        if ((rc == -EINVAL || rc == -ENAMETOOLONG) && fspath_invalid_reason(path))
            return fs_refused(a, "mkdir", path, rc, fspath_invalid_reason(path));
        return rc;
    }
    switch (fp.kind) {
    case FSP_TABLE:
        rc = store_create_table(&a->store, path, fp.table);
        break;
    case FSP_PARTITION:
        rc = scratch_is_dir(a->scratch, path) ? 1 : store_partition_exists(&a->store, &fp, 0);
        if (rc == 1)
            rc = -EEXIST;
        else if (rc == 0 && (rc = scratch_mkdir(a->scratch, path)) == 0)
            rc = store_partition_made(&a->store, &fp);
        break;
    default:
        rc = fs_refused(a, "mkdir", path, -EPERM,
                        "directories are tables (at the top) or partitions "
                        "(inside a table), nothing deeper");
    }
    fspath_free(&fp);
    return rc;
}

static void count_name(void *ctx, const char *name)
{
    (void)name;
    ++*(size_t *)ctx;
}

/* rmdir of partition PATH (FP): nothing open in it, nothing local, no
 * entity. */
static int rmdir_partition(struct aztfs *a, const char *path, struct fspath *fp)
{
    size_t local = 0;
    int rc;

    fs_pending_list(a->handles, path, count_name, &local); /* new files not yet saved */
    if (local + scratch_count(a->scratch, path) > 0)
        return -ENOTEMPTY;
    rc = store_partition_exists(&a->store, fp, 1);
    if (rc == 1)
        return -ENOTEMPTY;
    if (rc == 0) {
        rc = scratch_rmdir(a->scratch, path);
        store_forget(&a->store, path);
        store_forget(&a->store, fp->parent); /* the table's listing */
    }
    return rc;
}

/* See fs/fs_i.h. */
int fs_rmdir(const char *path)
{
    struct aztfs *a = fs_ctx();
    struct fspath fp;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind == FSP_TABLE) /* a partition made with mkdir is not empty */
        rc = scratch_has_dirs(a->scratch, path) ? -ENOTEMPTY :
                                                  store_remove_table(&a->store, path, fp.table);
    else if (fp.kind == FSP_PARTITION)
        rc = rmdir_partition(a, path, &fp);
    else
        rc = -ENOTDIR;
    fspath_free(&fp);
    return rc;
}

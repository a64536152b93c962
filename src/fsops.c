/* fsops.c - FUSE callbacks: the tree of tables, partitions and entity files. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "entity.h"
#include "fsint.h"
#include "keycodec.h"
#include "stats.h"

/* A growable listing under construction. */
struct dirvec {
    struct cache_dirent *v;
    size_t n, cap;
};

static void dirvec_free(struct dirvec *d)
{
    cache_dirents_free(d->v, d->n);
    memset(d, 0, sizeof(*d));
}

/* Append (NAME, KEY); both are copied. Returns 0 or -ENOMEM. */
static int dirvec_push(struct dirvec *d, const char *name, const char *key)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        struct cache_dirent *v = realloc(d->v, cap * sizeof(*v));

        if (!v)
            return -ENOMEM;
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n].name = strdup(name);
    d->v[d->n].key = strdup(key);
    if (!d->v[d->n].name || !d->v[d->n].key) {
        free(d->v[d->n].name);
        free(d->v[d->n].key);
        return -ENOMEM;
    }
    d->n++;
    return 0;
}

/* "PARENT/NAME" (PARENT "/" gives "/NAME"); NULL on ENOMEM. */
char *fs_path_join(const char *parent, const char *name)
{
    char *p;

    if (asprintf(&p, "%s/%s", strcmp(parent, "/") == 0 ? "" : parent, name) < 0)
        return NULL;
    return p;
}

static void fill_dir_stat(const struct aztfs *a, const char *path, struct stat *st)
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

static void fill_file_stat(const struct aztfs *a, const char *path, size_t len,
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
int fs_cache_entity(struct aztfs *a, const char *dir, json_t *e, char **name_out,
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
    if (rc == 0 && name_out) {
        *name_out = name;
        name = NULL;
    }
out:
    free(text);
    free(name);
    free(path);
    return rc;
}

/* --- listings ------------------------------------------------------------ */

struct tables_scan {
    struct dirvec names;
};

static int on_tables_page(void *p, json_t *value)
{
    struct tables_scan *s = p;
    size_t i;
    json_t *t;

    json_array_foreach(value, i, t) {
        const char *name = json_string_value(json_object_get(t, "TableName"));
        int rc;

        if (name && fspath_valid_table_name(name) &&
            (rc = dirvec_push(&s->names, name, name)) < 0)
            return rc;
    }
    return 0;
}

/* List the account's tables into the cache ("/"); with OUT non-NULL, also
 * hand the listing to the caller (the cache may keep nothing). */
static int list_root(struct aztfs *a, struct az_status *st, struct dirvec *out)
{
    struct tables_scan s = { 0 };
    int rc = table_list_tables(a->tc, 0, on_tables_page, &s, st);

    if (rc == 0)
        rc = cache_put_dir(a->cache, "/", s.names.v, s.names.n);
    if (rc == 0 && out) {
        *out = s.names;
        return 0;
    }
    dirvec_free(&s.names);
    return rc;
}

/* See fsops.h. */
int fs_list_root(struct aztfs *a, struct az_status *st)
{
    return list_root(a, st, NULL);
}

/* State of a scan that fills entity listings (one partition or a table). */
struct entity_scan {
    struct aztfs *a;
    const char *table;
    char *cur_pk;              /* partition being collected */
    char *cur_dir;             /* its directory path */
    struct dirvec files;       /* its entries */
    struct dirvec parts;       /* partitions seen (table scans) */
};

/* Close the partition being collected: cache its listing, note its name.
 * With KEEP non-NULL the listing is also moved there. */
static int scan_finish_partition(struct entity_scan *s, struct dirvec *keep)
{
    int rc = 0;

    if (!s->cur_pk)
        return 0;
    rc = cache_put_dir(s->a->cache, s->cur_dir, s->files.v, s->files.n);
    if (rc == 0) {
        const char *name = strrchr(s->cur_dir, '/') + 1;

        rc = dirvec_push(&s->parts, name, s->cur_pk);
    }
    if (rc == 0 && keep) {
        *keep = s->files;
        memset(&s->files, 0, sizeof(s->files));
    }
    dirvec_free(&s->files);
    free(s->cur_pk);
    free(s->cur_dir);
    s->cur_pk = s->cur_dir = NULL;
    return rc;
}

static int on_entities_page(void *p, json_t *value)
{
    struct entity_scan *s = p;
    size_t i;
    json_t *e;

    json_array_foreach(value, i, e) {
        const char *pk = json_string_value(json_object_get(e, "PartitionKey"));
        const char *rk = json_string_value(json_object_get(e, "RowKey"));
        char *name = NULL;
        int rc;

        if (!pk || !rk)
            continue;
        if (!s->cur_pk || strcmp(pk, s->cur_pk) != 0) {
            char *pk_name, *tdir = NULL;

            if ((rc = scan_finish_partition(s, NULL)) < 0)
                return rc;
            if (!(pk_name = keycodec_encode(pk)) || asprintf(&tdir, "/%s/%s", s->table, pk_name) < 0) {
                free(pk_name);
                return -ENOMEM;
            }
            free(pk_name);
            s->cur_dir = tdir;
            if (!(s->cur_pk = strdup(pk)))
                return -ENOMEM;
        }
        rc = fs_cache_entity(s->a, s->cur_dir, e, &name, NULL);
        if (rc == -ENOMEM)
            return rc;
        if (rc < 0)
            continue;      /* logged; an entity we cannot show is left out */
        rc = dirvec_push(&s->files, name, rk);
        free(name);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static void scan_clear(struct entity_scan *s)
{
    free(s->cur_pk);
    free(s->cur_dir);
    dirvec_free(&s->files);
    dirvec_free(&s->parts);
}

/* Scan a whole table once: fills every partition's listing and entity files,
 * and the table's own listing of partitions (also moved to OUT if non-NULL). */
static int scan_table(struct aztfs *a, const char *table, struct dirvec *out)
{
    struct entity_scan s = { .a = a, .table = table };
    struct az_status st;
    char *tdir = NULL;
    int rc;

    rc = table_query(a->tc, table, NULL, NULL, 0, on_entities_page, &s, &st);
    if (rc == 0)
        rc = scan_finish_partition(&s, NULL);
    if (rc == 0) {
        if (asprintf(&tdir, "/%s", table) < 0) {
            tdir = NULL;
            rc = -ENOMEM;
        } else {
            rc = cache_put_dir(a->cache, tdir, s.parts.v, s.parts.n);
        }
    }
    if (rc == 0 && out) {
        *out = s.parts;
        memset(&s.parts, 0, sizeof(s.parts));
    }
    free(tdir);
    scan_clear(&s);
    return rc;
}

/* Scan one partition: fills its listing (also moved to OUT if non-NULL) and
 * entity files. */
static int scan_partition(struct aztfs *a, const char *table, const char *pk, const char *dir,
                          struct dirvec *out)
{
    struct entity_scan s = { .a = a, .table = table };
    struct az_status st;
    char *lit = table_odata_literal(pk), *filter = NULL;
    int rc = -ENOMEM;

    if (!lit || asprintf(&filter, "PartitionKey eq %s", lit) < 0) {
        filter = NULL;
        goto out;
    }
    rc = table_query(a->tc, table, filter, NULL, 0, on_entities_page, &s, &st);
    if (rc == 0 && !s.cur_pk)       /* empty: still a (now empty) listing */
        rc = cache_put_dir(a->cache, dir, NULL, 0);
    else if (rc == 0)
        rc = scan_finish_partition(&s, out);
out:
    free(lit);
    free(filter);
    scan_clear(&s);
    return rc;
}

/* Resolve NAME in directory DIRPATH to its key using the listing (filling
 * it when not cached). Returns 0 with malloc'd *key, -ENOENT, -errno. */
static int resolve_by_listing(struct aztfs *a, const struct fspath *fp, const char *dirpath,
                              const char *name, char **key)
{
    int rc = cache_dir_lookup(a->cache, dirpath, name, key);

    if (rc != -EAGAIN)
        return rc;
    if (fp->kind == FSP_PARTITION || !fp->pk)
        rc = scan_table(a, fp->table, NULL);
    else
        rc = scan_partition(a, fp->table, fp->pk, dirpath, NULL);
    if (rc < 0)
        return rc;
    rc = cache_dir_lookup(a->cache, dirpath, name, key);
    return rc == -EAGAIN ? -ENOENT : rc;
}

/* Fill in FP->pk (and FP->rk for entities) when the names are long-form. */
int fs_resolve_keys(struct aztfs *a, struct fspath *fp)
{
    char *tdir = NULL;
    int rc = 0;

    if (!fp->pk) {
        if (asprintf(&tdir, "/%s", fp->table) < 0)
            return -ENOMEM;
        rc = resolve_by_listing(a, fp, tdir, fp->pk_name, &fp->pk);
        free(tdir);
        if (rc < 0)
            return rc;
    }
    if (fp->kind == FSP_ENTITY && !fp->rk)
        rc = resolve_by_listing(a, fp, fp->parent, fp->file_name, &fp->rk);
    return rc;
}

/* The entity at PATH: from the cache when fresh, else a point query. */
int fs_load_entity(struct aztfs *a, struct fspath *fp, const char *path,
                       struct cache_file *out)
{
    struct az_status st;
    json_t *e = NULL;
    int rc;

    if (cache_get_file(a->cache, path, out) == 0)
        return 0;
    /* A fresh listing of the partition that lacks the name settles it. */
    rc = cache_dir_lookup(a->cache, fp->parent, fp->file_name, NULL);
    if (rc == -ENOENT)
        return rc;
    if ((rc = fs_resolve_keys(a, fp)) < 0)
        return rc;
    if (cache_get_file(a->cache, path, out) == 0)   /* resolving may have listed */
        return 0;
    rc = table_get_entity(a->tc, fp->table, fp->pk, fp->rk, &e, NULL, &st);
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
    struct az_status st;
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
    if (rc == 0 && found)
        cache_put_exists(a->cache, pdir);
    free(filter);
    free(lit);
    free(pdir);
    return rc < 0 ? rc : found;
}

/* --- FUSE callbacks ------------------------------------------------------ */

static void *aztfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    struct aztfs *a = fs_ctx();

    cfg->use_ino = 1;
    cfg->readdir_ino = 1;
    cfg->entry_timeout = a->cache_timeout;
    /* 0: a saved entity is rendered canonically, so its size is not the
     * size the kernel saw written; getattr is answered from our cache */
    cfg->attr_timeout = 0;
    cfg->negative_timeout = a->cache_timeout > 1 ? 1 : a->cache_timeout;
    cfg->direct_io = 1;       /* reads return the entity as opened: see doc/ */
    cfg->nullpath_ok = 0;
    return a;
}

static void fill_scratch_stat(const struct aztfs *a, const char *path,
                              const struct scratch_attr *sa, struct stat *st)
{
    fill_file_stat(a, path, sa->size, sa->mtime, st);
    st->st_mode = S_IFREG | (sa->mode & 07777);
    st->st_nlink = 1;
}

static int aztfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct open_file *of = fs_handle(fi);
    struct scratch_attr sa;
    struct fspath fp;
    struct cache_file f = { 0 };
    int rc;

    if (of && !of->scratch) {
        int unsaved;
        struct timespec mt;

        /* unsaved changes show as they are; otherwise the entity as stored */
        pthread_mutex_lock(&of->lock);
        unsaved = of->written || of->is_new || !of->path;
        if (unsaved) {
            clock_gettime(CLOCK_REALTIME, &mt);
            fill_file_stat(a, path, of->len, mt, st);
        }
        pthread_mutex_unlock(&of->lock);
        if (unsaved)
            return 0;
    }
    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind == FSP_ENTITY) {
        size_t len;
        struct timespec mt;

        if (fs_pending_size(a, path, &len) == 0) {
            clock_gettime(CLOCK_REALTIME, &mt);
            fill_file_stat(a, path, len, mt, st);
            fspath_free(&fp);
            return 0;
        }
    }
    switch (fp.kind) {
    case FSP_ROOT:
        fill_dir_stat(a, path, st);
        break;
    case FSP_TABLE:
        rc = cache_dir_lookup(a->cache, "/", fp.table, NULL);
        if (rc == -EAGAIN) {
            struct az_status as;

            rc = table_exists(a->tc, fp.table, &as);
            rc = rc < 0 ? rc : rc == 1 ? 0 : -ENOENT;
        }
        if (rc == 0)
            fill_dir_stat(a, path, st);
        break;
    case FSP_PARTITION:
        rc = scratch_is_dir(a->scratch, path) ? 1 : fs_partition_exists(a, &fp, 0);
        rc = rc < 0 ? rc : rc == 1 ? 0 : -ENOENT;
        if (rc == 0)
            fill_dir_stat(a, path, st);
        break;
    case FSP_ENTITY:
        if ((rc = fs_load_entity(a, &fp, path, &f)) == 0)
            fill_file_stat(a, path, f.len, f.mtime, st);
        cache_file_clear(&f);
        break;
    case FSP_SCRATCH:
        rc = scratch_stat(a->scratch, path, &sa);
        if (rc == 0)
            fill_scratch_stat(a, path, &sa, st);
        break;
    }
    fspath_free(&fp);
    return rc;
}

/* Pass every entry of ENTS to FILLER, with attributes where they are known. */
static int fill_listing(struct aztfs *a, const char *dir, const struct cache_dirent *ents,
                        size_t n, int dirs, void *buf, fuse_fill_dir_t filler)
{
    for (size_t i = 0; i < n; i++) {
        char *path = fs_path_join(dir, ents[i].name);
        struct stat st;
        enum fuse_fill_dir_flags ff = FUSE_FILL_DIR_PLUS;
        size_t len;
        struct timespec mt;

        if (!path)
            return -ENOMEM;
        if (dirs)
            fill_dir_stat(a, path, &st);
        else if (cache_file_attr(a->cache, path, &len, &mt) == 0)
            fill_file_stat(a, path, len, mt, &st);
        else {
            memset(&st, 0, sizeof(st));
            st.st_ino = fspath_ino(path);
            st.st_mode = FILE_MODE;
            ff = 0;
        }
        free(path);
        if (filler(buf, ents[i].name, &st, 0, ff))
            break;
    }
    return 0;
}

/* Extra names the mount holds locally, merged into a listing. */
struct local_fill {
    struct aztfs *a;
    const char *dir;
    const struct cache_dirent *ents;   /* remote names, to skip duplicates */
    size_t n;
    void *buf;
    fuse_fill_dir_t filler;
};

static int listed_remotely(const struct local_fill *lf, const char *name)
{
    for (size_t i = 0; i < lf->n; i++)
        if (strcmp(lf->ents[i].name, name) == 0)
            return 1;
    return 0;
}

static void fill_local_dir(void *p, const char *name)
{
    struct local_fill *lf = p;
    char *path = fs_path_join(lf->dir, name);
    struct stat st;

    if (!path || listed_remotely(lf, name)) {
        free(path);
        return;
    }
    fill_dir_stat(lf->a, path, &st);
    lf->filler(lf->buf, name, &st, 0, FUSE_FILL_DIR_PLUS);
    free(path);
}

static void fill_local_file(void *p, const char *name, const struct scratch_attr *sa)
{
    struct local_fill *lf = p;
    char *path = fs_path_join(lf->dir, name);
    struct stat st;

    if (!path)
        return;
    fill_scratch_stat(lf->a, path, sa, &st);
    lf->filler(lf->buf, name, &st, 0, FUSE_FILL_DIR_PLUS);
    free(path);
}

static int aztfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                         struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    struct aztfs *a = fs_ctx();
    struct cache_dirent *ents = NULL;
    struct dirvec fetched = { 0 };
    struct az_status st;
    size_t n = 0;
    struct fspath fp;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    /* a cached listing, else one fetched now (which the cache may not keep:
     * cache_timeout=0 or a listing larger than the cache) */
    rc = fp.kind <= FSP_PARTITION ? cache_get_dir(a->cache, path, &ents, &n) : -ENOTDIR;
    if (rc == -ENOENT) {
        if (fp.kind == FSP_ROOT)
            rc = list_root(a, &st, &fetched);
        else if (fp.kind == FSP_TABLE)
            rc = scan_table(a, fp.table, &fetched);
        else if ((rc = fs_resolve_keys(a, &fp)) == 0)
            rc = scan_partition(a, fp.table, fp.pk, path, &fetched);
        if (rc == -ENOENT && fp.kind == FSP_PARTITION && scratch_is_dir(a->scratch, path))
            rc = 0;     /* made with mkdir, nothing in the table yet */
        ents = fetched.v;
        n = fetched.n;
        memset(&fetched, 0, sizeof(fetched));
    }
    if (rc == 0) {
        struct local_fill lf = { a, path, ents, n, buf, filler };

        filler(buf, ".", NULL, 0, 0);
        filler(buf, "..", NULL, 0, 0);
        rc = fill_listing(a, path, ents, n, fp.kind != FSP_PARTITION, buf, filler);
        if (fp.kind == FSP_TABLE)
            scratch_list_dirs(a->scratch, path, fill_local_dir, &lf);
        else if (fp.kind == FSP_PARTITION)
            scratch_list(a->scratch, path, fill_local_file, &lf);
    }
    cache_dirents_free(ents, n);
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

/* A new handle holding the entity at PATH (text and ETag, from the cache
 * when fresh, else a point query). Returns 0 with *out, or -errno. */
int fs_open_entity(struct aztfs *a, struct fspath *fp, const char *path,
                   struct open_file **out)
{
    struct cache_file f = { 0 };
    struct open_file *of;
    int rc = fs_load_entity(a, fp, path, &f);

    if (rc < 0)
        return rc;
    if (!(of = fs_open_file_new())) {
        cache_file_clear(&f);
        return -ENOMEM;
    }
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
            fi->fh = (uint64_t)(uintptr_t)of;
            fi->direct_io = 1;
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
    fi->fh = (uint64_t)(uintptr_t)of;
    fi->direct_io = 1;
    return 0;
}

static int aztfs_read(const char *path, char *buf, size_t size, off_t off,
                      struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);
    int rc = 0;

    if (off < 0)
        return -EINVAL;
    if (of->scratch)
        return (int)scratch_read(fs_ctx()->scratch, path, buf, size, off);
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
    .readdir = aztfs_readdir,
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

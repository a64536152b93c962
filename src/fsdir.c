/* fsdir.c - directory listings: scans that fill the cache, and readdir streamed page by page. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsint.h"
#include "keycodec.h"

/* What one scanned entity costs the cache beyond its text: the entry's
 * overhead, path and ETag, and its record in a listing (an estimate). */
#define SCAN_ENTITY_COST 320
/* Entities in a full page of Query Entities (the service's maximum). */
#define TABLE_PAGE 1000

/* A scan that fills listings: the tables of the account (FSP_ROOT), the
 * entities of a whole table (FSP_TABLE: the table's listing holds its
 * partitions, and each partition's listing is cached as the scan passes
 * it), or those of one partition (FSP_PARTITION).
 *
 * A table scan that has cached half of cache_size stops: the table does not
 * fit, so what it would cache next would evict what it cached first and
 * every partition would be fetched twice. It skips ahead instead: one query
 * per remaining partition ("PartitionKey gt LAST", $top=1, only the key)
 * names the next one, whose entities are fetched when it is listed. */
struct dir_scan {
    struct aztfs *a;
    enum fsp_kind kind;
    char *table;               /* FSP_TABLE, FSP_PARTITION */
    char *dir;                 /* path of the directory listed */
    struct table_cursor *cur;  /* NULL for a root listing of -o tables= */
    struct listing *out;       /* the directory's listing, growing */
    char *cur_pk;              /* FSP_TABLE: partition being collected */
    char *cur_dir;
    struct listing *files;     /* ... and its files */
    size_t charged, budget;    /* FSP_TABLE: cache bytes this scan filled, its limit */
    size_t entities, partitions;  /* FSP_TABLE: seen by the scan */
    int skipping;              /* FSP_TABLE: naming partitions one query each (the
                                * one a query named is cur_pk) */
    int done;
};

static void scan_free(struct dir_scan *s)
{
    if (!s)
        return;
    free(s->table);
    free(s->dir);
    table_cursor_free(s->cur);
    listing_unref(s->out);
    free(s->cur_pk);
    free(s->cur_dir);
    listing_unref(s->files);
    free(s);
}

/* A scan of directory DIR (parsed as FP, keys resolved). Returns 0 with *out
 * or -ENOMEM. Nothing is sent yet. */
static int scan_new(struct aztfs *a, const struct fspath *fp, const char *dir,
                    struct dir_scan **out)
{
    struct dir_scan *s = calloc(1, sizeof(*s));
    char *lit = NULL, *filter = NULL;
    int rc = -ENOMEM;

    *out = NULL;
    if (!s)
        return -ENOMEM;
    s->a = a;
    s->kind = fp->kind;
    if (!(s->dir = strdup(dir)) || !(s->out = listing_new()))
        goto fail;
    if (fp->kind != FSP_ROOT && !(s->table = strdup(fp->table)))
        goto fail;
    if (fp->kind == FSP_PARTITION &&
        (!(lit = table_odata_literal(fp->pk)) ||
         asprintf(&filter, "PartitionKey eq %s", lit) < 0)) {
        filter = NULL;
        goto fail;
    }
    if (!(fp->kind == FSP_ROOT && a->tables)) {
        if ((rc = table_cursor_new(&s->cur, s->table, filter, NULL, 0)) < 0)
            goto fail;
        table_cursor_prefetch(s->cur, 1);
    }
    if (fp->kind == FSP_TABLE) {
        struct cache_stats cs;

        cache_get_stats(a->cache, &cs);
        s->budget = a->cache_timeout > 0 ? cs.max_bytes / 2 : 0;
    }
    free(lit);
    free(filter);
    *out = s;
    return 0;
fail:
    free(lit);
    free(filter);
    scan_free(s);
    return rc;
}

static int on_tables_page(void *p, json_t *value)
{
    struct dir_scan *s = p;
    struct timespec none = { 0, 0 };
    size_t i;
    json_t *t;

    json_array_foreach(value, i, t) {
        const char *name = json_string_value(json_object_get(t, "TableName"));
        int rc;

        if (name && fspath_valid_table_name(name) &&
            (rc = listing_add(s->out, name, name, 0, 0, none)) < 0)
            return rc;
    }
    return 0;
}

/* FSP_TABLE: the current partition is done with: name it in the table's
 * listing, and cache its own listing when COMPLETE (the scan saw all of it). */
static int finish_partition(struct dir_scan *s, int complete)
{
    int rc = 0;

    if (!s->cur_pk)
        return 0;
    if (complete)
        rc = cache_put_listing(s->a->cache, s->cur_dir, s->files);
    if (rc == 0)
        rc = listing_add(s->out, strrchr(s->cur_dir, '/') + 1, s->cur_pk, 0, 0,
                         (struct timespec){ 0, 0 });
    listing_unref(s->files);
    free(s->cur_pk);
    free(s->cur_dir);
    s->files = NULL;
    s->cur_pk = s->cur_dir = NULL;
    return rc;
}

/* FSP_TABLE: make PK the current partition (cur_pk, cur_dir). */
static int set_partition(struct dir_scan *s, const char *pk)
{
    char *pk_name = keycodec_encode(pk), *dup = strdup(pk), *dir = NULL;

    if (!pk_name || !dup || asprintf(&dir, "%s/%s", s->dir, pk_name) < 0) {
        free(pk_name);
        free(dup);
        return -ENOMEM;
    }
    free(pk_name);
    free(s->cur_pk);
    free(s->cur_dir);
    s->cur_pk = dup;
    s->cur_dir = dir;
    return 0;
}

/* FSP_TABLE: start collecting partition PK. */
static int start_partition(struct dir_scan *s, const char *pk)
{
    int rc;

    if ((rc = finish_partition(s, 1)) < 0 || (rc = set_partition(s, pk)) < 0)
        return rc;
    s->partitions++;
    return (s->files = listing_new()) ? 0 : -ENOMEM;
}

/* FSP_TABLE: has the scan filled its half of the cache, with partitions of
 * a page or more on average? Naming a partition costs a query, so skipping
 * only pays when it saves at least a page per partition. */
static int over_budget(const struct dir_scan *s)
{
    return s->charged > s->budget && s->entities >= (size_t)TABLE_PAGE * s->partitions;
}

/* FSP_TABLE: could the next page take the scan over its budget? (Then the
 * page after it may never be asked for.) */
static int near_budget(const struct dir_scan *s)
{
    size_t per = s->entities ? s->charged / s->entities : 1024;

    return s->charged + per * TABLE_PAGE > s->budget;
}

static int on_entities_page(void *p, json_t *value)
{
    struct dir_scan *s = p;
    size_t i;
    json_t *e;

    json_array_foreach(value, i, e) {
        const char *pk = json_string_value(json_object_get(e, "PartitionKey"));
        const char *rk = json_string_value(json_object_get(e, "RowKey"));
        struct fs_shown shown;
        int rc;

        if (!pk || !rk)
            continue;
        if (s->kind == FSP_TABLE && (!s->cur_pk || strcmp(pk, s->cur_pk) != 0) &&
            (rc = start_partition(s, pk)) < 0)
            return rc;
        rc = fs_cache_entity(s->a, s->kind == FSP_TABLE ? s->cur_dir : s->dir, e, &shown,
                             NULL);
        if (rc == -ENOMEM)
            return rc;
        if (rc < 0)
            continue;      /* logged; an entity we cannot show is left out */
        rc = listing_add(s->kind == FSP_TABLE ? s->files : s->out, shown.name, rk, 1,
                         shown.len, shown.mtime);
        s->charged += shown.len + SCAN_ENTITY_COST;
        s->entities++;
        free(shown.name);
        if (rc < 0)
            return rc;
        if (s->kind == FSP_TABLE && over_budget(s))
            return 1;      /* skip ahead (table_scan_next) */
    }
    return 0;
}

/* FSP_TABLE, skipping: the one entity of "PartitionKey gt LAST" names the
 * next partition. */
static int on_skip_page(void *p, json_t *value)
{
    struct dir_scan *s = p;
    const char *pk = json_string_value(json_object_get(json_array_get(value, 0),
                                                       "PartitionKey"));
    int rc;

    if (!pk)
        return 0;          /* an empty page: the continuation goes on */
    return (rc = set_partition(s, pk)) < 0 ? rc : 1;
}

/* FSP_TABLE: replace the cursor by a query for the first partition after
 * the current one, which is named in the table's listing without its own
 * (the scan has not seen all of it). Returns 0 or -errno. */
static int skip_ahead(struct dir_scan *s)
{
    char *lit = NULL, *filter = NULL;
    int rc = -ENOMEM, rc2;

    table_cursor_free(s->cur);
    s->cur = NULL;
    if ((lit = table_odata_literal(s->cur_pk)) &&
        asprintf(&filter, "PartitionKey gt %s", lit) >= 0)
        rc = table_cursor_new(&s->cur, s->table, filter, "PartitionKey", 1);
    else
        filter = NULL;
    free(lit);
    free(filter);
    rc2 = finish_partition(s, 0);
    return rc < 0 ? rc : rc2;
}

/* FSP_TABLE: after a page of the scan or of a skip query, decide what comes
 * next. Returns 1 when the table's listing is complete, 0 when more is to
 * be fetched, or -errno. */
static int table_scan_next(struct dir_scan *s)
{
    /* scanning within budget, or a skip page that named nothing (empty,
     * with a continuation, or the end) */
    if (s->skipping ? !s->cur_pk : !over_budget(s))
        return table_cursor_done(s->cur);
    if (!s->skipping) {
        log_debug(&s->a->log, "%s: larger than half the cache: naming the remaining "
                  "partitions one query each", s->dir);
        s->skipping = 1;
    }
    return skip_ahead(s);
}

/* -o tables=: probe each named table with a one-entity query (a SAS scoped
 * to tables may not Query Tables). Absent tables are left out, with a note. */
static int list_named_tables(struct dir_scan *s, struct az_status *st)
{
    struct aztfs *a = s->a;
    struct timespec none = { 0, 0 };

    for (char **t = a->tables; *t; t++) {
        int rc = fs_table_probe(a, *t, st);

        if (rc == -ENOENT) {
            log_debug(&a->log, "table '%s' named in -o tables= does not exist", *t);
            continue;
        }
        if (rc < 0 || (rc = listing_add(s->out, *t, *t, 0, 0, none)) < 0)
            return rc;
    }
    return 0;
}

/* Fetch the next page of S into its listings. When the last page is in,
 * the directory's listing is sealed and cached. Returns 0 or -errno. */
static int scan_step(struct dir_scan *s, struct az_status *st)
{
    int rc;

    if (s->done)
        return 0;
    if (s->kind == FSP_TABLE && !s->skipping)    /* no page fetched for nothing */
        table_cursor_prefetch(s->cur, !near_budget(s));
    if (!s->cur)
        rc = list_named_tables(s, st);
    else
        rc = table_cursor_next(s->a->tc, s->cur,
                               s->kind == FSP_ROOT ? on_tables_page :
                               s->skipping ? on_skip_page : on_entities_page, s, st);
    if (rc < 0) {
        if (rc != -ENOENT)
            fs_log_failure(s->a, "list", s->dir, rc, st, NULL);
        return rc;
    }
    if (s->kind == FSP_TABLE && (rc = table_scan_next(s)) <= 0)
        return rc;          /* more to fetch, or failed */
    if (s->kind != FSP_TABLE && s->cur && !table_cursor_done(s->cur))
        return 0;           /* more pages to come */
    s->done = 1;
    if ((rc = finish_partition(s, 1)) < 0)
        return rc;
    return cache_put_listing(s->a->cache, s->dir, s->out);
}

/* Run S to its end. Returns 0 or -errno (details in *st). */
static int scan_run(struct dir_scan *s, struct az_status *st)
{
    int rc = 0;

    while (!s->done && (rc = scan_step(s, st)) == 0)
        ;
    return rc;
}

/* Scan directory DIR (FP parsed from it) to its end, filling the cache.
 * With NAME, also look it up in the scan's own listing (which the cache may
 * not have kept: cache_timeout=0, a listing larger than the cache): *KEY
 * gets a malloc'd copy of its key, or -ENOENT is returned when the listing
 * does not hold it. Returns 0 or -errno (details in *st). */
static int scan_dir(struct aztfs *a, const struct fspath *fp, const char *dir,
                    const char *name, char **key, struct az_status *st)
{
    struct dir_scan *s;
    int rc = scan_new(a, fp, dir, &s);
    long i;

    if (rc == 0)
        rc = scan_run(s, st);
    if (rc == 0 && name) {
        if ((i = listing_find(s->out, name)) < 0)
            rc = -ENOENT;
        else if (!(*key = listing_key_dup(s->out, (size_t)i)))
            rc = -ENOMEM;
    }
    scan_free(s);
    return rc;
}

/* See fsops.h. */
int fs_list_root(struct aztfs *a, struct az_status *st)
{
    struct fspath fp = { .kind = FSP_ROOT };

    return scan_dir(a, &fp, "/", NULL, NULL, st);
}

/* Resolve NAME in directory DIRPATH to its key using the listing (filling
 * it when not cached). Returns 0 with malloc'd *key, -ENOENT, -errno. */
static int resolve_by_listing(struct aztfs *a, const struct fspath *fp, const char *dirpath,
                              const char *name, char **key)
{
    struct fspath dfp = { .kind = fp->kind == FSP_PARTITION || !fp->pk ? FSP_TABLE
                                                                      : FSP_PARTITION,
                          .table = fp->table, .pk = fp->pk };
    struct az_status st;
    int rc = cache_dir_lookup(a->cache, dirpath, name, key);

    if (rc != -EAGAIN)
        return rc;
    /* a partition's name: scan the table (which lists its partitions);
     * an entity's: scan its partition */
    return scan_dir(a, &dfp, dirpath, name, key, &st);
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

/* --- readdir ------------------------------------------------------------- */

/* An open directory. Offsets: 1 and 2 follow "." and "..", 3 + i follows
 * remote entry i, and local names (mkdir'd directories, scratch files)
 * come after the remote ones. The listing only grows while the handle is
 * open, so every offset handed out stays valid: telldir/seekdir work and
 * a second pass (rewinddir) sees the same snapshot. */
struct dir_handle {
    pthread_mutex_t lock;
    enum fsp_kind kind;
    struct listing *l;         /* remote names: complete, or growing with scan */
    struct dir_scan *scan;     /* pages still to fetch, or NULL */
    int err;                   /* a page failed: later calls fail the same */
    struct listing *local;     /* local names not listed remotely, once known */
};

static void dir_handle_free(struct dir_handle *h)
{
    if (!h)
        return;
    pthread_mutex_destroy(&h->lock);
    listing_unref(h->l);
    scan_free(h->scan);
    listing_unref(h->local);
    free(h);
}

/* See fsint.h. */
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
    if (!(h = calloc(1, sizeof(*h))) || pthread_mutex_init(&h->lock, NULL) != 0) {
        free(h);
        fspath_free(&fp);
        return -ENOMEM;
    }
    h->kind = fp.kind;
    /* a cached listing is shared as it is; else pages are fetched as
     * readdir reaches them */
    if (!(h->l = cache_get_listing(a->cache, path))) {
        if (fp.kind == FSP_PARTITION)
            rc = fs_resolve_keys(a, &fp);
        if (rc == 0)
            rc = scan_new(a, &fp, path, &h->scan);
        if (rc == 0)
            h->l = listing_ref(h->scan->out);
        else if (rc == -ENOENT && fp.kind == FSP_PARTITION &&
                 scratch_is_dir(a->scratch, path))
            rc = (h->l = listing_new()) ? 0 : -ENOMEM;    /* mkdir'd, nothing remote */
    }
    fspath_free(&fp);
    if (rc < 0) {
        dir_handle_free(h);
        return rc;
    }
    fi->fh = (uint64_t)(uintptr_t)h;
    return 0;
}

int fs_releasedir(const char *path, struct fuse_file_info *fi)
{
    dir_handle_free((struct dir_handle *)(uintptr_t)fi->fh);
    return 0;
}

static void add_local_name(struct dir_handle *h, const char *name)
{
    struct timespec none = { 0, 0 };

    /* best effort: a name that cannot be added is not shown */
    if (listing_find(h->l, name) < 0 && listing_find(h->local, name) < 0)
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

/* Pass entry E of directory DIR to FILLER with offset NEXT. Returns
 * FILLER's answer (1: the buffer is full). */
static int fill_entry(struct aztfs *a, enum fsp_kind kind, const char *dir,
                      const struct listing_ent *e, int local, off_t next, void *buf,
                      fuse_fill_dir_t filler)
{
    enum fuse_fill_dir_flags ff = FUSE_FILL_DIR_PLUS;
    struct scratch_attr sa;
    struct timespec mt;
    struct stat st;
    char *path = fs_path_join(dir, e->name);
    size_t len;
    int full;

    if (!path)
        return 1;
    if (kind != FSP_PARTITION) {
        fs_fill_dir_stat(a, path, &st);
    } else if (fs_pending_size(a, path, &len) == 0) {
        clock_gettime(CLOCK_REALTIME, &mt);     /* open, with unsaved changes */
        fs_fill_file_stat(a, path, len, mt, &st);
    } else if (local) {
        if (scratch_stat(a->scratch, path, &sa) < 0) {
            free(path);         /* removed since: skip it */
            return 0;
        }
        fs_fill_scratch_stat(a, path, &sa, &st);
    } else if (cache_file_attr(a->cache, path, &len, &mt) == 0) {
        fs_fill_file_stat(a, path, len, mt, &st);
    } else if (e->has_attr) {
        fs_fill_file_stat(a, path, (size_t)e->size, e->mtime, &st);
    } else {
        memset(&st, 0, sizeof(st));
        st.st_ino = fspath_ino(path);
        st.st_mode = FILE_MODE;
        ff = 0;
    }
    full = filler(buf, e->name, &st, next, ff);
    free(path);
    return full;
}

int fs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    struct aztfs *a = fs_ctx();
    struct dir_handle *h = (struct dir_handle *)(uintptr_t)fi->fh;
    struct listing_ent e;
    struct az_status st = { 0 };
    size_t pos;
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
    if (pos == 0 && filler(buf, ".", NULL, ++pos, 0))
        goto out;
    if (pos == 1 && filler(buf, "..", NULL, ++pos, 0))
        goto out;
    for (;;) {
        size_t n = listing_count(h->l);

        if (pos - 2 < n) {
            listing_get(h->l, pos - 2, &e);
            if (fill_entry(a, h->kind, path, &e, 0, (off_t)pos + 1, buf, filler))
                goto out;
            pos++;
            continue;
        }
        if (!h->scan || h->scan->done)
            break;
        if ((rc = scan_step(h->scan, &st)) < 0) {
            h->err = rc;
            goto out;
        }
    }
    if (!h->local) {
        if (!(h->local = listing_new())) {
            rc = -ENOMEM;
            goto out;
        }
        if (h->kind == FSP_TABLE)
            scratch_list_dirs(a->scratch, path, on_local_name, h);
        else if (h->kind == FSP_PARTITION) {
            scratch_list(a->scratch, path, on_local_file, h);
            fs_pending_list(a, path, on_local_name, h);  /* new files not yet saved */
        }
    }
    for (size_t n = listing_count(h->l); pos - 2 - n < listing_count(h->local); pos++) {
        listing_get(h->local, pos - 2 - n, &e);
        if (fill_entry(a, h->kind, path, &e, 1, (off_t)pos + 1, buf, filler))
            break;
    }
out:
    pthread_mutex_unlock(&h->lock);
    return rc;
}

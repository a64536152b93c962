/* fswrite.c - FUSE callbacks that change the table: commits at flush/fsync, create, unlink, rename, mkdir, rmdir. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "entity.h"
#include "fsint.h"
#include "keycodec.h"

/* --- helpers ----------------------------------------------------------------- */

/* Entity PATH (FP) changed, or turned out to be other than the mount knew
 * (a save or delete answered ESTALE, EEXIST or ENOENT): drop the cached
 * entity and what the kernel knows of it, its partition's listing (which
 * recorded the old size and mtime, or lacks or holds the name wrongly),
 * and the table's listing when it lacks the partition. The next stat,
 * read or ls then agree on the entity as it is. */
static void forget_entity(struct aztfs *a, const char *path, const struct fspath *fp)
{
    char *tdir = NULL;

    fs_invalidate(a, path);
    fs_invalidate(a, fp->parent);
    if (asprintf(&tdir, "/%s", fp->table) >= 0) {
        if (cache_dir_lookup(a->cache, tdir, fp->pk_name, NULL) == -ENOENT)
            fs_invalidate(a, tdir);
        free(tdir);
    }
}

/* After a successful write of WIRE at PATH: show it at once. When the ETag
 * carries the Timestamp, the new entity is rendered into the cache; else the
 * cached copy is dropped (the next stat reads it back). */
static void cache_after_write(struct aztfs *a, const char *path, const struct fspath *fp,
                              const char *pk, const char *rk, const json_t *wire,
                              const char *etag, int exact)
{
    char ts[64];
    json_t *e = exact ? json_deep_copy(wire) : NULL;

    forget_entity(a, path, fp);
    if (e && table_etag_timestamp(etag, ts, sizeof(ts)) == 0 &&
        entity_wire_set_sys(e, pk, rk, ts, etag) == 0)
        fs_cache_entity(a, fp->parent, e, NULL, NULL);
    json_decref(e);
}

/* Work out the keys of entity path FP for a write of text whose own
 * PartitionKey/RowKey are PK_IN/RK_IN (may be NULL). Short names carry their
 * keys; long-form names are resolved by listing or, for new entities, taken
 * from the content when they match the name. Returns 0 or -errno. */
static int write_keys(struct aztfs *a, struct fspath *fp, const char *path,
                      char **pk_in, char **rk_in)
{
    int rc;

    if (fp->pk && fp->rk)
        return 0;
    rc = fs_resolve_keys(a, fp);
    if (rc != -ENOENT)
        return rc;
    if (!fp->pk) {
        if (!*pk_in || keycodec_matches(*pk_in, fp->pk_name) != 1)
            goto bad;
        fp->pk = *pk_in;
        *pk_in = NULL;
    }
    if (!fp->rk) {
        char *want = *rk_in ? keycodec_file_encode(*rk_in) : NULL;
        int same = want && strcmp(want, fp->file_name) == 0;

        free(want);
        if (!same)
            goto bad;
        fp->rk = *rk_in;
        *rk_in = NULL;
    }
    return 0;
bad:
    log_error(&a->log, "%s: not saved: this is a long-form name (doc/NAMES.md), so the "
              "content must carry the PartitionKey and RowKey the name stands for", path);
    return -EINVAL;
}

/* Save TEXT as the entity at PATH: Insert when IS_NEW, else Replace (or Merge
 * with -o merge, unless FORCE_REPLACE) guarded by ETAG. Nothing is sent when
 * the text is not a valid entity. On success *new_etag (may be NULL) gets the
 * new ETag. Logs one line on failure. Returns 0 or -errno. */
static int save_entity(struct aztfs *a, const char *path, const char *text, size_t len,
                       int is_new, const char *etag, int force_replace, char **new_etag)
{
    struct entity_error err = { 0 };
    struct az_status st = { 0 };
    struct fspath fp;
    json_t *wire = NULL;
    char *pk_in = NULL, *rk_in = NULL, *got_etag = NULL;
    enum table_write how;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (len == 0) {
        text = "{}";        /* an empty file is an entity without properties */
        len = 2;
    }
    rc = entity_parse(text, len, &wire, &pk_in, &rk_in, &err);
    if (rc < 0) {
        if (rc != -ENOMEM) {
            if (err.line > 0)
                log_error(&a->log, "%s: not saved: line %d: %s", path, err.line, err.text);
            else
                log_error(&a->log, "%s: not saved: %s", path, err.text);
        }
        goto out;
    }
    if ((rc = write_keys(a, &fp, path, &pk_in, &rk_in)) < 0)
        goto out;
    how = is_new ? TW_INSERT : (a->merge && !force_replace) ? TW_MERGE : TW_REPLACE;
    rc = table_write_entity(a->tc, fp.table, fp.pk, fp.rk, wire, how, etag, &got_etag, &st);
    if (rc == 0) {
        cache_after_write(a, path, &fp, fp.pk, fp.rk, wire, got_etag, how != TW_MERGE);
        scratch_rmdir(a->scratch, fp.parent);     /* the partition exists now */
        if (new_etag) {
            *new_etag = got_etag;
            got_etag = NULL;
        }
    } else {
        fs_log_failure(a, "save", path, rc, &st,
                       rc == -ESTALE ? "the entity was changed by someone else since it was "
                                       "read; the file now shows the current entity" :
                       rc == -EEXIST ? "an entity with this key was created meanwhile" :
                       rc == -ENOENT ? "the entity was deleted by someone else" : NULL);
        if (rc == -ESTALE || rc == -EEXIST || rc == -ENOENT)
            forget_entity(a, path, &fp);
    }
out:
    json_decref(wire);
    free(pk_in);
    free(rk_in);
    free(got_etag);
    fspath_free(&fp);
    return rc;
}

/* Commit an entity handle if it changed. Returns 0 or -errno. Lock held. */
static int commit_handle(struct aztfs *a, const char *path, struct open_file *of)
{
    char *etag = NULL;
    int rc;

    if (!of->written)
        return 0;
    rc = save_entity(a, path, of->data ? of->data : "", of->len, of->is_new, of->etag,
                     of->replace, &etag);
    if (rc == 0) {
        struct cache_file f = { 0 };

        free(of->etag);
        of->etag = etag;
        of->is_new = 0;
        of->written = 0;
        of->failed = 0;
        /* the entity as stored (canonical text) replaces what was written */
        if (cache_get_file(a->cache, path, &f) == 0) {
            free(of->data);
            of->data = f.data;
            of->len = f.len;
            of->cap = f.len + 1;
            f.data = NULL;
            cache_file_clear(&f);
        }
    } else {
        of->failed = 1;
        of->written = 0;    /* reported once; a later flush does not resend */
    }
    return rc;
}

/* Make OF's buffer exactly LEN bytes (zero-filled growth). Lock held. */
static int handle_resize(struct open_file *of, size_t len)
{
    if (len > OPEN_FILE_MAX)
        return -EFBIG;
    if (len + 1 > of->cap) {
        size_t cap = of->cap ? of->cap : 4096;
        char *d;

        while (cap < len + 1)
            cap *= 2;
        if (!(d = realloc(of->data, cap)))
            return -ENOMEM;
        of->data = d;
        of->cap = cap;
    }
    if (len > of->len)
        memset(of->data + of->len, 0, len - of->len);
    of->len = len;
    of->data[len] = '\0';
    return 0;
}

/* The entity at PATH with its keys resolved (long-form names served from
 * the cache carry no keys yet): what every change needs. */
static int load_for_change(struct aztfs *a, struct fspath *fp, const char *path,
                           struct cache_file *out)
{
    int rc = fs_load_entity(a, fp, path, out);

    if (rc == 0 && (!fp->pk || !fp->rk) && (rc = fs_resolve_keys(a, fp)) < 0)
        cache_file_clear(out);
    return rc;
}

/* Refuse, with a log line, to put something where the tree has no place. */
static int misplaced(struct aztfs *a, const char *path, const char *what)
{
    log_error(&a->log, "%s: %s", path, what);
    return -EPERM;
}

/* The kernel answers ESTALE from a path operation (unlink, rename,
 * truncate) by revalidating the path and running the operation once more;
 * by then we would have read the new ETag, and the retry would overwrite or
 * delete the change we just refused to touch. So a conflict is noted for a
 * moment, and the retry gets the same answer. */
#define CONFLICT_WINDOW_NS 2000000000LL

static long long mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void conflict_note(struct aztfs *a, const char *path)
{
    struct conflict *slot = &a->conflicts[0];
    char *p = strdup(path);

    if (!p)
        return;
    pthread_mutex_lock(&a->pending_lock);
    for (size_t i = 0; i < sizeof(a->conflicts) / sizeof(a->conflicts[0]); i++) {
        struct conflict *c = &a->conflicts[i];

        if (!c->path || (c->at.tv_sec < slot->at.tv_sec && slot->path))
            slot = c;
        if (!c->path)
            break;
    }
    free(slot->path);
    slot->path = p;
    clock_gettime(CLOCK_MONOTONIC, &slot->at);
    pthread_mutex_unlock(&a->pending_lock);
}

/* Was a conflict noted for PATH in the last moment? Consumes the note. */
static int conflict_take(struct aztfs *a, const char *path)
{
    int hit = 0;

    pthread_mutex_lock(&a->pending_lock);
    for (size_t i = 0; i < sizeof(a->conflicts) / sizeof(a->conflicts[0]); i++) {
        struct conflict *c = &a->conflicts[i];

        if (!c->path || strcmp(c->path, path) != 0)
            continue;
        hit = mono_ns() - (c->at.tv_sec * 1000000000LL + c->at.tv_nsec) < CONFLICT_WINDOW_NS;
        free(c->path);
        c->path = NULL;
        break;
    }
    pthread_mutex_unlock(&a->pending_lock);
    return hit;
}

/* --- callbacks ---------------------------------------------------------------- */

int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct open_file *of;
    struct fspath fp;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc == -ENOENT ? misplaced(a, path, "no file can have this name here "
                                         "(see doc/NAMES.md)") : rc;
    if (fp.kind != FSP_ENTITY && fp.kind != FSP_SCRATCH) {
        fspath_free(&fp);
        return misplaced(a, path, "files live inside partition directories "
                         "(/TABLE/PARTITION/ROWKEY.json)");
    }
    if (!(of = fs_open_file_new())) {
        fspath_free(&fp);
        return -ENOMEM;
    }
    if (fp.kind == FSP_SCRATCH) {
        rc = scratch_create(a->scratch, path, mode);
        if (rc == -EEXIST && !(fi->flags & O_EXCL))
            rc = (fi->flags & O_TRUNC) ? scratch_truncate(a->scratch, path, 0) : 0;
        of->scratch = 1;
    } else {
        of->is_new = 1;
        of->append = !!(fi->flags & O_APPEND);
        of->trunc_open = !!(fi->flags & O_TRUNC);
    }
    fspath_free(&fp);
    if (rc == 0 && !of->scratch)
        rc = fs_pending_add(a, path, of);
    if (rc < 0) {
        fs_open_file_free(of);
        return rc;
    }
    fs_attach(fi, of, path);
    return 0;
}

/* Open an entity for writing: the text and ETag as read now (from the cache
 * when fresh), or a new file another handle has open and not yet saved (a
 * new file of its own: the first to close inserts it, as with two creates);
 * O_TRUNC empties the copy but commits nothing by itself. */
int fs_open_write(struct aztfs *a, const char *path, struct fspath *fp,
                  struct fuse_file_info *fi)
{
    struct open_file *of;
    int rc;

    if ((rc = fs_open_entity(a, fp, path, &of)) < 0)
        return rc;
    if (!of->etag && !of->is_new) {
        log_error(&a->log, "%s: the service gave no ETag, so a write could not be guarded",
                  path);
        fs_open_file_free(of);
        return -EIO;
    }
    if (fi->flags & O_TRUNC)
        of->len = 0;
    of->append = !!(fi->flags & O_APPEND);
    of->trunc_open = !!(fi->flags & O_TRUNC);
    if ((rc = fs_pending_add(a, path, of)) < 0) {
        fs_open_file_free(of);
        return rc;
    }
    fs_attach(fi, of, path);
    return 0;
}

int fs_write(const char *path, const char *buf, size_t size, off_t off,
             struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);
    int rc;

    if (off < 0)
        return -EINVAL;
    if (of->scratch)        /* a removed scratch file's bytes went with its name */
        return path ? (int)scratch_write(fs_ctx()->scratch, path, buf, size, off) : -ESTALE;
    pthread_mutex_lock(&of->lock);
    if (of->append)     /* the kernel's idea of the size may be stale */
        off = (off_t)of->len;
    rc = (size_t)off + size > of->len ? handle_resize(of, (size_t)off + size) : 0;
    if (rc == 0) {
        memcpy(of->data + off, buf, size);
        of->written = of->ever_written = 1;
        rc = (int)size;
    } else if (rc == -EFBIG) {
        log_error(&fs_ctx()->log, "%s: larger than %d bytes: no entity can be that big", path,
                  OPEN_FILE_MAX);
    }
    pthread_mutex_unlock(&of->lock);
    return rc;
}

int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct open_file *of = fs_handle(fi);
    struct cache_file f = { 0 };
    struct fspath fp;
    int rc;

    if (size < 0)
        return -EINVAL;
    if (of && !of->scratch) {
        pthread_mutex_lock(&of->lock);
        rc = handle_resize(of, (size_t)size);
        if (rc == 0)
            of->written = of->ever_written = 1;
        pthread_mutex_unlock(&of->lock);
        return rc;
    }
    if (!path)              /* a removed scratch file */
        return -ESTALE;
    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind == FSP_SCRATCH) {
        rc = scratch_truncate(a->scratch, path, size);
    } else if (fp.kind != FSP_ENTITY) {
        rc = -EISDIR;
    } else if (conflict_take(a, path)) {
        rc = -ESTALE;
    } else if ((rc = load_for_change(a, &fp, path, &f)) == 0) {
        /* truncate by path: change and commit at once */
        if ((size_t)size <= f.len) {
            rc = save_entity(a, path, f.data, (size_t)size, 0, f.etag, 0, NULL);
        } else {
            char *d = realloc(f.data, (size_t)size + 1);

            rc = d ? 0 : -ENOMEM;
            if (d) {
                memset(d + f.len, 0, (size_t)size - f.len);
                f.data = d;
                rc = save_entity(a, path, f.data, (size_t)size, 0, f.etag, 0, NULL);
            }
        }
        if (rc == -ESTALE)
            conflict_note(a, path);
    }
    cache_file_clear(&f);
    fspath_free(&fp);
    return rc;
}

/* Flush of an entity handle whose name was removed while it was open (rm,
 * or a rename onto it, through this mount): as on a local disk, what was
 * written goes with the removed file. Nothing is sent (the name is gone or
 * belongs to another entity now); said once in the log. */
static int drop_detached(struct aztfs *a, struct open_file *of)
{
    pthread_mutex_lock(&of->lock);
    if (of->written || (of->is_new && !of->failed))
        log_info(&a->log, "a file removed while open was closed: its unsaved changes (%zu "
                 "bytes) went with it, as on a local disk", of->len);
    of->written = 0;
    of->is_new = 0;
    of->detached = 1;
    pthread_mutex_unlock(&of->lock);
    return 0;
}

int fs_flush(const char *path, struct fuse_file_info *fi)
{
    struct open_file *of = fs_handle(fi);
    int rc;

    if (!of || of->scratch)
        return 0;
    if (!path)
        return drop_detached(fs_ctx(), of);
    pthread_mutex_lock(&of->lock);
    /* A new file flushed before any write: touch means "create it now";
     * after O_TRUNC or O_APPEND (bash's '>' and '>>' flush before they
     * write) the data is still to come. */
    if (of->is_new && !of->ever_written && !of->trunc_open && !of->append && !of->failed)
        of->written = 1;
    rc = commit_handle(fs_ctx(), path, of);
    pthread_mutex_unlock(&of->lock);
    return rc;
}

int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    return fs_flush(path, fi);
}

/* At release: a file created with O_TRUNC or O_APPEND and closed without any
 * write (': > new.json') becomes an entity without properties. Errors here reach
 * no application; they are logged. */
int fs_release_write(const char *path, struct open_file *of)
{
    int rc = 0;

    pthread_mutex_lock(&of->lock);
    if (of->is_new && !of->ever_written && !of->failed) {
        of->written = 1;
        rc = commit_handle(fs_ctx(), path, of);
    }
    pthread_mutex_unlock(&of->lock);
    return rc;
}

int fs_unlink(const char *path)
{
    struct aztfs *a = fs_ctx();
    struct cache_file f = { 0 };
    struct az_status st = { 0 };
    struct fspath fp;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind == FSP_SCRATCH) {
        rc = scratch_unlink(a->scratch, path);
    } else if (fp.kind != FSP_ENTITY) {
        rc = -EISDIR;
    } else if (fs_pending_is_new(a, path)) {
        fs_pending_detach(a, path);     /* a new file not yet saved: nothing to send */
        fs_invalidate(a, path);
    } else if (conflict_take(a, path)) {
        rc = -ESTALE;
    } else if ((rc = load_for_change(a, &fp, path, &f)) == 0) {
        rc = table_delete_entity(a->tc, fp.table, fp.pk, fp.rk, f.etag, &st);
        if (rc == -ESTALE)
            conflict_note(a, path);
        if (rc < 0)
            fs_log_failure(a, "delete", path, rc, &st,
                           rc == -ESTALE ? "the entity was changed by someone else since it "
                                           "was read" :
                           rc == -ENOENT ? "the entity was deleted by someone else" : NULL);
        if (rc == -ESTALE || rc == -ENOENT)
            forget_entity(a, path, &fp);
        else
            fs_invalidate(a, path);
        if (rc == 0) {
            char *tdir = NULL;

            fs_pending_detach(a, path);

            /* the directory stays until rmdir, as on a local disk */
            scratch_mkdir(a->scratch, fp.parent);
            fs_invalidate(a, fp.parent);
            if (asprintf(&tdir, "/%s", fp.table) >= 0) {
                fs_invalidate(a, tdir);
                free(tdir);
            }
        }
    }
    cache_file_clear(&f);
    fspath_free(&fp);
    return rc;
}

int fs_mkdir(const char *path, mode_t mode)
{
    struct aztfs *a = fs_ctx();
    struct az_status st = { 0 };
    struct fspath fp;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0) {
        if (rc == -ENOENT && strchr(path + 1, '/') == NULL) {
            log_error(&a->log, "%s: not a valid table name (a letter, then 2-62 letters or "
                      "digits; 'Tables' is reserved)", path);
            return -EINVAL;
        }
        if (rc == -ENOENT) {
            log_error(&a->log, "%s: no directory can have this name here (see doc/NAMES.md)",
                      path);
            return -EINVAL;
        }
        return rc;
    }
    switch (fp.kind) {
    case FSP_TABLE:
        rc = table_create(a->tc, fp.table, &st);
        if (rc == -EEXIST)
            log_info(&a->log, "%s: table exists (table names ignore case)", path);
        else if (rc < 0)
            fs_log_failure(a, "create table", path, rc, &st, NULL);
        fs_invalidate(a, "/");
        break;
    case FSP_PARTITION:
        rc = scratch_is_dir(a->scratch, path) ? 1 : fs_partition_exists(a, &fp, 0);
        if (rc == 1)
            rc = -EEXIST;
        else if (rc == 0)
            rc = scratch_mkdir(a->scratch, path);
        break;
    default:
        rc = misplaced(a, path, "directories are tables (at the top) or partitions "
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

int fs_rmdir(const char *path)
{
    struct aztfs *a = fs_ctx();
    struct az_status st = { 0 };
    struct fspath fp;
    char *tdir = NULL;
    size_t local = 0;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    switch (fp.kind) {
    case FSP_TABLE:
        if (scratch_has_dirs(a->scratch, path)) {
            rc = -ENOTEMPTY;    /* a partition made with mkdir */
            break;
        }
        rc = fs_table_probe(a, fp.table, &st);
        if (rc == 1)
            rc = -ENOTEMPTY;
        if (rc == 0)
            rc = table_delete(a->tc, fp.table, &st);
        if (rc < 0 && rc != -ENOTEMPTY && rc != -ENOENT)
            fs_log_failure(a, "remove table", path, rc, &st, NULL);
        fs_invalidate(a, "/");
        fs_invalidate(a, path);
        break;
    case FSP_PARTITION:
        fs_pending_list(a, path, count_name, &local);   /* new files not yet saved */
        if (local + scratch_count(a->scratch, path) > 0) {
            rc = -ENOTEMPTY;
            break;
        }
        rc = fs_partition_exists(a, &fp, 1);
        if (rc == 1) {
            rc = -ENOTEMPTY;
        } else if (rc == 0) {
            rc = scratch_rmdir(a->scratch, path);
            fs_invalidate(a, path);
            if (asprintf(&tdir, "/%s", fp.table) >= 0) {
                fs_invalidate(a, tdir);
                free(tdir);
            }
        }
        break;
    default:
        rc = -ENOTDIR;
    }
    fspath_free(&fp);
    return rc;
}

/* Is ETAG (what the mount last saw of entity FP) still the entity's ETag?
 * Returns 1, 0 (changed or gone), or -errno. */
static int etag_current(struct aztfs *a, const struct fspath *fp, const char *etag)
{
    struct az_status st = { 0 };
    json_t *e = NULL;
    char *now = NULL;
    int rc = table_get_entity(a->tc, fp->table, fp->pk, fp->rk, &e, &now, &st);

    json_decref(e);
    if (rc == -ENOENT)
        return 0;
    if (rc == 0)
        rc = etag && now && strcmp(etag, now) == 0;
    free(now);
    return rc;
}

/* Are FROM (read with SRC_ETAG) and, when it exists, TO (read with
 * DST_ETAG) still as the mount read them? Asked just before a rename's
 * batch: Azurite ignores If-Match inside a batch. Returns 0, -ESTALE
 * (logged; what the mount knew of both is dropped), or -errno. */
static int rename_check(struct aztfs *a, const char *from, const struct fspath *ff,
                        const char *src_etag, const char *to, const struct fspath *tf,
                        const char *dst_etag)
{
    int rc = etag_current(a, ff, src_etag);

    if (rc == 1 && dst_etag)
        rc = etag_current(a, tf, dst_etag);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    log_error(&a->log, "rename %s -> %s: nothing changed: %s was changed by someone "
              "else since it was read", from, to, dst_etag ? "source or target" : "source");
    conflict_note(a, from);
    forget_entity(a, from, ff);
    forget_entity(a, to, tf);
    return -ESTALE;
}

/* After a rename FROM -> TO made by this mount: the handles open on TO
 * spoke for the entity it replaced; those open on FROM follow to TO, with
 * the ETag the service answered for TO (NEW_ETAG) where they held FROM's
 * (OLD_ETAG). */
static void handles_follow(struct aztfs *a, const char *from, const char *to,
                           const char *old_etag, const char *new_etag)
{
    int n;

    fs_pending_detach(a, to);
    n = fs_pending_follow(a, from, to, old_etag, new_etag);
    if (n < 0)
        log_error(&a->log, "rename %s -> %s: out of memory: a file open on %s cannot save "
                  "to %s (ESTALE at its close)", from, to, from, to);
    else if (n > 0 && old_etag && !new_etag)
        log_warn(&a->log, "rename %s -> %s: the service gave no ETag for %s: files open on "
                 "%s cannot save to it (ESTALE at their close)", from, to, to, from);
}

/* Rename entity FROM onto entity TO in the same partition: one entity group
 * transaction that writes TO (insert or guarded replace) and deletes FROM
 * with its ETag, so either both happen or neither. Files open on FROM
 * follow to TO. */
static int rename_in_partition(struct aztfs *a, const char *from, struct fspath *ff,
                               const char *to, struct fspath *tf)
{
    struct cache_file src = { 0 }, dst = { 0 };
    struct table_batch_op ops[2];
    struct entity_error err = { 0 };
    struct az_status st = { 0 };
    json_t *wire = NULL;
    char *no_pk = NULL, *no_rk = NULL;   /* a rename carries no keys in content */
    char *new_etag = NULL;
    int rc, exists;

    if ((rc = load_for_change(a, ff, from, &src)) < 0)
        return rc;
    rc = load_for_change(a, tf, to, &dst);
    exists = rc == 0;
    if (rc < 0 && rc != -ENOENT)
        goto out;
    if (!exists && (rc = write_keys(a, tf, to, &no_pk, &no_rk)) < 0)
        goto out;
    if ((rc = entity_parse(src.data, src.len, &wire, NULL, NULL, &err)) < 0) {
        log_error(&a->log, "%s: cannot be moved: %s", from, err.text);
        goto out;
    }
    if ((rc = rename_check(a, from, ff, src.etag, to, tf, exists ? dst.etag : NULL)) < 0)
        goto out;
    ops[0] = (struct table_batch_op){ exists ? TB_REPLACE : TB_INSERT, tf->rk, wire,
                                      exists ? dst.etag : NULL, &new_etag };
    ops[1] = (struct table_batch_op){ TB_DELETE, ff->rk, NULL, src.etag, NULL };
    rc = table_batch(a->tc, ff->table, ff->pk, ops, 2, &st);
    if (rc == 0)
        handles_follow(a, from, to, src.etag, new_etag);
    if (rc == -ESTALE)
        conflict_note(a, from);
    if (rc < 0)
        fs_log_failure(a, "rename", from, rc, &st, rc == -ESTALE ?
                       "source or target changed meanwhile; nothing changed" :
                       "nothing changed");
    fs_invalidate(a, from);
    fs_invalidate(a, to);
    fs_invalidate(a, ff->parent);
out:
    free(new_etag);
    json_decref(wire);
    cache_file_clear(&src);
    cache_file_clear(&dst);
    return rc;
}

/* Rename FROM, a new file open and not yet saved, to TO in its partition:
 * nothing is sent. Its handles follow and save under TO at their close: an
 * Insert, or when TO is an entity, a Replace guarded by the ETag TO has now
 * (the new file replaces it, as on a local disk). */
static int rename_unsaved(struct aztfs *a, const char *from, const char *to,
                          struct fspath *tf)
{
    struct cache_file dst = { 0 };
    int rc = load_for_change(a, tf, to, &dst);

    if (rc == 0 || rc == -ENOENT) {
        handles_follow(a, from, to, NULL, rc == 0 ? dst.etag : NULL);
        rc = 0;
    }
    cache_file_clear(&dst);
    fs_invalidate(a, from);
    fs_invalidate(a, to);
    return rc;
}

/* Rename scratch file FROM onto entity TO: commit its bytes as TO in one
 * request (Insert, or Replace guarded by TO's ETag), then drop the scratch file. */
static int commit_scratch(struct aztfs *a, const char *from, const char *to, struct fspath *tf)
{
    struct cache_file dst = { 0 };
    char *data = NULL;
    size_t len = 0;
    int rc, exists;

    if ((rc = scratch_get(a->scratch, from, &data, &len)) < 0)
        return rc;
    if (conflict_take(a, to)) {
        free(data);
        return -ESTALE;
    }
    rc = load_for_change(a, tf, to, &dst);
    exists = rc == 0;
    if (rc == 0 || rc == -ENOENT)
        rc = save_entity(a, to, data, len, !exists, exists ? dst.etag : NULL, 1, NULL);
    if (rc == 0) {
        scratch_unlink(a->scratch, from);
        fs_pending_detach(a, to);
    } else if (rc == -ESTALE)
        conflict_note(a, to);
    cache_file_clear(&dst);
    free(data);
    return rc;
}

int fs_rename(const char *from, const char *to, unsigned int flags)
{
    struct aztfs *a = fs_ctx();
    struct fspath ff, tf;
    int rc;

    if (flags)
        return -EINVAL;     /* RENAME_NOREPLACE/EXCHANGE: mv retries a plain rename */
    if ((rc = fspath_parse(from, &ff)) < 0)
        return rc;
    if ((rc = fspath_parse(to, &tf)) < 0) {
        fspath_free(&ff);
        return rc == -ENOENT ? misplaced(a, to, "no file can have this name here "
                                         "(see doc/NAMES.md)") : rc;
    }
    if (ff.kind == FSP_SCRATCH && tf.kind == FSP_SCRATCH)
        rc = scratch_rename(a->scratch, from, to);
    else if (ff.kind == FSP_SCRATCH && tf.kind == FSP_ENTITY)
        rc = commit_scratch(a, from, to, &tf);
    else if (ff.kind == FSP_ENTITY && tf.kind == FSP_ENTITY &&
             strcmp(ff.parent, tf.parent) == 0)
        rc = strcmp(from, to) == 0 ? 0 : fs_pending_is_new(a, from) ?
             rename_unsaved(a, from, to, &tf) : conflict_take(a, from) ? -ESTALE :
             rename_in_partition(a, from, &ff, to, &tf);
    else if (ff.kind == FSP_SCRATCH || tf.kind == FSP_SCRATCH || ff.kind != tf.kind)
        rc = ff.kind == FSP_SCRATCH ? misplaced(a, to, "scratch files can only become "
                                                "entities inside a partition") : -EXDEV;
    else
        rc = -EXDEV;        /* across partitions or tables, or directories: copy + unlink */
    fspath_free(&ff);
    fspath_free(&tf);
    return rc;
}

int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct fspath fp;
    int rc;

    if (!path)
        return 0;           /* an open file without a name: its mode is fixed */
    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind == FSP_SCRATCH)
        rc = scratch_chmod(a->scratch, path, mode);
    fspath_free(&fp);
    return rc;      /* entities and directories: accepted, modes are fixed */
}

int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();

    if ((uid != (uid_t)-1 && uid != a->uid) || (gid != (gid_t)-1 && gid != a->gid))
        return -EPERM;  /* everything belongs to the mounting user */
    return 0;
}

int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct fspath fp;
    struct timespec mt;
    int rc;

    if (!path)
        return 0;           /* an open file without a name: no mtime to keep */
    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind == FSP_SCRATCH) {
        if (!tv || tv[1].tv_nsec == UTIME_NOW)
            clock_gettime(CLOCK_REALTIME, &mt);
        else
            mt = tv[1];
        rc = tv && tv[1].tv_nsec == UTIME_OMIT ? 0 : scratch_utimens(a->scratch, path, &mt);
    }
    fspath_free(&fp);
    return rc;      /* entities: mtime is the service's Timestamp */
}

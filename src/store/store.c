/* store/store.c - entities and directories by key, with the cache and the ETag guards (store.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "entity/entity.h"
#include "names/names.h"
#include "store/store.h"
#include "store/store_i.h"

/* Entities fetched at once when a listed entity is no longer cached: a
 * page (1000), but no more than a quarter of the cache at 1 KiB each, so
 * that the page's first entities are still cached when it is in. */
#define READ_AHEAD_MAX 1000
#define READ_AHEAD_MIN 32

/* --- the store's life ---------------------------------------------------------- */

/* See store.h. */
int store_open(struct store *s, const struct account *acct, const struct http_config *hc,
               size_t cache_bytes)
{
    int rc;

    if (!(s->cache = cache_new(cache_bytes, s->cache_timeout)))
        return -ENOMEM;
    cache_set_negative_ttl(s->cache, s->negative_timeout);
    s->changes = &store_direct; /* store_writeback_open: through the queue */
    if ((rc = table_client_new(&s->tc, acct, hc, &s->log, &s->stats)) < 0)
        return rc;
    if (!s->limits) /* the service's (Storage's, Cosmos DB's) */
        s->limits = table_profile_entity_limits(table_client_profile(s->tc));
    if (table_client_profile(s->tc)->service == TABLE_COSMOS)
        log_info(&s->log, "%s: Cosmos DB for Table (USAGE.md says what differs)", acct->endpoint);
    return 0;
}

/* See store.h. */
void store_free(struct store *s)
{
    table_client_free(s->tc);
    cache_free(s->cache);
    s->tc = NULL;
    s->cache = NULL;
}

/* --- what the listings and the absences say (reading) ------------------------------ */

/* The service said entity PATH (FP) does not exist: believe it for the
 * negative lifetime, and drop the name from its partition's listing. */
static void note_absent(struct store *s, const char *path, const struct fspath *fp)
{
    struct timespec none = { 0, 0 };

    if (fp->rk)
        (void)cache_dir_edit(s->cache, fp->parent, fp->file_name, fp->rk, 0, 0, none, 1);
    (void)cache_put_absent(s->cache, path);
}

/* Walks are told by the table: a listing read (readdir) or a file opened
 * anywhere in it within the negative lifetime, so that rsync, which lists
 * directories ahead of the files it reads, is one walk across partitions;
 * and a walk opens another file each time (cache_dir_walk): the same file
 * read in a loop is not a walk. */

/* Is a walk going through FP's table now? 1 or 0. */
static int walk_going(struct store *s, const struct fspath *fp)
{
    char *tdir = fspath_join("/", fp->table);
    int r = tdir && cache_dir_active(s->cache, tdir);

    free(tdir);
    return r;
}

/* Entity PATH (FP) is opened now: a walk's open? Noted either way. */
static int walk_open(struct store *s, const struct fspath *fp, const char *path)
{
    char *tdir = fspath_join("/", fp->table);
    int r = tdir && cache_dir_walk(s->cache, tdir, path);

    free(tdir);
    return r;
}

/* --- reading ----------------------------------------------------------------- */

/* Entities of a read-ahead, rendered into the cache; the one asked for
 * also into OUT. */
struct read_ahead {
    struct store *s;
    const char *dir;
    const char *rk;
    struct cache_file *out;
    int found;
};

static int on_read_ahead_page(void *p, json_t *value)
{
    struct read_ahead *ra = p;
    size_t i;
    json_t *e;

    json_array_foreach (value, i, e) {
        const char *rk = entity_wire_sys(e, ENTITY_RK);
        int mine = !ra->found && rk && strcmp(rk, ra->rk) == 0;

        if (store_cache_entity(ra->s, ra->dir, e, CACHE_LISTED, NULL, mine ? ra->out : NULL) ==
            -ENOMEM)
            return -ENOMEM;
        ra->found |= mine;
    }
    return 1; /* one page is enough */
}

/* Fetch entity FP and the ones after it in its partition (one page of
 * READ_AHEAD) into the cache, and FP into *OUT: what a reader going through
 * a partition in order costs per page instead of per file (grep or rsync
 * over a partition larger than the cache, rsync's lookups in one it has not
 * listed). Returns 0, -ENOENT (the page does not begin with FP: it did not
 * exist when asked), or -errno (the caller then falls back to a point
 * query). On a service without key order (Cosmos DB) the page holds
 * entities from FP on, but not necessarily FP: its absence there is
 * -EAGAIN (a point query tells). */
static int read_ahead(struct store *s, const struct fspath *fp, struct cache_file *out)
{
    struct read_ahead ra = { s, fp->parent, fp->rk, out, 0 };
    struct cache_stats cs;
    struct az_status st;
    size_t top;
    char *filter = table_filter_from_row(fp->pk, fp->rk);
    int rc = -ENOMEM;

    cache_get_stats(s->cache, &cs);
    top = cs.max_bytes / 4 / 1024;
    top = top > READ_AHEAD_MAX ? READ_AHEAD_MAX : top < READ_AHEAD_MIN ? READ_AHEAD_MIN : top;
    if (filter)
        rc = table_query(s->tc, fp->table, filter, NULL, (int)top, on_read_ahead_page, &ra, &st);
    free(filter);
    if (rc == 0 && !ra.found)
        rc = table_client_ordered(s->tc) ? -ENOENT : -EAGAIN;
    if (rc < 0)
        cache_file_clear(out);
    return rc;
}

/* Read entity FP (at PATH) with a point query into the cache and *OUT. A
 * failed query is logged here (not ENOENT: an answer); a failed render
 * was logged by store_cache_entity. Returns 0, -ENOENT, or -errno. */
static int point_read(struct store *s, const struct fspath *fp, const char *path,
                      struct cache_file *out)
{
    struct az_status st = { 0 };
    json_t *e = NULL;
    int rc = table_get_entity(s->tc, fp->table, fp->pk, fp->rk, &e, NULL, &st);

    if (rc == 0)
        rc = store_cache_entity(s, fp->parent, e, 0, NULL, out);
    else if (rc != -ENOENT)
        store_log_failure(s, "read", path, rc, &st, NULL);
    json_decref(e);
    return rc;
}

/* See store.h. */
int store_load(struct store *s, struct fspath *fp, const char *path, struct cache_file *out)
{
    int rc, listed, in_order;

    /* a queued change (write-behind) is what the entity is */
    if ((rc = s->changes->pending(s, fp, path, out)) != 0)
        return rc < 0 ? rc : 0;
    if (cache_get_file(s->cache, path, out) == 0)
        return 0;
    if (cache_absent(s->cache, path))
        return -ENOENT;
    /* A listing of the partition that may answer for absence settles it
     * (cache_dir_lookup: one the mount made, or younger than the
     * negative lifetime). */
    rc = cache_dir_lookup(s->cache, fp->parent, fp->file_name, NULL);
    if (rc == -ENOENT)
        return rc;
    if (rc == -EAGAIN && fp->pk && cache_dir_made(s->cache, fp->parent) &&
        scan_list_partition(s, fp, fp->parent) == 0) {
        /* the mount made it and its listing expired: one listing again, the
         * mount's own from now on, rather than a query per name */
        cache_dir_own(s->cache, fp->parent);
        if ((rc = cache_dir_lookup(s->cache, fp->parent, fp->file_name, NULL)) == -ENOENT)
            return rc;
    }
    listed = rc == 0;
    /* not listed, but the last entity read from this partition was read
     * moments ago: a reader going through it (rsync's lookups) */
    in_order = rc == -EAGAIN && cache_dir_active(s->cache, fp->parent);
    if ((rc = scan_resolve_keys(s, fp)) < 0)
        return rc;
    if (cache_get_file(s->cache, path, out) == 0) /* resolving may have listed */
        return 0;
    if (listed || in_order) {
        rc = read_ahead(s, fp, out);
        if (rc == 0 || (rc == -ENOENT && in_order)) {
            if (rc == 0)
                cache_dir_touch(s->cache, fp->parent);
            else
                note_absent(s, path, fp);
            return rc;
        }
    }
    rc = point_read(s, fp, path, out);
    if (rc == -ENOENT)
        note_absent(s, path, fp); /* an answer, not a failure */
    else if (rc == 0)
        cache_dir_touch(s->cache, fp->parent); /* the next one may be in order */
    return rc;
}

/* See store.h. */
int store_load_current(struct store *s, struct fspath *fp, const char *path, struct cache_file *out,
                       int writing)
{
    int rc = store_load(s, fp, path, out), walk;

    if (rc < 0)
        return rc;
    /* a walk reads each file once: its copy goes first when the cache is
     * full, before the ones fetched ahead of the walk */
    if (!writing && out->listed && walk_going(s, fp))
        cache_used_once(s->cache, path);
    if (out->age < s->negative_timeout)
        return rc;
    /* noted either way: the next open in the table may be a walk's */
    walk = walk_open(s, fp, path) && out->listed;
    if (!writing && walk)
        return 0; /* a walk reads the snapshot it listed */
    /* a save while a walk goes through the table (rsync renames onto the
     * file it has just read as its basis): a page refreshes this copy and
     * the next ones, not a point query per file */
    if (writing && !walk && out->listed && walk_going(s, fp))
        walk = 1;
    cache_file_clear(out);
    if ((rc = scan_resolve_keys(s, fp)) < 0)
        return rc;
    store_forget(s, path); /* the kernel's copy may be the old one too */
    /* in a walk (rsync saving file after file) one page refreshes this copy
     * and the next ones; else a point query */
    rc = walk ? read_ahead(s, fp, out) : -EAGAIN;
    if (rc != 0 && rc != -ENOENT)
        rc = point_read(s, fp, path, out);
    if (rc == -ENOENT) {
        log_info(&s->log, "%s: deleted by someone else", path);
        store_forget_entity(s, path, fp);
        note_absent(s, path, fp);
    } else if (rc == 0) {
        store_shown_in_listing(s, fp, out, 1);
    }
    return rc;
}

/* The table directory ("/T") of PATH ("/T" or "/T/..."), malloc'd. */
static char *table_dir_of(const char *path)
{
    const char *end = strchr(path + 1, '/');

    return strndup(path, end ? (size_t)(end - path) : strlen(path));
}

/* See store.h. */
void store_dir_read(struct store *s, const char *path)
{
    char *tdir = table_dir_of(path);

    if (tdir)
        cache_dir_touch(s->cache, tdir);
    free(tdir);
}

/* See store.h. */
int store_load_keyed(struct store *s, struct fspath *fp, const char *path, struct cache_file *out)
{
    int rc = store_load(s, fp, path, out);

    if (rc == 0 && (!fp->pk || !fp->rk) && (rc = scan_resolve_keys(s, fp)) < 0)
        cache_file_clear(out);
    return rc;
}

/* See store.h. */
int store_peek(struct store *s, const char *path, struct cache_file *out)
{
    return cache_get_file(s->cache, path, out);
}

/* See store.h. */
int store_cached_attr(struct store *s, const char *path, size_t *len, struct timespec *mtime)
{
    return cache_file_attr(s->cache, path, len, mtime);
}

/* See store.h. */
int store_entity_attr(struct store *s, struct fspath *fp, const char *path, size_t *len,
                      struct timespec *mtime)
{
    struct cache_file f = { 0 };
    int rc;

    if ((rc = cache_file_attr(s->cache, path, len, mtime)) < 0)
        rc = cache_dir_attr(s->cache, fp->parent, fp->file_name, len, mtime);
    if (rc == 0 || rc == -ENOENT)
        return rc;
    if ((rc = store_load(s, fp, path, &f)) == 0) {
        *len = f.len;
        *mtime = f.mtime;
    }
    cache_file_clear(&f);
    return rc;
}

/* --- changing ---------------------------------------------------------------- */

/* Work out the keys of entity path FP for a write of text whose own
 * PartitionKey/RowKey are PK_IN/RK_IN (may be NULL). Short names carry their
 * keys; long-form names are resolved by listing or, for new entities
 * (IS_NEW), taken from the content when they match the name. An entity that
 * existed (not IS_NEW) and is no longer listed was deleted by someone else:
 * -ENOENT, logged as a failed save. Returns 0 or -errno. */
static int write_keys(struct store *s, struct fspath *fp, const char *path, int is_new,
                      char **pk_in, char **rk_in)
{
    int rc;

    if (fp->pk && fp->rk)
        return 0;
    rc = scan_resolve_keys(s, fp);
    if (rc != -ENOENT)
        return rc;
    if (!is_new) {
        store_log_failure(s, "save", path, rc, NULL, "the entity was deleted by someone else");
        store_forget_entity(s, path, fp);
        return rc;
    }
    if (!fp->pk) {
        if (!*pk_in || keycodec_matches(*pk_in, fp->pk_name) != 1)
            goto bad;
        fp->pk = *pk_in;
        *pk_in = NULL;
    }
    if (!fp->rk) {
        if (!*rk_in || keycodec_file_matches(*rk_in, fp->file_name) != 1)
            goto bad;
        fp->rk = *rk_in;
        *rk_in = NULL;
    }
    return 0;
bad:
    failring_add(s->log.failures,
                 &(struct failure){ "save", path, EINVAL, 0, NULL,
                                    "a long-form name without its keys in the content" });
    log_error(&s->log,
              "%s: not saved: this is a long-form name (doc/NAMES.md), so the "
              "content must carry the PartitionKey and RowKey the name stands for",
              path);
    return -EINVAL;
}

/* Parse TEXT (LEN bytes, not empty) into *wire and the keys it carries;
 * log why when it is not a valid entity. */
static int parse_text(struct store *s, const char *path, const char *text, size_t len,
                      json_t **wire, char **pk_in, char **rk_in)
{
    struct entity_error err = { 0 };
    int rc = entity_parse(text, len, wire, pk_in, rk_in, &err);

    if (rc < 0 && rc != -ENOMEM) {
        failring_add(s->log.failures, &(struct failure){ "save", path, -rc, 0, NULL, err.text });
        if (err.line > 0)
            log_error(&s->log, "%s: not saved: line %d: %s", path, err.line, err.text);
        else
            log_error(&s->log, "%s: not saved: %s", path, err.text);
    }
    return rc;
}

/* Does the entity at PATH (FP), as the service gave it to the mount at
 * ETAG, hold exactly WIRE (the same properties with the same values and
 * types: entity_wire_digest)? Then a save would change nothing. Compared
 * with what the service holds, not with the file text: a text that shows a
 * value in another form (a DateTime with an offset shown in UTC) is saved.
 * Only while the mount's copy is as current as an open would take it
 * (store_load_current: younger than the negative lifetime, or in the
 * listing a walk is reading): an older one may hide a change made
 * elsewhere that the save is meant to undo (a restore). 1 or 0. */
static int unchanged(struct store *s, const char *path, const struct fspath *fp, const json_t *wire,
                     const char *etag)
{
    unsigned char want[ENTITY_DIGEST_LEN];
    struct cache_file f = { 0 };
    int same = 0;

    if (etag && cache_get_file(s->cache, path, &f) == 0 && f.etag && f.has_digest &&
        strcmp(f.etag, etag) == 0 &&
        (f.age < s->negative_timeout || (f.listed && walk_going(s, fp))) &&
        entity_wire_digest(wire, want) == 0)
        same = memcmp(want, f.digest, sizeof(want)) == 0;
    cache_file_clear(&f);
    return same;
}

/* See store.h. */
int store_save(struct store *s, const struct store_save *sv, char **new_etag)
{
    struct az_status st = { 0 };
    const char *text = sv->len ? sv->text : "{}"; /* empty: no properties */
    size_t len = sv->len ? sv->len : 2;
    json_t *wire = NULL;
    char *pk_in = NULL, *rk_in = NULL, *got_etag = NULL;
    int is_new = sv->as == SAVE_INSERT, rc;
    enum table_write how = is_new         ? TW_INSERT :
        sv->as == SAVE_UPDATE && s->merge ? TW_MERGE :
                                            TW_REPLACE;

    if ((rc = parse_text(s, sv->path, text, len, &wire, &pk_in, &rk_in)) < 0 ||
        (rc = write_keys(s, sv->fp, sv->path, is_new, &pk_in, &rk_in)) < 0 ||
        (rc = store_fits_service(s, "save", sv->path, sv->fp->pk, sv->fp->rk, wire, len)) < 0)
        goto out;
    if (!is_new && unchanged(s, sv->path, sv->fp, wire, sv->etag)) {
        /* the entity holds this already: nothing to send, and a failed
         * change of it is dealt with */
        s->changes->resolved(s, sv->path);
        rc = (got_etag = strdup(sv->etag)) ? 0 : -ENOMEM;
        goto out;
    }
    rc = s->changes->write(s, sv->path, sv->fp, wire, how, sv->etag, &got_etag, &st);
    if (rc < 0) {
        store_log_failure(s, "save", sv->path, rc, &st,
                          rc == -ESTALE     ? "the entity was changed by someone else since it "
                                              "was read; the file now shows the current entity" :
                              rc == -EEXIST ? "an entity with this key was created meanwhile" :
                              rc == -ENOENT ? "the entity was deleted by someone else" :
                                              NULL);
        if (rc == -ESTALE || rc == -EEXIST || rc == -ENOENT)
            store_forget_entity(s, sv->path, sv->fp);
    }
out:
    if (rc == 0 && new_etag) {
        *new_etag = got_etag;
        got_etag = NULL;
    }
    json_decref(wire);
    free(pk_in);
    free(rk_in);
    free(got_etag);
    return rc;
}

/* See store.h. */
int store_save_over(struct store *s, struct fspath *fp, const char *path, const char *text,
                    size_t len)
{
    struct cache_file dst = { 0 };
    int rc = store_load_current(s, fp, path, &dst, 1), exists;

    if (rc == 0 && (!fp->pk || !fp->rk) && (rc = scan_resolve_keys(s, fp)) < 0)
        cache_file_clear(&dst);
    exists = rc == 0;
    if (rc == 0 || rc == -ENOENT)
        rc = store_save(s,
                        &(struct store_save){ path, fp, text, len,
                                              exists ? SAVE_REPLACE : SAVE_INSERT,
                                              exists ? dst.etag : NULL },
                        NULL);
    cache_file_clear(&dst);
    return rc;
}

/* See store.h. */
int store_truncate(struct store *s, struct fspath *fp, const char *path, size_t size)
{
    struct cache_file f = { 0 };
    struct buf text = BUF_INIT(SIZE_MAX);
    int rc = store_load_keyed(s, fp, path, &f);

    if (rc < 0)
        return rc;
    buf_add(&text, f.data, size < f.len ? size : f.len);
    if ((rc = buf_setlen(&text, size)) == 0) /* zero-filled beyond the text */
        rc = store_save(
            s,
            &(struct store_save){ path, fp, text.ptr ? text.ptr : "", size, SAVE_UPDATE, f.etag },
            NULL);
    buf_free(&text);
    cache_file_clear(&f);
    return rc;
}

/* See store.h. */
int store_delete(struct store *s, struct fspath *fp, const char *path)
{
    struct cache_file f = { 0 };
    struct az_status st = { 0 };
    int rc;

    if ((rc = store_load_keyed(s, fp, path, &f)) < 0)
        return rc;
    rc = s->changes->remove(s, path, fp, f.etag, &st);
    cache_file_clear(&f);
    if (rc < 0)
        store_log_failure(s, "delete", path, rc, &st,
                          rc == -ESTALE     ? "the entity was changed by someone else since it "
                                              "was read" :
                              rc == -ENOENT ? "the entity was deleted by someone else" :
                                              NULL);
    if (rc == 0) {
        store_show_gone(s, path, fp);
    } else if (rc == -ESTALE || rc == -ENOENT) {
        store_forget_entity(s, path, fp);
    } else {
        store_forget(s, path);
    }
    return rc;
}

/* See store.h. */
int store_rename(struct store *s, const char *from, struct fspath *ff, const char *to,
                 struct fspath *tf, char **from_etag, char **to_etag)
{
    struct cache_file src = { 0 }, dst = { 0 };
    struct entity_error err = { 0 };
    struct az_status st = { 0 };
    json_t *wire = NULL;
    char *no_pk = NULL, *no_rk = NULL; /* a rename carries no keys in content */
    char *new_etag = NULL;
    int rc, exists;

    *from_etag = *to_etag = NULL;
    if ((rc = store_load_keyed(s, ff, from, &src)) < 0)
        return rc;
    rc = store_load_keyed(s, tf, to, &dst);
    exists = rc == 0;
    if (rc < 0 && rc != -ENOENT)
        goto out;
    if (!exists && (rc = write_keys(s, tf, to, 1, &no_pk, &no_rk)) < 0)
        goto out;
    if ((rc = entity_parse(src.data, src.len, &wire, NULL, NULL, &err)) < 0) {
        log_error(&s->log, "%s: cannot be moved: %s", from, err.text);
        goto out;
    }
    if ((rc = store_fits_service(s, "rename", to, tf->pk, tf->rk, wire, src.len)) < 0)
        goto out;
    rc = s->changes->rename(
        s, &(struct store_move){ from, ff, src.etag, to, tf, exists ? dst.etag : NULL, wire },
        &new_etag, &st);
    if (rc < 0) {
        store_log_failure(s, "rename", from, rc, &st,
                          rc == -ESTALE ? "source or target changed meanwhile; nothing changed" :
                                          "nothing changed");
        store_forget_entity(s, from, ff);
        store_forget_entity(s, to, tf);
    } else {
        store_show_gone(s, from, ff);
    }
    if (rc == 0) {
        *from_etag = src.etag;
        *to_etag = new_etag;
        src.etag = new_etag = NULL;
    }
out:
    free(new_etag);
    json_decref(wire);
    cache_file_clear(&src);
    cache_file_clear(&dst);
    return rc;
}

/* --- the changes' controls (the seam's other calls) ---------------------------- */

/* See store.h. */
int store_create_exclusive(struct store *s, const char *path, struct fspath *fp, char **etag)
{
    return s->changes->create_exclusive(s, path, fp, etag);
}

/* See store.h. The content of new file PATH (FP) was refused, so the empty
 * entity its handle made before that content (an O_EXCL create's, or a
 * flush before the first write; ETAG: what that insert answered) is
 * removed, guarded by ETAG so that one another writer changed since stays;
 * with write-behind a queued insert is undone, and one the service holds
 * deleted at once (store_create_exclusive inserts at once too). Shown gone
 * when removed; -ESTALE or -ENOENT (changed or removed by someone else:
 * left as it is) logged; another failure logged and in user.aztfs.errors. */
int store_uncreate(struct store *s, struct fspath *fp, const char *path, const char *etag)
{
    struct az_status st = { 0 };
    int rc = fp->pk && fp->rk ? 0 : scan_resolve_keys(s, fp);

    if (rc == 0)
        rc = s->changes->uncreate(s, path, fp, etag, &st);
    if (rc == 0) {
        log_info(&s->log,
                 "%s: its content was refused: the empty entity its create made is removed", path);
        store_show_gone(s, path, fp);
    } else if (rc == -ESTALE || rc == -ENOENT) {
        log_info(&s->log,
                 "%s: its content was refused; the empty entity its create made was %s "
                 "by someone else since, so it stays as it is",
                 path, rc == -ESTALE ? "changed" : "removed");
        store_forget_entity(s, path, fp);
    } else {
        store_log_failure(s, "delete", path, rc, &st,
                          "its content was refused, and the empty entity its create made "
                          "could not be removed");
        store_forget(s, path);
    }
    return rc;
}

/* See store.h. */
int store_sync(struct store *s, const char *path)
{
    return s->changes->sync(s, path);
}

/* See store.h. */
int store_pending_json(struct store *s, size_t limit, char **out)
{
    return s->changes->report(s, limit, out);
}

/* See store.h. */
int store_pending_counts(struct store *s, struct store_pending_counts *out)
{
    memset(out, 0, sizeof(*out));
    return s->changes->counts(s, out);
}

/* See store.h. */
int store_discard(struct store *s, const char *path)
{
    return s->changes->discard(s, path);
}

/* store/queued.c - changes through write-behind's queue (-o writeback):
 * handed to the queue (writeback/writeback.h) and shown at once, queued
 * changes shown before the cache and the service, what an applied or
 * failed change does to the cache (through store/shown.c, as a direct
 * change), flushes before a listing is fetched, the queue's controls, and
 * its life (open, start, close). One side of the seam in store_i.h
 * (store/direct.c is the other), and the only module that calls
 * writeback/. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "store/store.h"
#include "store/store_i.h"
#include "writeback/writeback.h"

/* Show the queued write of PATH (FP) in the cache and its listings;
 * *out (OUT may be NULL) gets the file. Returns 1, -ENOENT (a queued
 * delete), 0 (nothing queued) or -errno. */
static int show_queued(struct store *s, const struct fspath *fp, const char *path,
                       struct cache_file *out)
{
    struct cache_file f = { 0 };
    json_t *e = NULL;
    int rc = wb_lookup(s->wb, path, &e);

    if (rc != 1)
        return rc;
    rc = store_cache_entity(s, fp->parent, e,
                            cache_known_dir(s->cache, fp->parent) ? CACHE_LISTED : 0, NULL, &f);
    json_decref(e);
    if (rc < 0)
        return rc;
    store_shown_in_listing(s, fp, &f, 1);
    if (out)
        *out = f;
    else
        cache_file_clear(&f);
    return 1;
}

static int queued_pending(struct store *s, const struct fspath *fp, const char *path,
                          struct cache_file *out)
{
    return show_queued(s, fp, path, out);
}

static enum wb_kind kind_of(enum table_write how)
{
    return how == TW_INSERT ? WB_INSERT : how == TW_REPLACE ? WB_REPLACE : WB_MERGE;
}

/* The change of FP at PATH, as writeback takes it. */
static struct wb_change change_of(const char *path, const struct fspath *fp, enum wb_kind k,
                                  const json_t *wire, const char *etag)
{
    return (struct wb_change){ path, fp->table, fp->pk, fp->rk, k, wire, etag };
}

static int queued_write(struct store *s, const char *path, const struct fspath *fp,
                        const json_t *wire, enum table_write how, const char *etag, char **new_etag,
                        struct az_status *st)
{
    struct wb_change c = change_of(path, fp, kind_of(how), wire, etag);
    int rc = wb_submit(s->wb, &c, 1, new_etag);

    (void)st; /* the queue's failures are its own (user.aztfs.pending) */
    if (rc == 0) {
        store_forget(s, path); /* the kernel's copy is the old one */
        (void)show_queued(s, fp, path, NULL);
    }
    return rc;
}

static void queued_resolved(struct store *s, const char *path)
{
    (void)wb_discard(s->wb, path, "the file was saved as the service holds it");
}

static int queued_remove(struct store *s, const char *path, const struct fspath *fp,
                         const char *etag, struct az_status *st)
{
    struct wb_change c = change_of(path, fp, WB_DELETE, NULL, etag);

    (void)st;
    return wb_submit(s->wb, &c, 1, NULL);
}

/* Both halves in one append of the journal and one batch. */
static int queued_rename(struct store *s, const struct store_move *m, char **to_etag,
                         struct az_status *st)
{
    struct wb_change c[2] = {
        change_of(m->to, m->tf, m->to_etag ? WB_REPLACE : WB_INSERT, m->wire, m->to_etag),
        change_of(m->from, m->ff, WB_DELETE, NULL, m->from_etag),
    };
    char *tokens[2] = { NULL, NULL };
    int rc = wb_submit(s->wb, c, 2, tokens);

    (void)st;
    *to_etag = tokens[0];
    free(tokens[1]);
    if (rc == 0) {
        store_forget(s, m->to);
        (void)show_queued(s, m->tf, m->to, NULL);
    }
    return rc;
}

/* The service decides at the open: an empty entity inserted at once
 * (after the entity's queued delete, if any, is sent). */
static int queued_create_exclusive(struct store *s, const char *path, const struct fspath *fp,
                                   char **etag)
{
    struct az_status st = { 0 };
    json_t *empty = NULL, *e = NULL;
    int rc;

    *etag = NULL;
    if (!fp->pk || !fp->rk)
        return 1; /* a long-form name: decided at its close (keys in its content) */
    if ((rc = wb_lookup(s->wb, path, &e)) == 1) {
        json_decref(e); /* a queued write: it exists */
        return -EEXIST;
    }
    if (rc == -ENOENT && wb_flush(s->wb, path, 1) < 0) {
        log_error(&s->log,
                  "%s: not created: its queued delete could not be sent first, "
                  "and O_EXCL must ask the service",
                  path);
        return -EIO;
    }
    if (rc < 0 && rc != -ENOENT)
        return rc;
    if (!(empty = json_object()))
        return -ENOMEM;
    rc = table_write_entity(s->tc, fp->table, fp->pk, fp->rk, empty, TW_INSERT, NULL, etag, &st);
    if (rc == 0)
        store_show_written(s, path, fp, empty, *etag, 1);
    else if (rc == -EEXIST)
        store_forget_entity(s, path, fp); /* made elsewhere: shown as it is */
    else
        store_log_failure(s, "create", path, rc, &st, NULL);
    json_decref(empty);
    return rc;
}

/* A change of PATH queued (the insert that made it, or one after it): the
 * delete is queued after it, guarded by ETAG, so that a queued insert it
 * names is undone (nothing sent) and another change refuses it (ESTALE).
 * Nothing queued: the service holds the entity (an O_EXCL create inserts
 * at once, or the queued insert was sent since: its token resolved), and
 * it is deleted at once, so that no failed change is left to report. */
static int queued_uncreate(struct store *s, const char *path, const struct fspath *fp,
                           const char *etag, struct az_status *st)
{
    json_t *e = NULL;
    char *real = NULL;
    int rc = wb_lookup(s->wb, path, &e);

    json_decref(e);
    if (rc == 1)
        return queued_remove(s, path, fp, etag, st);
    if (rc < 0) /* -ENOENT: its delete is queued already */
        return rc;
    if ((rc = wb_resolve(s->wb, etag, &real)) < 0)
        return rc;
    rc = table_delete_entity(s->tc, fp->table, fp->pk, fp->rk, real ? real : etag, st);
    free(real);
    return rc;
}

/* writeback's applied hook: PATH shows the entity as the service now holds
 * it (with its ETag and Timestamp; a merge's result is read again when next
 * asked), unless a later change of it is queued: that one shows. */
static void on_applied(void *ctx, const char *path, const json_t *entity, int exact,
                       const char *etag)
{
    struct store *s = ctx;
    struct fspath fp;
    json_t *e = NULL;

    if (!entity || wb_lookup(s->wb, path, &e) != 0) {
        json_decref(e); /* a later change is queued: it is what shows */
        return;
    }
    if (fspath_parse(path, &fp) < 0)
        return;
    if (fp.pk && fp.rk)
        store_show_written(s, path, &fp, entity, etag, exact);
    else
        cache_invalidate(s->cache, path);
    fspath_free(&fp);
}

/* writeback's failed hook: what the mount shows of PATH is read again. */
static void on_failed(void *ctx, const char *path)
{
    struct store *s = ctx;
    struct fspath fp;

    if (fspath_parse(path, &fp) < 0)
        return;
    store_forget_entity(s, path, &fp);
    fspath_free(&fp);
}

/* writeback's cancelled hook: the store's (the mount's: the writer's FUSE
 * request interrupted, or the mount ending). */
static int on_cancelled(void *ctx)
{
    struct store *s = ctx;

    return s->cancelled && s->cancelled(s->cancel_ctx);
}

/* See store.h. */
int store_writeback_open(struct store *s, const struct wb_config *cfg, const struct account *acct,
                         const struct http_config *hc)
{
    struct wb_hooks h = { on_applied, on_failed, on_cancelled, s };
    int rc = wb_open(cfg, acct, hc, &s->log, &s->stats, &h, &s->wb);

    if (rc == 0)
        s->changes = &store_queued;
    if (rc == 0 && wb_drain(s->wb) < 0)
        log_warn(&s->log, "some changes of the journal failed: see user.aztfs.pending");
    return rc;
}

/* See store.h. */
int store_writeback_start(struct store *s)
{
    return s->wb ? wb_start(s->wb) : 0;
}

/* See store.h. */
size_t store_writeback_close(struct store *s)
{
    size_t left = wb_close(s->wb);

    s->wb = NULL;
    s->changes = &store_direct; /* whatever comes after the end is sent at once */
    return left;
}

static void queued_settle(struct store *s, const char *dir)
{
    if (wb_queued(s->wb, dir)) {
        log_debug(&s->log, "%s: its queued changes are sent before it is listed", dir);
        (void)wb_flush(s->wb, dir, 1);
    }
}

static int queued_pending_in(struct store *s, const char *dir)
{
    return wb_queued(s->wb, dir);
}

static int queued_sync(struct store *s, const char *path)
{
    return wb_flush(s->wb, path, 1);
}

static int queued_report(struct store *s, size_t limit, char **out)
{
    *out = wb_pending_json(s->wb, limit);
    return *out ? 0 : -ENOMEM;
}

static int queued_counts(struct store *s, struct store_pending_counts *out)
{
    struct wb_counts c;

    wb_counts(s->wb, &c);
    out->queued = c.queued;
    out->sending = c.sending;
    out->failed = c.failed;
    out->damaged = c.damaged;
    return 0;
}

static int queued_discard(struct store *s, const char *path)
{
    return wb_discard(s->wb, path, "discarded (user.aztfs.discard)");
}

const struct store_changes store_queued = {
    .name = "queued",
    .pending = queued_pending,
    .write = queued_write,
    .remove = queued_remove,
    .rename = queued_rename,
    .resolved = queued_resolved,
    .settle = queued_settle,
    .pending_in = queued_pending_in,
    .create_exclusive = queued_create_exclusive,
    .uncreate = queued_uncreate,
    .sync = queued_sync,
    .report = queued_report,
    .counts = queued_counts,
    .discard = queued_discard,
};

/* writeback/queue.c - write-behind's intake: a change checked against the
 * entity's queued one and merged with it, journalled before it is
 * acknowledged, writers waiting for room; what a queued change shows
 * (wb_lookup) and the ETag a token stands for (wb_resolve). An operation's
 * records and lists are writeback/oplog.c's, the maps writeback/maps.c's, the
 * batches and sending threads writeback/send.c's, what an answered change
 * leaves writeback/outcome.c's; opening, flushing, reporting and closing
 * writeback/life.c's, reading the journal back writeback/replay.c's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writeback/writeback_i.h"
#include "writeback/writeback.h"

/* --- merging ----------------------------------------------------------------- */

/* A's properties with B's over them (a Merge of B onto A): a new
 * reference, or NULL. A property B sets loses A's type annotation. */
static json_t *props_merged(const json_t *a, const json_t *b)
{
    json_t *m = json_deep_copy(a), *v;
    const char *k;

    if (!m)
        return NULL;
    json_object_foreach ((json_t *)b, k, v) {
        char ann[300];

        if (strstr(k, "@odata.type"))
            continue;
        snprintf(ann, sizeof(ann), "%s@odata.type", k);
        json_object_del(m, ann);
    }
    if (json_object_update(m, (json_t *)b) < 0) {
        json_decref(m);
        return NULL;
    }
    return m;
}

/* Can change C be made now, given the entity's queued change LAST (may be
 * NULL)? 0 (with *if_match a malloc'd ETag to guard it with, or NULL), or
 * -errno. */
static int change_check(struct writeback *wb, const struct wb_change *c, const struct wb_op *last,
                        char **if_match)
{
    char tok[64];

    *if_match = NULL;
    if (last) {
        wb_op_token(last, tok);
        if (last->kind == WB_DELETE)
            return c->kind == WB_INSERT ? 0 : -ENOENT;
        if (c->kind == WB_INSERT)
            return -EEXIST;
        if (!c->if_match || strcmp(c->if_match, tok) != 0)
            return -ESTALE;
        return (*if_match = strdup(tok)) ? 0 : -ENOMEM;
    }
    if (c->kind == WB_INSERT)
        return 0;
    if (c->if_match && strncmp(c->if_match, WB_TOKEN_PREFIX, strlen(WB_TOKEN_PREFIX)) == 0) {
        int r = wb_done_get(wb, c->if_match, if_match); /* lock held */

        return r == 1 ? 0 : r < 0 ? r : -ESTALE;
    }
    return (*if_match = strdup(c->if_match ? c->if_match : "*")) ? 0 : -ENOMEM;
}

/* The op for change C (IF_MATCH stolen), merged into the entity's queued
 * change LAST when that one can still change (*merged set), else waiting
 * for it. *OUT NULL with 0: C undoes LAST (an insert deleted). */
static int op_build(struct writeback *wb, const struct wb_change *c, char *if_match,
                    struct wb_op *last, uint64_t group, struct wb_op **out, int *merged)
{
    struct wb_op *op = calloc(1, sizeof(*op));
    enum wb_kind k = c->kind;
    json_t *e = c->entity ? json_deep_copy(c->entity) : NULL;

    *out = NULL;
    *merged = last && last->state == WS_QUEUED && !last->sent_at.tv_sec && !last->group && !group;
    if (*merged) {
        free(if_match);
        if_match = last->if_match ? strdup(last->if_match) : NULL;
        if (last->kind == WB_INSERT && k == WB_DELETE) {
            free(op);
            free(if_match);
            return 0;
        }
        if (k == WB_MERGE && last->kind != WB_DELETE) {
            json_decref(e);
            e = props_merged(last->entity, c->entity);
            k = last->kind; /* insert/replace stay; merge onto merge */
        } else if (last->kind == WB_INSERT) {
            k = WB_INSERT; /* an insert rewritten: still an insert */
        } else if (last->kind == WB_DELETE) {
            k = WB_REPLACE; /* deleted and made again: a replace */
        }
    }
    if (!op || (c->entity && !e) || (last && *merged && last->if_match && !if_match)) {
        free(op);
        json_decref(e);
        free(if_match);
        return -ENOMEM;
    }
    op->seq = wb->next_seq++;
    op->kind = k;
    op->entity = e;
    op->if_match = if_match;
    op->group = group;
    op->queued_at = wb_now();
    if (!(op->path = strdup(c->path)) || !(op->table = strdup(c->table)) ||
        !(op->pk = strdup(c->pk)) || !(op->rk = strdup(c->rk))) {
        wb_op_free(op);
        return -ENOMEM;
    }
    if (last && !*merged)
        op->dep = last;
    op->bytes = 512 + 2 * strlen(c->path) + (e ? json_dumpb(e, NULL, 0, JSON_COMPACT) : 0);
    *out = op;
    return 0;
}

/* A change made ready to be queued: its op (NULL when it undoes LAST, an
 * insert deleted before it was sent) and its journal records. Nothing of
 * the queue has changed yet. */
struct ready {
    struct wb_ent *e;
    struct wb_op *op, *last;
    int merged;
};

/* Forget R (its op was not queued). Lock held. */
static void ready_drop(struct writeback *wb, struct ready *r)
{
    LOCK_HELD(&wb->mu);
    wb_op_free(r->op);
    r->op = NULL;
    if (r->e && !r->e->last && !r->e->failed)
        wb_ent_release(wb, r->e);
    r->e = NULL;
}

/* Make change C ready (R), its records appended to RECS: the op's (or the
 * drop of the insert it undoes), and the drop of a failed change it
 * replaces. Lock held. Returns 0 or -errno (R dropped). */
static int change_build(struct writeback *wb, const struct wb_change *c, uint64_t group,
                        struct ready *r, json_t *recs)
{
    char *if_match = NULL;
    int rc;

    LOCK_HELD(&wb->mu);
    memset(r, 0, sizeof(*r));
    if (!(r->e = wb_ent_get(wb, c->path, 1)))
        return -ENOMEM;
    r->last = r->e->last;
    if ((rc = change_check(wb, c, r->last, &if_match)) < 0 ||
        (rc = op_build(wb, c, if_match, r->last, group, &r->op, &r->merged)) < 0)
        goto out_err;
    rc = -ENOMEM;
    if (json_array_append_new(
            recs,
            r->op ? wb_op_record(r->op, r->merged ? r->last->seq : 0) :
                    json_pack("{s:s, s:I}", "t", "drop", "seq", (json_int_t)r->last->seq)) < 0 ||
        (r->e->failed &&
         json_array_append_new(
             recs, json_pack("{s:s, s:I}", "t", "drop", "seq", (json_int_t)r->e->failed->seq)) < 0))
        goto out_err;
    return 0;
out_err:
    ready_drop(wb, r);
    return rc;
}

/* Queue the ready change R of C (its records are in the journal). TOKEN
 * (may be NULL) gets the entity's new token. Lock held. 0 or -ENOMEM. */
static int change_apply(struct writeback *wb, const struct wb_change *c, struct ready *r,
                        char **token)
{
    struct wb_op *op = r->op, *last = r->last;
    struct wb_ent *e = r->e;
    char *dir, tok[64];

    LOCK_HELD(&wb->mu);
    r->op = NULL;
    if (!op) { /* an insert deleted before it was sent */
        wb_part_unlink(last);
        wb->n_queued--;
        wb->bytes -= last->bytes;
        e->last = last->dep;
        if (last->dep)
            last->dep->succ = NULL;
        wb_op_free(last);
    } else if (r->merged) {
        op->part = last->part;
        wb_op_swap(wb, last, op);
    } else {
        dir = strndup(c->path, (size_t)(strrchr(c->path, '/') - c->path));
        op->part = dir ? wb_part_get(wb, dir, 1) : NULL;
        free(dir);
        if (!op->part ||
            (op->part->table == NULL &&
             (!(op->part->table = strdup(c->table)) || !(op->part->pk = strdup(c->pk))))) {
            wb_op_free(op); /* journalled: the next mount queues it */
            ready_drop(wb, r);
            return -ENOMEM;
        }
        if (last)
            last->succ = op;
        wb_part_push_back(op);
        wb->n_queued++;
        wb->bytes += op->bytes;
        e->last = op;
    }
    if (e->failed) { /* a new change replaces a failed one */
        struct wb_op *f = e->failed;

        wb_failed_unlink(wb, f);
        wb_op_free(f);
    }
    if (op)
        wb_op_token(op, tok);
    if (op && token && c->kind != WB_DELETE && !(*token = strdup(tok)))
        return -ENOMEM;
    if (!e->last && !e->failed)
        wb_ent_release(wb, e);
    return 0;
}

/* Wait for room in the queue (lock held). 0, or -EINTR (logged). */
static int wait_room(struct writeback *wb, const char *path)
{
    int rc = 0;

    LOCK_HELD(&wb->mu);
    while (wb->bytes >= wb->cfg.max_bytes && !wb->stopping && rc == 0) {
        wb->urgent = 1; /* the queue is full: send, and wait for room */
        pthread_cond_broadcast(&wb->work_cv);
        if ((rc = wb_wait_sent(wb)) < 0)
            log_warn(wb->lg,
                     "%s: not saved: the change waited for room in the write-behind "
                     "queue and the request was interrupted or the mount is ending",
                     path);
    }
    return rc;
}

/* The journal's disk is full (an append failed with ENOSPC; lock held):
 * compact the journal, and while changes are queued or out, wait for
 * their sends to free more. *WAITED: set once the writer has waited (for
 * the log). Returns 0 to try again, -ENOSPC when nothing queued can free
 * room (logged), or -EINTR. */
static int make_room(struct writeback *wb, const char *path, int *waited)
{
    int compacted;

    LOCK_HELD(&wb->mu);
    compacted = wb_compact(wb) == 0;
    if (compacted && !*waited) {
        *waited = 1; /* dead records are gone: try once at once */
        return 0;
    }
    if (wb->n_queued + wb->n_sending == 0) {
        log_error(wb->lg,
                  "%s: not saved: the journal's disk is full (%s) and no queued "
                  "change is left to free room",
                  path, journal_path(wb->j));
        return -ENOSPC;
    }
    if (*waited < 2)
        log_warn(wb->lg,
                 "%s: the journal's disk is full (%s): the change waits while %zu "
                 "queued change%s are sent",
                 path, journal_path(wb->j), wb->n_queued + wb->n_sending,
                 wb->n_queued + wb->n_sending == 1 ? "" : "s");
    *waited = 2;
    wb->urgent = 1;
    pthread_cond_broadcast(&wb->work_cv);
    return wb_wait_sent(wb);
}

/* Make sure the records up to LSN are on disk: a failed flush or a removed
 * journal is healed by writing the journal again from memory. Lock not
 * held. 0 or -EIO. */
static int sync_healed(struct writeback *wb, uint64_t lsn)
{
    int rc = journal_sync(wb->j, lsn);

    if (rc == -EIO || rc == -ESTALE) {
        pthread_mutex_lock(&wb->mu);
        rc = wb_compact(wb);
        pthread_mutex_unlock(&wb->mu);
        if (rc == 0)
            rc = journal_sync(wb->j, lsn);
    }
    return rc < 0 ? -EIO : 0;
}

/* Queue the N changes C (made ready together, journalled in one append:
 * all or none) once their records are in the journal. Lock held. */
static int submit_locked(struct writeback *wb, const struct wb_change *c, size_t n, char **tokens,
                         uint64_t *lsn)
{
    struct ready r[2];
    int rc, waited = 0;

    LOCK_HELD(&wb->mu);
    rc = wait_room(wb, c[0].path);
    while (rc == 0) {
        uint64_t group = n > 1 ? wb->next_seq : 0;
        json_t *recs = json_array();
        size_t built = 0;

        rc = recs ? 0 : -ENOMEM;
        for (; built < n && rc == 0; built++)
            if ((rc = change_build(wb, &c[built], group, &r[built], recs)) < 0)
                break;
        if (rc == 0)
            rc = journal_append(wb->j, recs, lsn);
        json_decref(recs);
        if (rc == 0) {
            for (size_t i = 0; i < n; i++)
                if (change_apply(wb, &c[i], &r[i], tokens ? &tokens[i] : NULL) < 0)
                    rc = -ENOMEM; /* journalled: the next mount has it */
            return rc;
        }
        for (size_t i = 0; i < built; i++)
            ready_drop(wb, &r[i]);
        if (rc == -ENOSPC)
            rc = make_room(wb, c[0].path, &waited);
        else
            break;
    }
    return rc;
}

/* See writeback.h. */
int wb_submit(struct writeback *wb, const struct wb_change *c, size_t n, char **tokens)
{
    uint64_t lsn = 0;
    int rc;

    if (n < 1 || n > 2)
        return -EINVAL;
    if (tokens)
        for (size_t i = 0; i < n; i++)
            tokens[i] = NULL;
    pthread_mutex_lock(&wb->mu);
    rc = submit_locked(wb, c, n, tokens, &lsn);
    if (rc == 0)
        pthread_cond_signal(&wb->work_cv);
    pthread_mutex_unlock(&wb->mu);
    if (rc == 0 && lsn)
        rc = sync_healed(wb, lsn);
    if (rc < 0 && tokens)
        for (size_t i = 0; i < n; i++) {
            free(tokens[i]);
            tokens[i] = NULL;
        }
    return rc;
}

/* The wall clock now as an Edm.DateTime ("2026-11-23T10:00:00.0000000Z"). */
static void now_datetime(char out[40])
{
    struct timespec t;
    struct tm tm;
    size_t n;

    clock_gettime(CLOCK_REALTIME, &t);
    gmtime_r(&t.tv_sec, &tm);
    n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 40 - n, ".%07ldZ", t.tv_nsec / 100);
}

/* See writeback.h. */
int wb_lookup(struct writeback *wb, const char *path, json_t **entity)
{
    struct wb_ent *e;
    char tok[64], ts[40];
    int rc = 0;

    *entity = NULL;
    pthread_mutex_lock(&wb->mu);
    e = wb_ent_get(wb, path, 0);
    if (e && e->last && e->last->kind == WB_DELETE) {
        rc = -ENOENT;
    } else if (e && e->last) {
        struct wb_op *op = e->last;

        wb_op_token(op, tok);
        now_datetime(ts);
        if (!(*entity = json_deep_copy(op->entity)) ||
            json_object_set_new(*entity, "PartitionKey", json_string(op->pk)) < 0 ||
            json_object_set_new(*entity, "RowKey", json_string(op->rk)) < 0 ||
            json_object_set_new(*entity, "Timestamp", json_string(ts)) < 0 ||
            json_object_set_new(*entity, "odata.etag", json_string(tok)) < 0) {
            json_decref(*entity);
            *entity = NULL;
            rc = -ENOMEM;
        } else {
            rc = 1;
        }
    }
    pthread_mutex_unlock(&wb->mu);
    return rc;
}

/* See writeback.h. */
int wb_resolve(struct writeback *wb, const char *etag, char **real)
{
    int rc;

    pthread_mutex_lock(&wb->mu);
    rc = wb_done_get(wb, etag, real);
    pthread_mutex_unlock(&wb->mu);
    return rc;
}

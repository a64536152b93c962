/* writeback/outcome.c - what becomes of a change once its batch is answered
 * (writeback_i.h): applied (the change after it guarded by the new ETag, its token
 * remembered, the store told), or failed for good (its later changes
 * failing with it, kept on the failed list and in the journal, logged);
 * the store's hooks called once writeback's lock is released. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "writeback/writeback_i.h"
#include "writeback/writeback.h"

/* A hook call to make once the lock is released (writeback_i.h). */
struct wb_call {
    int applied;
    char *path;
    json_t *entity;
    int exact;
    char *etag;
    struct wb_call *next;
};

/* --- outcomes ------------------------------------------------------------------ */

/* Queue a hook call on *CALLS. */
void wb_call_add(struct wb_call **calls, int applied, const struct wb_op *op, const char *etag)
{
    struct wb_call *k = calloc(1, sizeof(*k));

    if (!k || !(k->path = strdup(op->path))) {
        free(k);
        return; /* the cache keeps what it shows until it expires */
    }
    k->applied = applied;
    k->entity = json_incref(op->entity);
    k->exact = op->kind != WB_MERGE;
    k->etag = etag ? strdup(etag) : NULL;
    k->next = *calls;
    *calls = k;
}

/* See writeback/writeback_i.h. */
void wb_calls_run(struct writeback *wb, struct wb_call *calls)
{
    while (calls) {
        struct wb_call *k = calls;

        calls = k->next;
        if (k->applied && wb->hooks.applied)
            wb->hooks.applied(wb->hooks.ctx, k->path, k->entity, k->exact, k->etag);
        else if (!k->applied && wb->hooks.failed)
            wb->hooks.failed(wb->hooks.ctx, k->path);
        json_decref(k->entity);
        free(k->path);
        free(k->etag);
        free(k);
    }
}

/* See writeback/writeback_i.h. */
void wb_op_applied(struct writeback *wb, struct wb_op *op, const char *etag, struct wb_call **calls)
{
    struct wb_ent *e;
    char tok[64];

    LOCK_HELD(&wb->mu);
    e = wb_ent_get(wb, op->path, 0);
    wb_op_token(op, tok);
    wb_done_put(wb, tok, etag);
    if (op->succ) { /* the next change of the entity is guarded by it */
        free(op->succ->if_match);
        op->succ->if_match = op->kind == WB_DELETE ? NULL : strdup(etag ? etag : "*");
        op->succ->dep = NULL;
    } else {
        wb_call_add(calls, 1, op, op->kind == WB_DELETE ? NULL : etag);
    }
    if (e && e->last == op)
        e->last = NULL;
    wb->n_sending--;
    wb->n_applied++;
    wb->bytes -= op->bytes;
    if (e)
        wb_ent_release(wb, e);
    wb_op_free(op);
}

/* Put OP on the failed list as its entity's failed change (replacing an
 * older one), with -RC and WHY. Lock held, or replaying (writeback_i.h): not
 * asserted. */
void wb_failed_keep(struct writeback *wb, struct wb_op *op, int rc, const char *why)
{
    struct wb_ent *e = wb_ent_get(wb, op->path, 1);
    struct wb_op *t;

    op->state = WS_FAILED;
    op->err = -rc;
    op->why = why ? strdup(why) : NULL;
    op->dep = op->succ = NULL;
    op->prev = NULL;
    op->next = NULL;
    if (wb->failed_head) {
        for (t = wb->failed_head; t->next; t = t->next)
            ;
        t->next = op;
        op->prev = t;
    } else {
        wb->failed_head = op;
    }
    wb->n_failed++;
    if (e && e->failed) {
        struct wb_op *f = e->failed;

        wb_failed_unlink(wb, f);
        wb_op_free(f);
    }
    if (e)
        e->failed = op;
}

/* See writeback/writeback_i.h. */
void wb_op_failed(struct writeback *wb, struct wb_op *op, int rc, const char *why,
                  struct wb_call **calls)
{
    struct wb_ent *e;
    const char *what = wb_kind_name(op->kind);
    json_t *rec;

    LOCK_HELD(&wb->mu);
    e = wb_ent_get(wb, op->path, 0);
    wb->n_sending--;
    wb->bytes -= op->bytes;
    /* later changes of the entity were made on top of this one: they fail
     * with it, and the latest stands for them all */
    while (op->succ) {
        struct wb_op *s = op->succ;

        wb_part_unlink(s);
        wb->n_queued--;
        wb->bytes -= s->bytes;
        (void)wb_journal(wb, json_pack("{s:s, s:I}", "t", "drop", "seq", (json_int_t)op->seq));
        s->dep = NULL;
        wb_op_free(op);
        op = s;
    }
    if (e)
        e->last = NULL; /* the chain ended at the latest change */
    rec = json_pack("{s:s, s:I, s:i, s:s?}", "t", "fail", "seq", (json_int_t)op->seq, "errno", -rc,
                    "why", why);
    (void)wb_journal(wb, rec);
    wb_failed_keep(wb, op, rc, why);
    log_error(wb->lg,
              "%s: the queued %s failed: %s (%s)%s%s; it stays in the journal, reported "
              "by the root's user.aztfs.pending, and fsync returns EIO until the file is "
              "written again or the change is discarded (doc/USAGE.md \"Write-behind\")",
              op->path, what, strerrorname_np(-rc) ? strerrorname_np(-rc) : "?", strerror(-rc),
              why ? ": " : "", why ? why : "");
    failring_add(wb->lg->failures, &(struct failure){ "writeback", op->path, -rc, 0, NULL, why });
    wb_call_add(calls, 0, op, NULL);
}

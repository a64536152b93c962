/* writeback/oplog.c - write-behind's operations: an operation's token, its
 * journal record, its place in its partition's queue and in the failed
 * list; the journal's appends, and its compaction (what is live written
 * anew). The bottom of writeback/ with writeback/maps.c: the queue, the
 * sender, the outcomes, the replay and the life cycle all use it, and it
 * calls none of them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writeback/writeback_i.h"
#include "writeback/writeback.h"

/* --- an operation ------------------------------------------------------------- */

/* OP's token (what the entity shows as its ETag while it is queued) in OUT. */
void wb_op_token(const struct wb_op *op, char out[64])
{
    snprintf(out, 64, WB_TOKEN_PREFIX "%" PRIu64 "\"", op->seq);
}

const char *wb_kind_name(enum wb_kind k)
{
    return k == WB_INSERT ? "insert" :
        k == WB_REPLACE   ? "replace" :
        k == WB_MERGE     ? "merge" :
                            "delete";
}

void wb_op_free(struct wb_op *op)
{
    if (!op)
        return;
    json_decref(op->entity);
    free(op->if_match);
    free(op->path);
    free(op->table);
    free(op->pk);
    free(op->rk);
    free(op->why);
    free(op->done_etag);
    free(op);
}

/* See writeback/writeback_i.h. */
void wb_part_unlink(struct wb_op *op)
{
    struct wb_part *p = op->part;

    if (op->prev)
        op->prev->next = op->next;
    else
        p->head = op->next;
    if (op->next)
        op->next->prev = op->prev;
    else
        p->tail = op->prev;
    op->prev = op->next = NULL;
    p->n--;
}

/* Append OP to its partition's queue. */
void wb_part_push_back(struct wb_op *op)
{
    struct wb_part *p = op->part;

    op->next = NULL;
    op->prev = p->tail;
    if (p->tail)
        p->tail->next = op;
    else
        p->head = op;
    p->tail = op;
    p->n++;
}

/* See writeback/writeback_i.h. */
void wb_part_push_front(struct wb_op *op)
{
    struct wb_part *p = op->part;

    op->prev = NULL;
    op->next = p->head;
    if (p->head)
        p->head->prev = op;
    else
        p->tail = op;
    p->head = op;
    p->n++;
}

/* See writeback/writeback_i.h. */
void wb_failed_unlink(struct writeback *wb, struct wb_op *f)
{
    struct wb_ent *e = wb_ent_get(wb, f->path, 0);

    if (f->prev)
        f->prev->next = f->next;
    else
        wb->failed_head = f->next;
    if (f->next)
        f->next->prev = f->prev;
    f->prev = f->next = NULL;
    wb->n_failed--;
    if (e && e->failed == f)
        e->failed = NULL;
}

/* Put NEW where OLD is in its partition's queue and in its entity's chain.
 * Lock held, or replaying (writeback_i.h): not asserted. */
void wb_op_swap(struct writeback *wb, struct wb_op *old, struct wb_op *new)
{
    struct wb_part *p = old->part;
    struct wb_ent *e = wb_ent_get(wb, old->path, 0);

    new->prev = old->prev;
    new->next = old->next;
    if (old->prev)
        old->prev->next = new;
    else
        p->head = new;
    if (old->next)
        old->next->prev = new;
    else
        p->tail = new;
    new->dep = old->dep;
    if (old->dep)
        old->dep->succ = new;
    if (e && e->last == old)
        e->last = new;
    new->queued_at = old->queued_at;
    wb->bytes -= old->bytes;
    wb->bytes += new->bytes;
    wb_op_free(old);
}

/* The journal record of OP (a new reference), REPLACES: the seq of the
 * change it was merged into (0: none). */
json_t *wb_op_record(const struct wb_op *op, uint64_t replaces)
{
    json_t *r =
        json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:s, s:s?, s:O?, s:I, s:I, s:I}", "t", "op",
                  "seq", (json_int_t)op->seq, "path", op->path, "table", op->table, "pk", op->pk,
                  "rk", op->rk, "k", wb_kind_name(op->kind), "if", op->if_match, "e", op->entity,
                  "dep", (json_int_t)(op->dep ? op->dep->seq : 0), "g", (json_int_t)op->group,
                  "replaces", (json_int_t)replaces);

    if (r && op->sent_at.tv_sec &&
        json_object_set_new(
            r, "sent", json_real((double)op->sent_at.tv_sec + op->sent_at.tv_nsec / 1e9)) < 0) {
        json_decref(r);
        r = NULL;
    }
    return r;
}

/* See writeback/writeback_i.h. */
json_t *wb_seq_array(struct wb_op **ops, size_t n)
{
    json_t *a = json_array();

    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_integer((json_int_t)ops[i]->seq)) < 0) {
            json_decref(a);
            a = NULL;
        }
    return a;
}

/* See writeback/writeback_i.h. */
int wb_journal(struct writeback *wb, json_t *rec)
{
    uint64_t lsn = 0;
    int rc;

    if (!rec)
        return -ENOMEM;
    if (!wb->j) { /* replaying: the records are already there */
        json_decref(rec);
        return 0;
    }
    rc = journal_append(wb->j, rec, &lsn);
    json_decref(rec);
    return rc < 0 ? rc : journal_sync(wb->j, lsn);
}

/* --- compaction ---------------------------------------------------------------- */

static int by_seq(const void *a, const void *b)
{
    uint64_t x = (*(struct wb_op *const *)a)->seq, y = (*(struct wb_op *const *)b)->seq;

    return x < y ? -1 : x > y;
}

/* Collect into ALL (room for N ops, *n counted) every queued or sending
 * op of WB: each entity's chain from its latest change back through the
 * ones it waits for. Lock held. */
static void collect_live(struct writeback *wb, struct wb_op **all, size_t cap, size_t *n)
{
    LOCK_HELD(&wb->mu);
    for (size_t b = 0; b < wb->n_ent_buckets; b++)
        for (struct wb_ent *e = wb->ents[b]; e; e = e->hnext)
            for (struct wb_op *op = e->last; op && *n < cap; op = op->dep)
                all[(*n)++] = op;
}

/* Append to RECS the records of OP: its change (with when it was sent),
 * and what became of it when that is known but not yet settled (applied:
 * the ETag the service gave). 0 or -ENOMEM. */
static int op_records(json_t *recs, const struct wb_op *op)
{
    json_t *seqs, *etags;

    if (json_array_append_new(recs, wb_op_record(op, 0)) < 0)
        return -ENOMEM;
    if (!op->done)
        return 0;
    seqs = json_pack("[I]", (json_int_t)op->seq);
    etags = json_pack("[s?]", op->done_etag);
    return json_array_append_new(
               recs, json_pack("{s:s, s:o?, s:o?}", "t", "done", "seqs", seqs, "etags", etags)) <
            0 ?
        -ENOMEM :
        0;
}

/* What is live, as journal records (a journal_rewrite builder; CTX the
 * writeback, its lock held): every queued or sending change in the order
 * of its seq (the order they were journalled: a change's predecessor comes
 * first, and the replay finds changes by seq), and every failed one with
 * its failure. */
static json_t *live_records(void *ctx)
{
    struct writeback *wb = ctx;
    size_t cap, n = 0;
    struct wb_op **all;
    json_t *recs;
    int ok;

    LOCK_HELD(&wb->mu);
    cap = wb->n_queued + wb->n_sending;
    all = calloc(cap + 1, sizeof(*all));
    recs = json_array();
    ok = recs && all;
    if (ok) {
        collect_live(wb, all, cap, &n);
        qsort(all, n, sizeof(*all), by_seq);
    }
    for (size_t i = 0; ok && i < n; i++)
        ok = op_records(recs, all[i]) == 0;
    free(all);
    for (struct wb_op *f = wb->failed_head; ok && f; f = f->next)
        ok = json_array_append_new(recs, wb_op_record(f, 0)) == 0 &&
            json_array_append_new(recs,
                                  json_pack("{s:s, s:I, s:i, s:s?}", "t", "fail", "seq",
                                            (json_int_t)f->seq, "errno", f->err, "why", f->why)) ==
                0;
    if (!ok) {
        json_decref(recs);
        return NULL;
    }
    return recs;
}

/* See writeback/writeback_i.h. */
int wb_compact(struct writeback *wb)
{
    LOCK_HELD(&wb->mu);
    return journal_rewrite(wb->j, live_records, wb);
}

/* See writeback/writeback_i.h. */
void wb_maybe_compact(struct writeback *wb)
{
    uint64_t live;

    LOCK_HELD(&wb->mu);
    live = wb->bytes + 512 * (uint64_t)wb->n_failed;
    if (journal_size(wb->j) > WB_COMPACT_MIN && journal_size(wb->j) > 2 * live)
        (void)wb_compact(wb);
}

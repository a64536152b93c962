/* writeback/replay.c - write-behind's journal read back at the mount: every record
 * replayed into the queue in the order it was written (changes queued
 * again, merged into the change they replaced or waiting for the one they
 * depend on; sent, applied, failed and dropped ones settled), and what was
 * damaged or refused counted (writeback_i.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "writeback/writeback_i.h"
#include "writeback/writeback.h"

/* The journal's live ops while it is read back, in seq order. */
struct replay {
    struct writeback *wb;
    struct journal *j; /* the journal read (wb->j is NULL meanwhile) */
    unsigned bad;      /* records skipped */
    struct wb_op **ops;
    uint64_t *seqs;
    size_t n, cap;
    uint64_t max_seq;
};

/* The live op of SEQ while replaying, or NULL (its slot in *slot). */
static struct wb_op *replay_find(struct replay *r, uint64_t seq, size_t *slot)
{
    size_t lo = 0, hi = r->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;

        if (r->seqs[mid] < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < r->n && r->seqs[lo] == seq) {
        if (slot)
            *slot = lo;
        return r->ops[lo];
    }
    return NULL;
}

/* Forget OP (seq SEQ) in the replay index. */
static void replay_forget(struct replay *r, uint64_t seq)
{
    size_t slot;

    if (replay_find(r, seq, &slot))
        r->ops[slot] = NULL;
}

static int parse_kind(const char *k, enum wb_kind *out)
{
    static const char *names[] = { "insert", "replace", "merge", "delete" };

    for (int i = 0; i < 4; i++)
        if (k && strcmp(k, names[i]) == 0) {
            *out = (enum wb_kind)i;
            return 0;
        }
    return -EINVAL;
}

/* An op from its journal record, or NULL (bad record, no memory). */
static struct wb_op *op_from_record(const json_t *rec, uint64_t *replaces, uint64_t *dep)
{
    const char *path, *table, *pk, *rk, *k, *im = NULL;
    json_int_t seq, g, rep, d;
    json_t *e = NULL;
    double sent = 0;
    struct wb_op *op;

    if (json_unpack((json_t *)rec, "{s:I, s:s, s:s, s:s, s:s, s:s, s?o, s:I, s:I, s:I, s?F}", "seq",
                    &seq, "path", &path, "table", &table, "pk", &pk, "rk", &rk, "k", &k, "e", &e,
                    "dep", &d, "g", &g, "replaces", &rep, "sent", &sent) < 0 ||
        !(op = calloc(1, sizeof(*op))))
        return NULL;
    im = json_string_value(json_object_get(rec, "if")); /* null for an insert */
    if (parse_kind(k, &op->kind) < 0 || (op->kind != WB_DELETE && !json_is_object(e)) ||
        !(op->path = strdup(path)) || !(op->table = strdup(table)) || !(op->pk = strdup(pk)) ||
        !(op->rk = strdup(rk)) || (im && !(op->if_match = strdup(im)))) {
        wb_op_free(op);
        return NULL;
    }
    op->seq = (uint64_t)seq;
    op->group = (uint64_t)g;
    op->entity = op->kind == WB_DELETE ? NULL : json_incref(e);
    op->sent_at.tv_sec = (time_t)sent;
    op->sent_at.tv_nsec = (long)((sent - (double)(time_t)sent) * 1e9);
    op->queued_at = wb_now();
    op->bytes = 512 + 2 * strlen(path) + (e ? json_dumpb(e, NULL, 0, JSON_COMPACT) : 0);
    *replaces = (uint64_t)rep;
    *dep = (uint64_t)d;
    return op;
}

/* Index OP in R. Returns 0 or -ENOMEM. */
static int replay_index(struct replay *r, struct wb_op *op)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 1024;
        struct wb_op **o = realloc(r->ops, cap * sizeof(*o));
        uint64_t *s;

        if (!o)
            return -ENOMEM;
        r->ops = o;
        if (!(s = realloc(r->seqs, cap * sizeof(*s))))
            return -ENOMEM;
        r->seqs = s;
        r->cap = cap;
    }
    if (r->n == 0 || op->seq > r->seqs[r->n - 1]) {
        r->ops[r->n] = op;
        r->seqs[r->n++] = op->seq;
    } else { /* out of order (a journal of another writer): in place */
        size_t at = r->n;

        while (at > 0 && r->seqs[at - 1] > op->seq)
            at--;
        memmove(&r->ops[at + 1], &r->ops[at], (r->n - at) * sizeof(*r->ops));
        memmove(&r->seqs[at + 1], &r->seqs[at], (r->n - at) * sizeof(*r->seqs));
        r->ops[at] = op;
        r->seqs[at] = op->seq;
        r->n++;
    }
    if (op->seq > r->max_seq)
        r->max_seq = op->seq;
    return 0;
}

/* An "op" record: queued again (merged into the op it replaces). */
static int replay_op(struct replay *r, const json_t *rec)
{
    struct writeback *wb = r->wb;
    uint64_t replaces = 0, dep = 0;
    struct wb_op *op = op_from_record(rec, &replaces, &dep), *old, *d;
    struct wb_ent *e;
    char *dir;

    if (!op) { /* whole, but not ours to read: nothing of it is sent */
        log_error(wb->lg, "journal %s: a change record cannot be read: skipped",
                  journal_path(wb->j ? wb->j : r->j));
        r->bad++;
        return 0;
    }
    if (replay_index(r, op) < 0 || !(e = wb_ent_get(wb, op->path, 1))) {
        wb_op_free(op);
        return -ENOMEM;
    }
    if (replaces && (old = replay_find(r, replaces, NULL)) && old->state == WS_QUEUED) {
        op->part = old->part;
        replay_forget(r, replaces);
        wb_op_swap(wb, old, op);
        return 0;
    }
    if (dep && (d = replay_find(r, dep, NULL)) && d->state == WS_QUEUED) {
        op->dep = d;
        d->succ = op;
    } else if (op->if_match &&
               strncmp(op->if_match, WB_TOKEN_PREFIX, strlen(WB_TOKEN_PREFIX)) == 0) {
        char *real = NULL;

        /* unresolved, the token stays: the service refuses it, and the
         * change is reported failed rather than sent unguarded */
        if (wb_resolve(wb, op->if_match, &real) == 1) {
            free(op->if_match);
            op->if_match = real;
        }
    }
    dir = strndup(op->path, (size_t)(strrchr(op->path, '/') - op->path));
    op->part = dir ? wb_part_get(wb, dir, 1) : NULL;
    free(dir);
    if (!op->part ||
        (!op->part->table &&
         (!(op->part->table = strdup(op->table)) || !(op->part->pk = strdup(op->pk))))) {
        replay_forget(r, op->seq);
        wb_op_free(op);
        return -ENOMEM;
    }
    wb_part_push_back(op);
    wb->n_queued++;
    wb->bytes += op->bytes;
    e->last = op;
    return 0;
}

/* Take OP out of the queue (replaying). */
static void replay_unqueue(struct writeback *wb, struct wb_op *op)
{
    struct wb_ent *e = wb_ent_get(wb, op->path, 0);

    wb_part_unlink(op);
    wb->n_queued--;
    wb->bytes -= op->bytes;
    if (op->succ)
        op->succ->dep = NULL;
    if (op->dep)
        op->dep->succ = NULL;
    if (e && e->last == op)
        e->last = op->dep;
}

/* Replay one state record of type T for OP (seq SEQ; ETAG from a "done"). */
static void replay_one(struct replay *r, const json_t *rec, const char *t, struct wb_op *op,
                       const char *etag)
{
    struct writeback *wb = r->wb;
    struct wb_ent *e;
    char tok[64];

    if (strcmp(t, "fail") == 0) {
        if (op->state != WS_QUEUED)
            return;
        replay_unqueue(wb, op);
        e = wb_ent_get(wb, op->path, 1);
        if (e && e->failed) /* replaced by this one: freed by wb_failed_keep */
            replay_forget(r, e->failed->seq);
        wb_failed_keep(wb, op, -(int)json_integer_value(json_object_get(rec, "errno")),
                       json_string_value(json_object_get(rec, "why")));
        return;
    }
    if (op->state == WS_QUEUED) {
        if (strcmp(t, "done") == 0 && op->succ) {
            free(op->succ->if_match);
            op->succ->if_match = op->kind == WB_DELETE ? NULL : strdup(etag ? etag : "*");
        }
        replay_unqueue(wb, op);
    } else {
        wb_failed_unlink(wb, op);
    }
    if (strcmp(t, "done") == 0) {
        wb_op_token(op, tok);
        wb_done_put(wb, tok, etag);
    }
    replay_forget(r, op->seq);
    e = wb_ent_get(wb, op->path, 0);
    wb_op_free(op);
    if (e)
        wb_ent_release(wb, e);
}

/* A "done", "sent", "fail" or "drop" record. */
static int replay_state(struct replay *r, const json_t *rec, const char *t)
{
    json_t *seqs = json_object_get(rec, "seqs"), *etags = json_object_get(rec, "etags");
    json_t *one = json_object_get(rec, "seq");
    size_t n = seqs ? json_array_size(seqs) : 1;
    double at = json_number_value(json_object_get(rec, "at"));

    for (size_t i = 0; i < n; i++) {
        uint64_t seq = (uint64_t)json_integer_value(seqs ? json_array_get(seqs, i) : one);
        struct wb_op *op = replay_find(r, seq, NULL);

        if (!op)
            continue;
        if (strcmp(t, "sent") == 0 && !op->sent_at.tv_sec) {
            op->sent_at.tv_sec = (time_t)at;
            op->sent_at.tv_nsec = (long)((at - (double)(time_t)at) * 1e9);
        } else if (strcmp(t, "sent") != 0) {
            replay_one(r, rec, t, op, json_string_value(json_array_get(etags, i)));
        }
    }
    return 0;
}

/* One record of the journal (a journal_read callback). */
static int replay_record(void *ctx, const json_t *rec)
{
    const char *t = json_string_value(json_object_get(rec, "t"));

    if (!t)
        return 0;
    if (strcmp(t, "op") == 0)
        return replay_op(ctx, rec);
    if (strcmp(t, "done") == 0 || strcmp(t, "sent") == 0 || strcmp(t, "fail") == 0 ||
        strcmp(t, "drop") == 0)
        return replay_state(ctx, rec, t);
    return 0;
}

/* See writeback/writeback_i.h. */
int wb_replay(struct writeback *wb)
{
    struct replay r = { wb, wb->j, 0, NULL, NULL, 0, 0, 0 };
    struct journal *j = wb->j;
    struct journal_damage d = { 0 };
    unsigned bad;
    int rc;

    wb->j = NULL; /* records of the replay itself are not appended */
    rc = journal_read(j, replay_record, &r, &d);
    wb->j = j;
    free(r.ops);
    free(r.seqs);
    if (rc < 0)
        return rc;
    bad = d.damaged + d.foreign + r.bad;
    wb->n_damaged = bad;
    wb->next_seq = (uint64_t)time(NULL) * 1000;
    if (r.max_seq >= wb->next_seq)
        wb->next_seq = r.max_seq + 1;
    if (wb->n_queued || wb->n_failed || bad || d.torn)
        log_info(wb->lg,
                 "journal %s: %zu change%s to send, %zu failed; %u damaged or refused "
                 "stretch%s skipped (the lines above say which), %u cut short",
                 journal_path(j), wb->n_queued, wb->n_queued == 1 ? "" : "s", wb->n_failed, bad,
                 bad == 1 ? "" : "es", d.torn);
    return 0;
}

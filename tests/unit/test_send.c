/* test_send.c - unit tests for write-behind's batches (writeback/send.c),
 * without a network: how wb_take_batch cuts a partition's queue (at most
 * 100 operations and the service's bytes less WB_BATCH_HEADROOM, one partition, a rename's halves
 * together, the order kept, a waiting change or a batch sent before
 * starting a batch of its own), when a partition is ready, and what a
 * failure for good does to a batch (wb_batch_drop_failed, wb_split_at):
 * the failed change kept and reported, the others kept in order to be
 * sent again. The intake's merge rules: test_queue.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "writeback/writeback.h"
#include "writeback/writeback_i.h"
#include "tap.h"
#include "wb_util.h"

#define R1 "W/\"datetime'2026-01-01T00%3A00%3A00.1Z'\""
#define SMALL "{\"A\":\"x\"}"

/* The path of row I of partition PART in BUF. */
static const char *row(char buf[48], const char *part, int i)
{
    snprintf(buf, 48, "/t/%s/r%04d", part, i);
    return buf;
}

/* Queue inserts of rows FROM..FROM+N-1 of PART with JSON. How many were. */
static int queue_rows(struct wbt *t, const char *part, int from, int n, const char *json)
{
    char p[48];
    int done = 0;

    for (int i = from; i < from + n; i++)
        done += wbt_put(t, row(p, part, i), WB_INSERT, json, NULL, NULL) == 0;
    return done;
}

/* Are OPS (N) rows FROM, FROM+1, ... of PART, all of one partition, all
 * being sent? */
static int rows_are(struct wb_op **ops, size_t n, const char *part, int from)
{
    char rk[16];

    for (size_t i = 0; i < n; i++) {
        snprintf(rk, sizeof(rk), "r%04d", from + (int)i);
        if (ops[i]->state != WS_SENDING || ops[i]->part != ops[0]->part ||
            strcmp(ops[i]->pk, part) != 0 || strcmp(ops[i]->rk, rk) != 0)
            return 0;
    }
    return 1;
}

/* The row keys of OPS (N), space-separated, in BUF. */
static const char *keys_of(char *buf, size_t len, struct wb_op **ops, size_t n)
{
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? " " : "", ops[i]->rk);
    return buf;
}

/* 250 small changes of one partition: batches of 100, 100 and 50, in the
 * order they were made; while a batch is out the partition gives no
 * other. It is ready without force while it holds 100 changes; with fewer,
 * only when its oldest has waited the delay (3600 s: wait_until says
 * when), or forced. */
static void test_hundred(void)
{
    struct wb_op *ops[WBT_CAP], *more[WBT_CAP];
    struct timespec until, now;
    struct wbt t;
    size_t n;

    wbt_start(&t);
    is_int(queue_rows(&t, "p", 0, 200, SMALL), 200, "200 changes queued");
    is_int(n = wbt_take(&t, 0, ops), 100, "first batch: 100 (ready without force)");
    ok(rows_are(ops, n, "p", 0), "rows 0..99 in order");
    is_int(wbt_take(&t, 1, more), 0, "no second batch while the first is out");
    ok(t.wb->n_sending == 100 && t.wb->n_queued == 100, "100 sending, 100 queued");
    wbt_applied(&t, ops, n, "W/\"e\"");
    is_int(n = wbt_take(&t, 0, ops), 100, "second batch: exactly 100 queued, ready");
    ok(rows_are(ops, n, "p", 100), "rows 100..199 in order");
    wbt_applied(&t, ops, n, "W/\"e\"");
    is_int(queue_rows(&t, "p", 200, 50, SMALL), 50, "50 more queued");
    pthread_mutex_lock(&t.wb->mu);
    n = wb_take_batch(t.wb, 0, ops, &until);
    pthread_mutex_unlock(&t.wb->mu);
    now = wb_now();
    is_int(n, 0, "50: not ready before the delay");
    ok(until.tv_sec >= now.tv_sec + 3590 && until.tv_sec <= now.tv_sec + 3600,
       "wait_until: when the oldest's delay is over");
    is_int(n = wbt_take(&t, 1, ops), 50, "forced: the 50");
    ok(rows_are(ops, n, "p", 200), "rows 200..249 in order");
    wbt_applied(&t, ops, n, "W/\"e\"");
    is_int(t.n_applied, 250, "250 applied hooks");
    ok(t.wb->n_queued == 0 && t.wb->n_sending == 0 && t.wb->bytes == 0, "nothing left");
    is_int(wbt_take(&t, 1, ops), 0, "nothing to take");
    is_int(wbt_close(&t), 0, "wb_close: nothing left");
    wbt_finish(&t);
}

/* An entity of PATH whose change weighs exactly BYTES in the queue (512,
 * twice the path, the compact JSON), as JSON text (malloc'd). */
static char *weighing(const char *path, size_t bytes)
{
    size_t len = bytes - 512 - 2 * strlen(path) - strlen("{\"D\":\"\"}");
    char *s = malloc(len + 9);

    if (!s) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    memcpy(s, "{\"D\":\"", 6);
    memset(s + 6, 'x', len);
    memcpy(s + 6 + len, "\"}", 3);
    return s;
}

/* Queue in PART one insert for each weight of W (N; 0: a small one), take
 * every batch and return their sizes, space-separated, in OUT (after a
 * complaint when a change could not be queued with its weight). */
static void cut_weights(struct wbt *t, const char *part, const size_t *w, int n, char *out,
                        size_t len)
{
    struct wb_op *ops[WBT_CAP];
    char p[48], *json;
    size_t got;
    int bad = 0;

    for (int i = 0; i < n; i++) {
        row(p, part, i);
        json = w[i] ? weighing(p, w[i]) : strdup(SMALL);
        bad |= wbt_put(t, p, WB_INSERT, json, NULL, NULL) < 0 || (w[i] && wbt_bytes(t, p) != w[i]);
        free(json);
    }
    snprintf(out, len, "%s", bad ? "not queued as asked:" : "");
    while ((got = wbt_take(t, 1, ops)) > 0) {
        snprintf(out + strlen(out), len - strlen(out), "%s%zu", out[0] ? " " : "", got);
        wbt_applied(t, ops, got, "W/\"e\"");
    }
}

/* The byte bound: four changes of a quarter of it fill a batch exactly;
 * one byte more and the fourth goes in the next; a change bigger than the
 * bound goes alone. */
static void test_bytes(void)
{
    const size_t room = table_batch_room(NULL, WB_BATCH_HEADROOM);
    const size_t q = room / 4;
    const size_t exact[] = { q, q, q, q, 0 }, over[] = { q, q, q, q + 1 };
    const size_t big[] = { room + 1, 0, 0 };
    char sizes[64], p[48];
    char *json = weighing(row(p, "w", 0), q);
    struct wbt t;

    wbt_start(&t);
    is_int(wbt_put(&t, p, WB_INSERT, json, NULL, NULL), 0, "a change of a quarter");
    is_int(wbt_bytes(&t, p), q, "weighs a quarter of the room (%zu)", q);
    free(json);
    cut_weights(&t, "w", NULL, 0, sizes, sizeof(sizes));
    is_str(sizes, "1", "taken alone");
    cut_weights(&t, "b1", exact, 5, sizes, sizeof(sizes));
    is_str(sizes, "4 1", "4 quarters and a small one: 4, then 1");
    cut_weights(&t, "b2", over, 4, sizes, sizeof(sizes));
    is_str(sizes, "3 1", "3 quarters and a quarter and a byte: 3, then 1");
    cut_weights(&t, "b3", big, 3, sizes, sizeof(sizes));
    is_str(sizes, "1 2", "one over the bound alone, then the small ones");
    is_int(wbt_close(&t), 0, "wb_close: nothing left");
    wbt_finish(&t);
}

/* What the batches of partitions "pa".."pd" were: sizes, next row. */
struct tally {
    int next[4], batches;
    char sizes[4][32];
};

/* Check the batch OPS (N) holds the next rows of one partition in order,
 * count it in TL, and settle it applied. */
static void tally_batch(struct wbt *t, struct tally *tl, struct wb_op **ops, size_t n)
{
    int k = ops[0]->pk[1] - 'a';
    char *s;

    tl->batches++;
    if (k < 0 || k > 3) {
        ok(0, "batch %d: of an unknown partition %s", tl->batches, ops[0]->pk);
        return;
    }
    ok(rows_are(ops, n, ops[0]->pk, tl->next[k]), "batch %d: %zu of partition %s, in order",
       tl->batches, n, ops[0]->pk);
    tl->next[k] += (int)n;
    s = tl->sizes[k];
    snprintf(s + strlen(s), sizeof(tl->sizes[k]) - strlen(s), "%s%zu", s[0] ? " " : "", n);
    wbt_applied(t, ops, n, "W/\"e\"");
}

/* Changes of four partitions made interleaved: every batch holds one
 * partition's changes in the order they were made; a partition with a
 * batch out lets another go; each comes out whole (30 each; 120: 100,
 * then 20). */
static void test_partitions(void)
{
    const char *parts[4] = { "pa", "pb", "pc", "pd" };
    struct wb_op *ops[WBT_CAP], *other[WBT_CAP];
    struct tally tl = { { 0, 0, 0, 0 }, 0, { "", "", "", "" } };
    int queued = 0;
    struct wbt t;
    char p[48];
    size_t n, m;

    wbt_start(&t);
    for (int i = 0; i < 120; i++)
        for (int k = 0; k < 4; k++)
            if (k == 3 || i < 30)
                queued += wbt_put(&t, row(p, parts[k], i), WB_INSERT, SMALL, NULL, NULL) == 0;
    is_int(queued, 210, "210 changes in four partitions");
    n = wbt_take(&t, 1, ops);
    m = wbt_take(&t, 1, other);
    ok(n > 0 && m > 0 && ops[0]->part != other[0]->part,
       "a second batch while one is out: another partition's");
    if (n > 0)
        tally_batch(&t, &tl, ops, n);
    if (m > 0)
        tally_batch(&t, &tl, other, m);
    while ((n = wbt_take(&t, 1, ops)) > 0)
        tally_batch(&t, &tl, ops, n);
    for (int k = 0; k < 3; k++)
        is_str(tl.sizes[k], "30", "partition %s: one batch of 30", parts[k]);
    is_str(tl.sizes[3], "100 20", "partition pd: 100, then 20");
    is_int(tl.batches, 5, "five batches");
    is_int(t.n_applied, 210, "every change applied");
    is_int(wbt_close(&t), 0, "wb_close: nothing left");
    wbt_finish(&t);
}

/* A rename's halves never straddle two batches: after 99 changes the pair
 * goes in the next batch, first, with what follows it; after 98 it fills
 * the batch to 100. */
static void test_rename_kept(void)
{
    struct wb_op *ops[WBT_CAP];
    char *tokens[2] = { NULL, NULL };
    struct wbt t;
    size_t n;

    wbt_start(&t);
    queue_rows(&t, "p", 0, 99, SMALL);
    is_int(wbt_rename(&t, "/t/p/r0900", SMALL, NULL, "/t/p/r0901", R1, tokens), 0,
           "a rename after 99 changes");
    free(tokens[0]);
    queue_rows(&t, "p", 99, 5, SMALL);
    is_int(n = wbt_take(&t, 1, ops), 99, "first batch: the 99 before it");
    ok(rows_are(ops, n, "p", 0), "rows 0..98");
    wbt_applied(&t, ops, n, "W/\"e\"");
    is_int(n = wbt_take(&t, 1, ops), 7, "second batch: the rename and the 5 after it");
    ok(n == 7 && ops[0]->group && ops[0]->group == ops[1]->group && !strcmp(ops[0]->rk, "r0900") &&
           !strcmp(ops[1]->rk, "r0901"),
       "the rename first, whole");
    ok(n == 7 && rows_are(ops + 2, 5, "p", 99), "then rows 99..103");
    wbt_applied(&t, ops, n, "W/\"e\"");
    queue_rows(&t, "q", 0, 98, SMALL);
    is_int(wbt_rename(&t, "/t/q/r0900", SMALL, NULL, "/t/q/r0901", R1, tokens), 0,
           "a rename after 98 changes");
    free(tokens[0]);
    queue_rows(&t, "q", 98, 5, SMALL);
    is_int(n = wbt_take(&t, 1, ops), 100, "first batch: the 98 and the rename");
    ok(n == 100 && ops[98]->group && ops[98]->group == ops[99]->group, "the rename last, whole");
    wbt_applied(&t, ops, n, "W/\"e\"");
    is_int(n = wbt_take(&t, 1, ops), 5, "second batch: the 5 after it");
    ok(rows_are(ops, n, "q", 98), "rows 98..102");
    wbt_applied(&t, ops, n, "W/\"e\"");
    is_int(wbt_close(&t), 0, "wb_close: nothing left");
    wbt_finish(&t);
}

/* A change waiting for an earlier change of its entity (a rename's half:
 * never merged into) is not cut into that change's batch, and nothing of
 * the partition goes while that batch is out; once it is applied, the
 * waiting change goes, guarded by the ETag the service gave. */
static void test_waiting_own_batch(void)
{
    struct wb_op *ops[WBT_CAP], *x;
    char *tokens[2] = { NULL, NULL };
    struct wbt t;
    size_t n;

    wbt_start(&t);
    is_int(wbt_rename(&t, "/t/p/r0000", SMALL, NULL, "/t/p/r0001", R1, tokens), 0, "rename");
    is_int(wbt_put(&t, "/t/p/r0000", WB_REPLACE, SMALL, tokens[0], NULL), 0,
           "a replace of the new name");
    x = wbt_last(&t, "/t/p/r0000");
    queue_rows(&t, "p", 2, 1, SMALL);
    is_int(n = wbt_take(&t, 1, ops), 2, "the rename alone: the replace waits for it");
    is_int(wbt_take(&t, 1, ops + 2), 0, "nothing while the rename is out");
    wbt_applied(&t, ops, n, "W/\"e0\"");
    ok(x && !x->dep && x->if_match && !strcmp(x->if_match, "W/\"e0\""),
       "applied: the replace is guarded by the ETag given");
    is_int(n = wbt_take(&t, 1, ops), 2, "then the replace and the change after it");
    ok(n == 2 && ops[0] == x && !strcmp(ops[1]->rk, "r0002"), "in order");
    wbt_applied(&t, ops, n, "W/\"e\"");
    is_int(wbt_close(&t), 0, "wb_close: nothing left");
    free(tokens[0]);
    wbt_finish(&t);
}

/* A batch handed to the network and put back (no answer) goes again as it
 * was: the changes queued since go in the next batch, and a change of one
 * of its entities waits for it (not merged: the service may hold it). */
static void test_resend_own_batch(void)
{
    const struct timespec at = { 1700000000, 5 };
    struct wb_op *ops[WBT_CAP], *x;
    char tok[64];
    struct wbt t;
    size_t n;

    wbt_start(&t);
    queue_rows(&t, "p", 0, 5, SMALL);
    is_int(n = wbt_take(&t, 1, ops), 5, "five taken");
    pthread_mutex_lock(&t.wb->mu);
    for (size_t i = 0; i < n; i++)
        ops[i]->sent_at = at;
    pthread_mutex_unlock(&t.wb->mu);
    wbt_put_back(&t, ops, n);
    snprintf(tok, sizeof(tok), "%s", wbt_token(ops[0]));
    queue_rows(&t, "p", 5, 3, SMALL);
    is_int(wbt_put(&t, "/t/p/r0000", WB_MERGE, "{\"B\":\"y\"}", tok, NULL), 0,
           "a merge of a change sent before");
    x = wbt_last(&t, "/t/p/r0000");
    ok(x && x != ops[0] && x->dep == ops[0] && x->kind == WB_MERGE, "waits for it (not merged)");
    is_int(n = wbt_take(&t, 1, ops), 5, "the five sent before, again, alone");
    ok(rows_are(ops, n, "p", 0), "rows 0..4");
    ok(n == 5 && ops[0]->sent_at.tv_sec == at.tv_sec && ops[4]->sent_at.tv_nsec == at.tv_nsec,
       "still marked sent at the first send");
    wbt_applied(&t, ops, n, "W/\"e\"");
    is_int(n = wbt_take(&t, 1, ops), 4, "then the three queued since and the merge");
    ok(n == 4 && rows_are(ops, 3, "p", 5) && ops[3] == x, "in order");
    wbt_applied(&t, ops, n, "W/\"e\"");
    is_int(wbt_close(&t), 0, "wb_close: nothing left");
    wbt_finish(&t);
}

/* wb_split_at of a batch whose groups are GROUPS, one character an op:
 * '.' no group, a letter a rename's group. */
static size_t split_of(const char *groups)
{
    struct wb_op op[WBT_CAP], *ops[WBT_CAP];
    size_t n = strlen(groups);

    memset(op, 0, sizeof(op));
    for (size_t i = 0; i < n; i++) {
        op[i].group = groups[i] == '.' ? 0 : (uint64_t)(groups[i] - 'a' + 1);
        ops[i] = &op[i];
    }
    return wb_split_at(ops, n);
}

/* Where a batch that failed with no operation named is split: the middle,
 * moved past a rename it would cut, else before it; a rename alone is
 * never cut (sent apart, its delete could go through where its write did
 * not). */
static void test_split_at(void)
{
    char hundred[101];

    is_int(split_of("...."), 2, "4 single changes: 2 + 2");
    is_int(split_of("....."), 2, "5: 2 + 3");
    is_int(split_of(".aa."), 3, "a rename across the middle: after it");
    is_int(split_of("..aa"), 2, "a rename after the middle: the middle");
    is_int(split_of("aabb"), 2, "two renames: between them");
    is_int(split_of("..aa.."), 4, "6 with a rename across the middle: after it");
    is_int(split_of("...aa."), 3, "6 with a rename starting at the middle: the middle");
    is_int(split_of("....aa"), 3, "single changes together are no rename");
    is_int(split_of(".aa"), 1, "3, a rename at the end: before it");
    is_int(split_of("aa"), 0, "a rename alone: not cut (0: failed as a whole)");
    memset(hundred, '.', 100);
    hundred[100] = '\0';
    hundred[49] = hundred[50] = 'c';
    is_int(split_of(hundred), 51, "100 with a rename at 49..50: after it");
}

/* A failed change's record on the failed list, by PATH, or NULL. */
static struct wb_op *failed_of(struct wbt *t, const char *path)
{
    for (struct wb_op *f = t->wb->failed_head; f; f = f->next)
        if (strcmp(f->path, path) == 0)
            return f;
    return NULL;
}

/* The field NAME of the root's pending report, as an integer (-1: none). */
static long long pending_int(struct wbt *t, const char *name)
{
    char *s = wb_pending_json(t->wb, 65536);
    json_t *j = s ? json_loads(s, 0, NULL) : NULL;
    long long v = json_is_integer(json_object_get(j, name)) ?
        json_integer_value(json_object_get(j, name)) :
        -1;

    json_decref(j);
    free(s);
    return v;
}

/* In the batch OPS (N) [r0 r1 rename(r10 <- r11) r2 r3], r0001 fails for
 * good: it leaves the batch, kept failed (list, errno, why, hook, the
 * pending report, fsync's EIO, wb_lookup showing nothing queued); the
 * others stay in the batch in their order, still out, to be sent again.
 * Returns the new count. */
static size_t drop_one(struct wbt *t, struct wb_op **ops, size_t n)
{
    char keys[128];
    struct wb_op *f;
    json_t *e = NULL;

    n = wb_batch_drop_failed(t->wb, ops, n, 1, -EEXIST, "The specified entity already exists.");
    is_int(n, 5, "r0001 failed: five left");
    is_str(keys_of(keys, sizeof(keys), ops, n), "r0000 r0010 r0011 r0002 r0003",
           "the others in their order");
    ok(n == 5 && ops[0]->state == WS_SENDING && ops[4]->state == WS_SENDING, "still being sent");
    ok(t->wb->n_sending == 5 && t->wb->n_failed == 1 && t->wb->n_queued == 0,
       "5 sending, 1 failed");
    ok((f = failed_of(t, "/t/f/r0001")) && f->state == WS_FAILED && f->err == EEXIST && f->why &&
           !strcmp(f->why, "The specified entity already exists.") && f->kind == WB_INSERT,
       "kept failed with its errno and why");
    ok(t->n_failed == 1 && !strcmp(t->failed_path, "/t/f/r0001"), "the failed hook heard it");
    is_int(wb_lookup(t->wb, "/t/f/r0001", &e), 0, "wb_lookup: nothing queued of it");
    is_int(wb_flush(t->wb, "/t/f/r0001", 0), -EIO, "a flush of it: EIO");
    is_int(wb_flush(t->wb, "/t/f/r0000", 0), 0, "a flush of another: 0");
    is_int(pending_int(t, "failed"), 1, "the pending report counts it");
    {
        char *pj = wb_pending_json(t->wb, 0); /* a limit of 0: counts only */
        struct wb_counts c;

        ok(pj && strstr(pj, "\"failed\":1") && strstr(pj, "\"failures\":[]"),
           "a limit of 0: the count, no failure listed (nor leaked)");
        free(pj);
        wb_counts(t->wb, &c); /* the metrics' and systemd status's call */
        ok(c.queued == 0 && c.sending == 5 && c.failed == 1 && c.damaged == 0,
           "wb_counts: 0 queued, 5 sending, 1 failed, 0 damaged, as the report");
    }
    is_int(wbt_take(t, 1, ops + n), 0, "the partition is still out: the others go again");
    return n;
}

/* Then the rename's delete fails: both halves leave the batch, the other
 * half saying why; then the rest fail one by one, emptying it. */
static void drop_rename_and_rest(struct wbt *t, struct wb_op **ops, size_t n)
{
    char keys[128];
    struct wb_op *f;

    n = wb_batch_drop_failed(t->wb, ops, n, 2, -ESTALE, "precondition");
    is_str(keys_of(keys, sizeof(keys), ops, n), "r0000 r0002 r0003",
           "the rename's delete failed: both halves leave");
    ok((f = failed_of(t, "/t/f/r0010")) && f->err == ESTALE && f->why &&
           !strcmp(f->why, "the other half of its rename failed"),
       "the other half: failed, why");
    ok((f = failed_of(t, "/t/f/r0011")) && f->why && !strcmp(f->why, "precondition"),
       "the half named: its own why");
    ok(t->wb->n_failed == 3 && t->n_failed == 3 && t->wb->n_sending == 3, "3 failed, 3 sending");
    ok(n == 3 && t->wb->bytes == ops[0]->bytes + ops[1]->bytes + ops[2]->bytes,
       "the queue weighs what is still out");
    while (n > 0)
        n = wb_batch_drop_failed(t->wb, ops, n, 0, -EACCES, NULL);
    ok(t->wb->n_failed == 6 && t->n_failed == 6 && t->wb->n_sending == 0 && t->wb->bytes == 0,
       "all failed one by one");
}

/* A batch of six failing change by change (above); then a new change of a
 * failed entity replaces its failure, and the failures outlive a close and
 * an open. */
static void test_drop_failed(void)
{
    struct wb_op *ops[WBT_CAP];
    char *tokens[2] = { NULL, NULL };
    struct wb_part *part;
    json_t *e = NULL;
    struct wbt t;
    size_t n;

    wbt_start(&t);
    queue_rows(&t, "f", 0, 2, SMALL);
    wbt_rename(&t, "/t/f/r0010", SMALL, NULL, "/t/f/r0011", R1, tokens);
    free(tokens[0]);
    queue_rows(&t, "f", 2, 2, SMALL);
    is_int(n = wbt_take(&t, 1, ops), 6, "a batch of six");
    part = n ? ops[0]->part : NULL;
    if (n == 6)
        drop_rename_and_rest(&t, ops, drop_one(&t, ops, n));
    pthread_mutex_lock(&t.wb->mu);
    if (part)
        part->sending = 0; /* as wb_send_batch does when every op failed */
    pthread_mutex_unlock(&t.wb->mu);
    is_int(wbt_put(&t, "/t/f/r0001", WB_REPLACE, SMALL, R1, NULL), 0, "a new change of r0001");
    ok(!failed_of(&t, "/t/f/r0001") && t.wb->n_failed == 5, "replaces its failure");
    is_int(wb_lookup(t.wb, "/t/f/r0001", &e), 1, "wb_lookup: the new change");
    json_decref(e);
    is_int(wbt_close(&t), 6, "wb_close: 5 failed and 1 queued left");
    is_int(wbt_open(&t), 0, "open again");
    ok(t.wb && pending_int(&t, "failed") == 5 && pending_int(&t, "queued") == 1,
       "the failures and the queued change are back");
    wbt_finish(&t);
}

/* A failed change takes its entity's later changes with it (made on top
 * of it): they leave the queue and the latest stands for them all, failed,
 * with one hook call; the entity's other changes stay queued. */
static void test_drop_chain(void)
{
    struct wb_op *ops[WBT_CAP], *f;
    char *tok = NULL, *tok2 = NULL;
    json_t *e = NULL;
    struct wbt t;
    size_t n;

    wbt_start(&t);
    is_int(wbt_put(&t, "/t/c/r0000", WB_INSERT, SMALL, NULL, &tok), 0, "insert");
    is_int(n = wbt_take(&t, 1, ops), 1, "taken to be sent");
    is_int(wbt_put(&t, "/t/c/r0000", WB_MERGE, "{\"B\":\"y\"}", tok, &tok2), 0,
           "a merge waiting for it");
    free(tok);
    is_int(wbt_put(&t, "/t/c/r0000", WB_REPLACE, "{\"D\":\"z\"}", tok2, &tok), 0,
           "a replace merged into the merge");
    queue_rows(&t, "c", 1, 1, SMALL);
    is_int(t.wb->n_queued, 2, "two queued");
    n = wb_batch_drop_failed(t.wb, ops, n, 0, -EEXIST, "exists");
    is_int(n, 0, "the batch is empty");
    ok(t.wb->n_queued == 1 && t.wb->n_sending == 0 && t.wb->n_failed == 1,
       "its later change left the queue: 1 queued, 1 failed");
    ok((f = failed_of(&t, "/t/c/r0000")) && f->kind == WB_REPLACE &&
           wbt_json_is(f->entity, "{\"D\":\"z\"}") && f->err == EEXIST,
       "the latest change stands failed for both");
    is_int(t.n_failed, 1, "one failed hook");
    is_int(wb_lookup(t.wb, "/t/c/r0000", &e), 0, "wb_lookup: nothing queued of it");
    ok(wbt_bytes(&t, "/t/c/r0001") && t.wb->bytes == wbt_bytes(&t, "/t/c/r0001"),
       "the other entity's change stays, alone in the queue's weight");
    is_int(wbt_close(&t), 2, "wb_close: 1 failed, 1 queued");
    free(tok);
    free(tok2);
    wbt_finish(&t);
}

int main(void)
{
    test_hundred();
    test_bytes();
    test_partitions();
    test_rename_kept();
    test_waiting_own_batch();
    test_resend_own_batch();
    test_split_at();
    test_drop_failed();
    test_drop_chain();
    return done_testing();
}

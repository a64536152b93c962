/* test_queue.c - unit tests for write-behind's intake (writeback/queue.c),
 * without a network: what two changes of one entity become (the merge
 * rules of every pair of kinds, the refusals and their errno, the If-Match
 * kept from the first change), what wb_lookup shows then, the first
 * change's guard, tokens, type annotations in a merge, a change made while
 * the entity's change is out (waiting for it, not merged), an insert
 * undone, and a rename's two halves submitted together. Batches and
 * failures: test_send.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "writeback/writeback.h"
#include "writeback/writeback_i.h"
#include "tap.h"
#include "wb_util.h"

/* A real ETag (what the entity had when it was read). */
#define R1 "W/\"datetime'2026-01-01T00%3A00%3A00.1Z'\""
/* The first change's entity, the second's, and the second merged onto the
 * first (B's type annotation goes with the old value). */
#define FIRST "{\"A\":\"1\",\"B@odata.type\":\"Edm.Int64\",\"B\":\"7\"}"
#define SECOND "{\"B\":\"8\",\"C\":\"c\"}"
#define MERGED "{\"A\":\"1\",\"B\":\"8\",\"C\":\"c\"}"

/* Two changes of one entity, the second made against the first's token. */
struct pair {
    enum wb_kind first, second;
    int rc;               /* wb_submit's answer to the second */
    enum wb_kind kind;    /* the queued change then */
    const char *content;  /* its entity (NULL: none) */
    const char *if_match; /* its If-Match: the first change's */
    int lookup;           /* wb_lookup: 1, -ENOENT, 0 (nothing queued) */
};

static const struct pair pairs[] = {
    { WB_INSERT, WB_INSERT, -EEXIST, WB_INSERT, FIRST, NULL, 1 },
    { WB_INSERT, WB_REPLACE, 0, WB_INSERT, SECOND, NULL, 1 },
    { WB_INSERT, WB_MERGE, 0, WB_INSERT, MERGED, NULL, 1 },
    { WB_INSERT, WB_DELETE, 0, WB_INSERT, NULL, NULL, 0 },
    { WB_REPLACE, WB_INSERT, -EEXIST, WB_REPLACE, FIRST, R1, 1 },
    { WB_REPLACE, WB_REPLACE, 0, WB_REPLACE, SECOND, R1, 1 },
    { WB_REPLACE, WB_MERGE, 0, WB_REPLACE, MERGED, R1, 1 },
    { WB_REPLACE, WB_DELETE, 0, WB_DELETE, NULL, R1, -ENOENT },
    { WB_MERGE, WB_INSERT, -EEXIST, WB_MERGE, FIRST, R1, 1 },
    { WB_MERGE, WB_REPLACE, 0, WB_REPLACE, SECOND, R1, 1 },
    { WB_MERGE, WB_MERGE, 0, WB_MERGE, MERGED, R1, 1 },
    { WB_MERGE, WB_DELETE, 0, WB_DELETE, NULL, R1, -ENOENT },
    { WB_DELETE, WB_INSERT, 0, WB_REPLACE, SECOND, R1, 1 },
    { WB_DELETE, WB_REPLACE, -ENOENT, WB_DELETE, NULL, R1, -ENOENT },
    { WB_DELETE, WB_MERGE, -ENOENT, WB_DELETE, NULL, R1, -ENOENT },
    { WB_DELETE, WB_DELETE, -ENOENT, WB_DELETE, NULL, R1, -ENOENT },
};
#define N_PAIRS (sizeof(pairs) / sizeof(pairs[0]))

/* Does wb_lookup's entity E show OP: its keys, its token as ETag, a
 * Timestamp, and otherwise exactly OP's entity? */
static int lookup_shows(json_t *e, const struct wb_op *op)
{
    const char *ts = json_string_value(json_object_get(e, "Timestamp"));
    const char *pk = json_string_value(json_object_get(e, "PartitionKey"));
    const char *rk = json_string_value(json_object_get(e, "RowKey"));
    const char *etag = json_string_value(json_object_get(e, "odata.etag"));
    json_t *rest = json_deep_copy(e);
    int same = rest && op->entity && ts && strlen(ts) == 28 && ts[27] == 'Z' && pk &&
        strcmp(pk, op->pk) == 0 && rk && strcmp(rk, op->rk) == 0 && etag &&
        strcmp(etag, wbt_token(op)) == 0;

    if (rest) {
        json_object_del(rest, "PartitionKey");
        json_object_del(rest, "RowKey");
        json_object_del(rest, "Timestamp");
        json_object_del(rest, "odata.etag");
        same = same && json_equal(rest, op->entity);
    }
    json_decref(rest);
    return same;
}

/* What pair P (at PATH) left queued: kind, entity, If-Match; wb_lookup. */
static void check_queued(struct wbt *t, const char *path, const struct pair *p, const char *when)
{
    struct wb_op *op = wbt_last(t, path);
    json_t *e = NULL;
    int rc;

    if (p->lookup == 0)
        ok(op == NULL, "%s %s: nothing queued", path, when);
    else
        ok(op != NULL, "%s %s: a change queued", path, when);
    if (op && p->lookup != 0) {
        is_str(wb_kind_name(op->kind), wb_kind_name(p->kind), "%s %s: queued kind", path, when);
        ok(wbt_json_is(op->entity, p->content), "%s %s: queued entity", path, when);
        is_str(op->if_match, p->if_match, "%s %s: If-Match of the first change", path, when);
    }
    rc = wb_lookup(t->wb, path, &e);
    is_int(rc, p->lookup, "%s %s: wb_lookup", path, when);
    if (rc == 1)
        ok(op && lookup_shows(e, op), "%s %s: wb_lookup shows the queued entity", path, when);
    json_decref(e);
}

/* Submit pair P at PATH, checking both answers, the tokens, and that a
 * change against the wrong ETag is refused first. Returns 1 when a change
 * stays queued. */
static int run_pair(struct wbt *t, const char *path, const struct pair *p)
{
    char *tok1 = NULL, *tok2 = NULL;
    const char *k1 = wb_kind_name(p->first), *k2 = wb_kind_name(p->second);
    struct wb_op *op;
    int rc;

    rc = wbt_put(t, path, p->first, p->first == WB_DELETE ? NULL : FIRST,
                 p->first == WB_INSERT ? NULL : R1, &tok1);
    is_int(rc, 0, "%s: first change (%s) queued", path, k1);
    if (p->second != WB_INSERT) /* the real ETag is not the queued change's */
        is_int(wbt_put(t, path, p->second, p->second == WB_DELETE ? NULL : SECOND, R1, NULL),
               p->first == WB_DELETE ? -ENOENT : -ESTALE,
               "%s: %s then %s against the real ETag: refused", path, k1, k2);
    rc = wbt_put(t, path, p->second, p->second == WB_DELETE ? NULL : SECOND,
                 p->second == WB_INSERT ? NULL : tok1, &tok2);
    is_int(rc, p->rc, "%s: %s then %s", path, k1, k2);
    op = wbt_last(t, path);
    if (p->rc < 0 || p->lookup == 0)
        ok(tok2 == NULL, "%s: no token", path);
    else if (p->second == WB_DELETE)
        ok(tok2 == NULL, "%s: a delete gets no token", path);
    else
        ok(op && tok2 && strcmp(tok2, wbt_token(op)) == 0 && strcmp(tok2, tok1 ? tok1 : "") != 0,
           "%s: a new token, the queued change's", path);
    if (p->rc < 0 && tok1)
        ok(op && strcmp(tok1, wbt_token(op)) == 0, "%s: refused: the first change stays", path);
    check_queued(t, path, p, "after the pair");
    if (p->rc == 0 && p->lookup == 1 && tok1)
        is_int(wbt_put(t, path, WB_REPLACE, SECOND, tok1, NULL), -ESTALE,
               "%s: the first token is stale once merged", path);
    free(tok1);
    free(tok2);
    return p->lookup != 0;
}

/* Every pair of kinds, each on its own entity of one partition; what is
 * queued survives wb_close (which reports it) and the next wb_open. */
static void test_pairs(void)
{
    struct wbt t;
    char path[N_PAIRS][32];
    size_t queued = 0;

    wbt_start(&t);
    for (size_t i = 0; i < N_PAIRS; i++) {
        snprintf(path[i], sizeof(path[i]), "/t/pairs/r%02zu", i);
        queued += (size_t)run_pair(&t, path[i], &pairs[i]);
    }
    is_int(t.wb->n_queued, queued, "one queued change per entity left");
    is_int(t.wb->n_ents, queued, "the undone insert's entity is forgotten");
    is_int(wbt_close(&t), queued, "wb_close: every queued change left in the journal");
    is_int(wbt_open(&t), 0, "open again");
    for (size_t i = 0; t.wb && i < N_PAIRS; i++)
        check_queued(&t, path[i], &pairs[i], "after a close and open");
    is_int(t.n_applied + t.n_failed, 0, "no hook called: nothing was sent");
    is_int(wbt_close(&t), queued, "wb_close again: the same changes left");
    wbt_finish(&t);
}

/* The guard of a change with nothing queued before it: the ETag it was
 * made against, "*" without one, the real ETag behind a token whose
 * change was sent, -ESTALE for a token unknown (nothing queued). */
static void test_first_change(void)
{
    struct wbt t;
    struct wb_op *op;
    char *tok = NULL, *tok2 = NULL, *real = NULL, sent[64];

    wbt_start(&t);
    is_int(wbt_put(&t, "/t/p/ins", WB_INSERT, FIRST, NULL, &tok), 0, "insert");
    ok((op = wbt_last(&t, "/t/p/ins")) && !op->if_match, "an insert has no If-Match");
    ok(tok && strncmp(tok, WB_TOKEN_PREFIX, strlen(WB_TOKEN_PREFIX)) == 0 &&
           tok[strlen(tok) - 1] == '"',
       "token: %s", tok ? tok : "(null)");
    is_int(wbt_put(&t, "/t/p/star", WB_REPLACE, FIRST, NULL, &tok2), 0, "replace, no ETag");
    ok((op = wbt_last(&t, "/t/p/star")) && op->if_match && strcmp(op->if_match, "*") == 0,
       "a change without an ETag is guarded by *");
    ok(tok && tok2 &&
           strtoull(tok + strlen(WB_TOKEN_PREFIX), NULL, 10) <
               strtoull(tok2 + strlen(WB_TOKEN_PREFIX), NULL, 10),
       "tokens grow: %s < %s", tok, tok2);
    is_int(wbt_put(&t, "/t/p/mrg", WB_MERGE, SECOND, R1, NULL), 0, "merge against R1");
    ok((op = wbt_last(&t, "/t/p/mrg")) && op->if_match && strcmp(op->if_match, R1) == 0,
       "the real ETag is the If-Match");
    is_int(wbt_put(&t, "/t/p/gone", WB_DELETE, NULL, WB_TOKEN_PREFIX "7\"", NULL), -ESTALE,
           "a token neither queued nor sent: -ESTALE");
    ok(!wbt_last(&t, "/t/p/gone") && t.wb->n_ents == 3, "nothing kept of the refused change");
    snprintf(sent, sizeof(sent), WB_TOKEN_PREFIX "12\"");
    pthread_mutex_lock(&t.wb->mu);
    wb_done_put(t.wb, sent, "W/\"real12\"");
    pthread_mutex_unlock(&t.wb->mu);
    is_int(wb_resolve(t.wb, sent, &real), 1, "wb_resolve knows a sent change's token");
    is_str(real, "W/\"real12\"", "... and the ETag the service gave");
    is_int(wbt_put(&t, "/t/p/sent", WB_REPLACE, SECOND, sent, NULL), 0,
           "a change against a sent change's token");
    ok((op = wbt_last(&t, "/t/p/sent")) && op->if_match &&
           strcmp(op->if_match, "W/\"real12\"") == 0,
       "is guarded by the ETag the service gave");
    is_int(wbt_put(&t, "/t/p/x", WB_INSERT, FIRST, NULL, NULL), 0, "insert x");
    is_int(wb_submit(t.wb, NULL, 0, NULL), -EINVAL, "wb_submit of no change: -EINVAL");
    is_int(wb_submit(t.wb, NULL, 3, NULL), -EINVAL, "wb_submit of three: -EINVAL");
    is_int(wbt_close(&t), 5, "five changes left");
    free(tok);
    free(tok2);
    free(real);
    wbt_finish(&t);
}

/* A merge onto a queued change: a property it sets loses the old type
 * annotation unless it brings its own; the others keep theirs. */
static void test_annotations(void)
{
    struct wbt t;
    char *tok = NULL, *tok2 = NULL;

    wbt_start(&t);
    is_int(wbt_put(&t, "/t/p/a", WB_REPLACE,
                   "{\"A\":\"1\",\"A@odata.type\":\"Edm.Int64\","
                   "\"B\":\"eA==\",\"B@odata.type\":\"Edm.Binary\"}",
                   R1, &tok),
           0, "replace");
    is_int(
        wbt_put(&t, "/t/p/a", WB_MERGE, "{\"A\":\"2\",\"A@odata.type\":\"Edm.Int32\"}", tok, &tok2),
        0, "merge with its own annotation");
    ok(wbt_json_is(wbt_entity(&t, "/t/p/a"),
                   "{\"A\":\"2\",\"A@odata.type\":\"Edm.Int32\",\"B\":\"eA==\","
                   "\"B@odata.type\":\"Edm.Binary\"}"),
       "the merge's annotation wins");
    free(tok);
    tok = NULL;
    is_int(wbt_put(&t, "/t/p/a", WB_MERGE, "{\"B\":\"text\"}", tok2, &tok), 0, "merge without one");
    ok(wbt_json_is(wbt_entity(&t, "/t/p/a"),
                   "{\"A\":\"2\",\"A@odata.type\":\"Edm.Int32\",\"B\":\"text\"}"),
       "the old annotation of B is gone, A's stays");
    is_str(wbt_kind(&t, "/t/p/a"), "replace", "still a replace");
    is_int(wbt_close(&t), 1, "one change left");
    free(tok);
    free(tok2);
    wbt_finish(&t);
}

/* A change made while its entity's change is out (taken to be sent) is
 * not merged into it: it waits for it (dep), guarded by its token, with
 * its own kind and entity; a later change merges into the waiting one.
 * Once the first is applied, the waiting one is guarded by the ETag the
 * service gave, the first's token resolves to it, and the applied hook
 * waits for the entity's last change. */
static void test_waits_for_sending(void)
{
    struct wbt t;
    struct wb_op *ops[WBT_CAP], *first, *op;
    char *tok1 = NULL, *tok2 = NULL, *tok3 = NULL, *real = NULL;
    json_t *e = NULL;

    wbt_start(&t);
    is_int(wbt_put(&t, "/t/p/w", WB_REPLACE, FIRST, R1, &tok1), 0, "replace");
    is_int(wbt_take(&t, 1, ops), 1, "the replace is taken to be sent");
    first = ops[0];
    is_int(wbt_put(&t, "/t/p/w", WB_MERGE, SECOND, tok1, &tok2), 0, "a merge against its token");
    op = wbt_last(&t, "/t/p/w");
    ok(op && op != first && op->dep == first && first->succ == op,
       "the merge waits for the change out");
    ok(op && op->kind == WB_MERGE && wbt_json_is(op->entity, SECOND), "with its own content");
    is_str(op ? op->if_match : NULL, tok1, "guarded by the token of the change out");
    ok(t.wb->n_queued == 1 && t.wb->n_sending == 1, "one queued, one sending");
    is_int(wb_lookup(t.wb, "/t/p/w", &e), 1, "wb_lookup: the waiting change");
    ok(e && op && lookup_shows(e, op), "shows the waiting change's entity");
    json_decref(e);
    is_int(wbt_put(&t, "/t/p/w", WB_REPLACE, "{\"D\":\"d\"}", tok2, &tok3), 0,
           "a replace against the waiting change's token");
    op = wbt_last(&t, "/t/p/w");
    ok(op && op->dep == first && first->succ == op && t.wb->n_queued == 1,
       "merged into the waiting change, which still waits");
    ok(op && op->kind == WB_REPLACE && wbt_json_is(op->entity, "{\"D\":\"d\"}"),
       "a merge then a replace: the replace");
    is_str(op ? op->if_match : NULL, tok1, "still guarded by the token of the change out");
    wbt_applied(&t, ops, 1, "W/\"e1\"");
    ok(op && op->dep == NULL, "the first applied: the waiting change is free to go");
    is_str(op ? op->if_match : NULL, "W/\"e1\"", "guarded by the ETag the service gave");
    is_int(t.n_applied, 0, "no applied hook while a later change is queued");
    is_int(wb_resolve(t.wb, tok1, &real), 1, "the first token resolves");
    is_str(real, "W/\"e1\"", "to the ETag the service gave");
    is_int(wbt_take(&t, 1, ops), 1, "the waiting change is taken");
    wbt_applied(&t, ops, 1, "W/\"e3\"");
    is_int(t.n_applied, 1, "applied hook for the entity's last change");
    is_int(wb_lookup(t.wb, "/t/p/w", &e), 0, "nothing queued any more");
    is_int(wbt_put(&t, "/t/p/w", WB_REPLACE, FIRST, tok3, NULL), 0,
           "a change against the applied change's token");
    is_str(wbt_if(&t, "/t/p/w"), "W/\"e3\"", "is guarded by its real ETag");
    is_int(wbt_close(&t), 1, "one change left");
    free(tok1);
    free(tok2);
    free(tok3);
    free(real);
    wbt_finish(&t);
}

/* An insert made while the entity's delete is out waits for it; deleted
 * before it is sent, it is undone and the delete out is what shows. A new
 * insert waits again, and once the delete is applied it goes as an
 * insert, unguarded. */
static void test_undo_after_delete(void)
{
    struct wbt t;
    struct wb_op *ops[WBT_CAP], *del, *op;
    char *tok = NULL;
    json_t *e = NULL;

    wbt_start(&t);
    is_int(wbt_put(&t, "/t/p/d", WB_DELETE, NULL, R1, NULL), 0, "delete");
    is_int(wbt_take(&t, 1, ops), 1, "the delete is taken to be sent");
    del = ops[0];
    is_int(wbt_put(&t, "/t/p/d", WB_INSERT, FIRST, NULL, &tok), 0, "insert");
    op = wbt_last(&t, "/t/p/d");
    ok(op && op->dep == del && op->kind == WB_INSERT && !op->if_match,
       "the insert waits for the delete out, unguarded");
    is_int(wb_lookup(t.wb, "/t/p/d", &e), 1, "wb_lookup: the insert");
    json_decref(e);
    is_int(wbt_put(&t, "/t/p/d", WB_DELETE, NULL, tok, NULL), 0, "delete it");
    ok(wbt_last(&t, "/t/p/d") == del && del->succ == NULL, "undone: the delete out is last");
    ok(t.wb->n_queued == 0 && t.wb->n_sending == 1, "nothing queued, one sending");
    is_int(wb_lookup(t.wb, "/t/p/d", &e), -ENOENT, "wb_lookup: deleted");
    is_int(wbt_put(&t, "/t/p/d", WB_INSERT, SECOND, NULL, NULL), 0, "insert again");
    op = wbt_last(&t, "/t/p/d");
    ok(op && op->dep == del, "waits for the delete out");
    wbt_applied(&t, ops, 1, NULL);
    ok(op && op->dep == NULL && op->if_match == NULL && op->kind == WB_INSERT,
       "the delete applied: an insert, unguarded");
    is_int(t.n_applied, 0, "no applied hook: a later change is queued");
    is_int(wbt_close(&t), 1, "one change left");
    free(tok);
    wbt_finish(&t);
}

/* A rename: both halves in one submit, one group, next to each other in
 * the partition's queue; the new name shows its entity, the old one a
 * delete. A later change of either half waits for it (a grouped change is
 * never merged into), and a rename of a queued insert waits for it rather
 * than undo it. A rename refused in either half queues nothing. */
static void test_rename(void)
{
    struct wbt t;
    struct wb_op *to, *from, *op;
    char *tokens[2] = { NULL, NULL }, *tok = NULL;
    json_t *e = NULL;
    size_t ents;

    wbt_start(&t);
    is_int(wbt_rename(&t, "/t/p/new", FIRST, NULL, "/t/p/old", R1, tokens), 0, "rename");
    to = wbt_last(&t, "/t/p/new");
    from = wbt_last(&t, "/t/p/old");
    ok(to && from && to->group != 0 && to->group == from->group, "the halves: one group");
    ok(to && from && to->next == from && from->prev == to, "next to each other, in order");
    ok(to && to->kind == WB_INSERT && !to->if_match, "the new name: an insert");
    ok(from && from->kind == WB_DELETE && from->if_match && !strcmp(from->if_match, R1),
       "the old name: a delete against its ETag");
    ok(to && tokens[0] && strcmp(tokens[0], wbt_token(to)) == 0, "a token for the new name");
    ok(tokens[1] == NULL, "none for the delete");
    is_int(wb_lookup(t.wb, "/t/p/new", &e), 1, "wb_lookup: the new name's entity");
    ok(e && to && lookup_shows(e, to), "as written");
    json_decref(e);
    is_int(wb_lookup(t.wb, "/t/p/old", &e), -ENOENT, "wb_lookup: the old name deleted");
    is_int(wbt_put(&t, "/t/p/new", WB_REPLACE, SECOND, tokens[0], NULL), 0,
           "a replace of the new name");
    ok((op = wbt_last(&t, "/t/p/new")) && op != to && op->dep == to && op->kind == WB_REPLACE,
       "waits for the rename (not merged)");
    is_int(wbt_put(&t, "/t/p/old", WB_INSERT, SECOND, NULL, NULL), 0, "the old name made again");
    ok((op = wbt_last(&t, "/t/p/old")) && op != from && op->dep == from && op->kind == WB_INSERT,
       "waits for the rename's delete: an insert");
    ents = t.wb->n_ents;
    free(tokens[0]);
    is_int(wbt_rename(&t, "/t/p/new", SECOND, NULL, "/t/p/o2", R1, tokens), -EEXIST,
           "rename onto a queued write as an insert: -EEXIST");
    is_int(wbt_rename(&t, "/t/p/n3", SECOND, NULL, "/t/p/old", R1, tokens), -ESTALE,
           "rename of a queued insert against the real ETag: -ESTALE");
    ok(!tokens[0] && !tokens[1], "refused: no tokens");
    ok(!wbt_last(&t, "/t/p/o2") && !wbt_last(&t, "/t/p/n3") && t.wb->n_queued == 4 &&
           t.wb->n_ents == ents,
       "refused: nothing of either half kept");
    is_int(wbt_put(&t, "/t/q/src", WB_INSERT, FIRST, NULL, &tok), 0, "insert src");
    op = wbt_last(&t, "/t/q/src");
    is_int(wbt_rename(&t, "/t/q/dst", FIRST, NULL, "/t/q/src", tok, tokens), 0,
           "rename the queued insert");
    ok(op && (from = wbt_last(&t, "/t/q/src")) && from->kind == WB_DELETE && from->dep == op &&
           op->succ == from,
       "its delete waits for the insert (not undone)");
    is_int(wbt_close(&t), 7, "seven changes left");
    free(tokens[0]);
    free(tok);
    wbt_finish(&t);
}

int main(void)
{
    test_pairs();
    test_first_change();
    test_annotations();
    test_waits_for_sending();
    test_undo_after_delete();
    test_rename();
    return done_testing();
}

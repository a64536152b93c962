/* test_store.c - the store's save, delete, rename and truncate decisions
 * (store/store.c) without the service (TAP): every change goes through
 * s->changes, here a fake that records each call and answers from a
 * script, and every load is answered from entities cached the way a
 * listing caches them. Nothing reaches the table client: its account
 * points at 127.0.0.1:1 and its request counter must stay at zero. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cache/cache.h"
#include "names/names.h"
#include "store/store.h"
#include "store/store_i.h"
#include "table/table.h"
#include "util/util.h"
#include "tap.h"

/* The ETag the service gave the listed entities, and the ones the fake
 * gives what it writes (both carry a Timestamp, as Azure's do). */
#define E1 "W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\""
#define E2 "W/\"datetime'2024-02-03T04%3A05%3A06.0000001Z'\""
#define E3 "W/\"datetime'2024-03-04T05%3A06%3A07.0000002Z'\""

/* --- the fake seam ---------------------------------------------------------- */

enum fake_op { OP_WRITE, OP_REMOVE, OP_RENAME, OP_RESOLVED };

/* One call the store made: what, and with which arguments (copies). */
struct fake_call {
    enum fake_op op;
    enum table_write how; /* OP_WRITE */
    char *path;           /* OP_WRITE, OP_REMOVE, OP_RESOLVED; OP_RENAME: from */
    char *to;             /* OP_RENAME */
    char *etag;           /* If-Match (OP_RENAME: from_etag); NULL: none */
    char *to_etag;        /* OP_RENAME */
    char *pk, *rk;        /* keys written or deleted (OP_RENAME: TO's) */
    char *from_rk;        /* OP_RENAME */
    char *wire;           /* the entity sent, compact with sorted keys */
};

#define FAKE_MAX 8

static struct {
    struct fake_call call[FAKE_MAX];
    int n;
    int answer;           /* what the next change answers (0 or -errno) */
    const char *new_etag; /* the ETag a successful write gives */
} fake;

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void fake_reset(int answer, const char *new_etag)
{
    for (int i = 0; i < fake.n; i++) {
        struct fake_call *c = &fake.call[i];

        free(c->path), free(c->to), free(c->etag), free(c->to_etag);
        free(c->pk), free(c->rk), free(c->from_rk), free(c->wire);
    }
    memset(&fake, 0, sizeof(fake));
    fake.answer = answer;
    fake.new_etag = new_etag;
}

static struct fake_call *fake_add(enum fake_op op, const char *path, const char *etag)
{
    struct fake_call *c = &fake.call[fake.n < FAKE_MAX ? fake.n++ : FAKE_MAX - 1];

    c->op = op;
    c->path = dup_or_null(path);
    c->etag = dup_or_null(etag);
    return c;
}

static int fake_pending(struct store *s, const struct fspath *fp, const char *path,
                        struct cache_file *out)
{
    (void)s, (void)fp, (void)path, (void)out;
    return 0;
}

/* Records the write; on success shows it as store_direct does. */
static int fake_write(struct store *s, const char *path, const struct fspath *fp,
                      const json_t *wire, enum table_write how, const char *etag, char **new_etag,
                      struct az_status *st)
{
    struct fake_call *c = fake_add(OP_WRITE, path, etag);

    (void)st;
    c->how = how;
    c->pk = dup_or_null(fp->pk);
    c->rk = dup_or_null(fp->rk);
    c->wire = json_dumps(wire, JSON_COMPACT | JSON_SORT_KEYS);
    if (fake.answer < 0)
        return fake.answer;
    *new_etag = dup_or_null(fake.new_etag);
    store_show_written(s, path, fp, wire, *new_etag, how != TW_MERGE);
    return 0;
}

static int fake_remove(struct store *s, const char *path, const struct fspath *fp, const char *etag,
                       struct az_status *st)
{
    struct fake_call *c = fake_add(OP_REMOVE, path, etag);

    (void)s, (void)st;
    c->pk = dup_or_null(fp->pk);
    c->rk = dup_or_null(fp->rk);
    return fake.answer;
}

/* Records the move; on success shows TO as store_direct does. */
static int fake_rename(struct store *s, const struct store_move *m, char **to_etag,
                       struct az_status *st)
{
    struct fake_call *c = fake_add(OP_RENAME, m->from, m->from_etag);

    (void)st;
    c->to = dup_or_null(m->to);
    c->to_etag = dup_or_null(m->to_etag);
    c->pk = dup_or_null(m->tf->pk);
    c->rk = dup_or_null(m->tf->rk);
    c->from_rk = dup_or_null(m->ff->rk);
    c->wire = json_dumps(m->wire, JSON_COMPACT | JSON_SORT_KEYS);
    if (fake.answer < 0)
        return fake.answer;
    *to_etag = dup_or_null(fake.new_etag);
    store_show_written(s, m->to, m->tf, m->wire, *to_etag, 1);
    return 0;
}

static void fake_resolved(struct store *s, const char *path)
{
    (void)s;
    fake_add(OP_RESOLVED, path, NULL);
}

static void fake_settle(struct store *s, const char *dir)
{
    (void)s, (void)dir;
}

static int fake_pending_in(struct store *s, const char *dir)
{
    (void)s, (void)dir;
    return 0;
}

static int fake_create_exclusive(struct store *s, const char *path, const struct fspath *fp,
                                 char **etag)
{
    (void)s, (void)path, (void)fp;
    *etag = NULL;
    return 1;
}

static int fake_sync(struct store *s, const char *path)
{
    (void)s, (void)path;
    return 0;
}

static int fake_report(struct store *s, size_t limit, char **out)
{
    (void)s, (void)limit;
    *out = NULL;
    return -ENODATA;
}

static int fake_counts(struct store *s, struct store_pending_counts *out)
{
    (void)s, (void)out;
    return -ENODATA;
}

static int fake_discard(struct store *s, const char *path)
{
    (void)s, (void)path;
    return -ENOTSUP;
}

static int fake_uncreate(struct store *s, const char *path, const struct fspath *fp,
                         const char *etag, struct az_status *st)
{
    (void)s, (void)path, (void)fp, (void)etag, (void)st;
    return -ENOTSUP;
}

static const struct store_changes fake_changes = {
    "fake",        fake_pending, fake_write,      fake_remove,           fake_rename,
    fake_resolved, fake_settle,  fake_pending_in, fake_create_exclusive, fake_sync,
    fake_report,   fake_counts,  fake_discard,    fake_uncreate,
};

/* --- a store whose partition /tbl/p was just listed ------------------------- */

static struct account acct = {
    .name = "devstoreaccount1",
    .endpoint = "http://127.0.0.1:1/devstoreaccount1",
    .scheme = "http",
    .host = "127.0.0.1:1",
    .base_path = "/devstoreaccount1",
};
/* If anything did reach the client, it would fail fast. */
static const struct http_config hc = {
    .connect_timeout_ms = 100,
    .request_timeout_ms = 200,
    .max_retries = -1,
};

/* Wire entity RK of partition p as the service lists it: a Double n
 * (typed), a String s, a Timestamp and ETAG. */
static json_t *listed_entity(const char *rk, double n, const char *etag)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:f, s:s, s:s}", "odata.etag", etag, "PartitionKey", "p",
                     "RowKey", rk, "Timestamp", "2024-01-02T03:04:05.1234567Z", "n", n,
                     "n@odata.type", "Edm.Double", "s", "x");
}

/* A store with fake changes whose partition /tbl/p was just listed: a.json
 * (n 2.0, ETag E1) and c.json (n 3.0, ETag E3); b.json does not exist. */
static struct store *new_store(void)
{
    struct store *s = calloc(1, sizeof(*s));
    struct listing *l = listing_new();
    json_t *a = listed_entity("a", 2.0, E1), *c = listed_entity("c", 3.0, E3);

    s->log.level = LOG_LVL_QUIET;
    s->cache_timeout = 60;
    s->negative_timeout = 5;
    s->mount_time = 1700000000;
    s->scan_ways = 1;
    if (store_open(s, &acct, &hc, 1 << 20) != 0 || !l)
        abort();
    s->changes = &fake_changes;
    if (store_list_entity(s, "/tbl/p", a, l, NULL, NULL) != 0 ||
        store_list_entity(s, "/tbl/p", c, l, NULL, NULL) != 0 ||
        cache_put_listing(s->cache, "/tbl/p", l, 0) != 0)
        abort();
    listing_unref(l);
    json_decref(a);
    json_decref(c);
    fake_reset(0, E2);
    return s;
}

static void free_store(struct store *s)
{
    is_int(atomic_load(&s->stats.requests), 0, "nothing reached the table client");
    store_free(s);
    free(s);
    fake_reset(0, NULL);
}

/* The text the mount shows at PATH now (malloc'd; NULL: nothing cached),
 * its ETag in *ETAG (malloc'd) when ETAG is not NULL. */
static char *shown(struct store *s, const char *path, char **etag)
{
    struct cache_file f = { 0 };
    char *text = NULL;

    if (store_peek(s, path, &f) == 0) {
        text = strndup(f.data, f.len);
        if (etag) {
            *etag = f.etag;
            f.etag = NULL;
        }
    }
    cache_file_clear(&f);
    return text;
}

/* Is the entity at PATH cached now? */
static int cached(struct store *s, const char *path)
{
    char *t = shown(s, path, NULL);

    free(t);
    return t != NULL;
}

/* Is NAME in the cached listing of /tbl/p? 1, 0 (listed without it), -1
 * (no listing cached). */
static int listed(struct store *s, const char *name)
{
    struct listing *l = cache_get_listing(s->cache, "/tbl/p");
    int r = l ? listing_find(l, name) >= 0 : -1;

    listing_unref(l);
    return r;
}

/* store_save of TEXT at PATH AS, guarded by ETAG; *new_etag freed. */
static int save(struct store *s, const char *path, const char *text, enum store_save_as as,
                const char *etag, char **new_etag)
{
    struct fspath fp;
    int rc;

    if (fspath_parse(path, &fp) != 0)
        abort();
    rc = store_save(s, &(struct store_save){ path, &fp, text, strlen(text), as, etag }, new_etag);
    fspath_free(&fp);
    return rc;
}

/* --- saves ---------------------------------------------------------------------- */

/* A text holding exactly what the service gave (the rendered text itself,
 * or the same typed values written otherwise) sends nothing: the failed
 * change of it, if any, is resolved, and the ETag stays. */
static void test_unchanged(void)
{
    struct store *s = new_store();
    char *text = shown(s, "/tbl/p/a.json", NULL), *etag = NULL;

    ok(text && strstr(text, "\"n\": 2.0"), "a.json is cached as the listing rendered it");
    is_int(save(s, "/tbl/p/a.json", text, SAVE_UPDATE, E1, &etag), 0, "save the same text");
    is_int(fake.n, 1, "one call to the seam");
    is_int(fake.call[0].op, OP_RESOLVED, "it is resolved, not a write");
    is_str(fake.call[0].path, "/tbl/p/a.json", "resolved names the path");
    is_str(etag, E1, "the ETag is the one the entity has");
    free(etag);
    fake_reset(0, E2);
    is_int(save(s, "/tbl/p/a.json", "{\"s\":\"x\",\"n@odata.type\":\"Edm.Double\",\"n\":2}",
                SAVE_REPLACE, E1, NULL),
           0, "the same typed values, written otherwise");
    ok(fake.n == 1 && fake.call[0].op == OP_RESOLVED, "nothing is sent");
    free(text);
    free_store(s);
}

/* What is not exactly the cached entity is sent: a value of another type
 * (Int32 2 for Double 2.0), the same text guarded by another ETag than the
 * cached one, or a copy older than the negative lifetime. */
static void test_changed(void)
{
    struct store *s = new_store();
    char *text;

    is_int(save(s, "/tbl/p/a.json", "{\"s\":\"x\",\"n\":2}", SAVE_UPDATE, E1, NULL), 0,
           "Int32 2 where the service holds Double 2.0");
    ok(fake.n == 1 && fake.call[0].op == OP_WRITE, "another type is a change: written");
    free_store(s);
    s = new_store();
    text = shown(s, "/tbl/p/c.json", NULL);
    is_int(save(s, "/tbl/p/c.json", text, SAVE_UPDATE, E1, NULL), 0,
           "c's own text, guarded by another ETag than the cached one");
    ok(fake.n == 1 && fake.call[0].op == OP_WRITE, "written (the service decides)");
    free(text);
    free_store(s);
    s = new_store();
    s->negative_timeout = 0;
    text = shown(s, "/tbl/p/c.json", NULL);
    is_int(save(s, "/tbl/p/c.json", text, SAVE_UPDATE, E3, NULL), 0, "c's own text, old copy");
    ok(fake.n == 1 && fake.call[0].op == OP_WRITE,
       "a copy older than the negative lifetime may hide a change: written");
    free(text);
    free_store(s);
}

/* SAVE_INSERT inserts without If-Match; SAVE_UPDATE replaces, or merges
 * with -o merge; SAVE_REPLACE replaces even with -o merge. The keys and
 * the entity sent are the path's and the text's. */
static void test_write_kinds(void)
{
    struct store *s = new_store();
    char *etag = NULL;

    is_int(save(s, "/tbl/p/b.json", "{\"v\":1}", SAVE_INSERT, NULL, &etag), 0, "insert b");
    is_int(fake.call[0].how, TW_INSERT, "SAVE_INSERT: insert");
    ok(fake.call[0].etag == NULL, "an insert has no If-Match");
    ok(fake.call[0].pk && fake.call[0].rk && strcmp(fake.call[0].pk, "p") == 0 &&
           strcmp(fake.call[0].rk, "b") == 0,
       "keys p/b from the path");
    is_str(fake.call[0].wire, "{\"v\":1}", "the text's properties, nothing else");
    is_str(etag, E2, "the new ETag is handed back");
    free(etag);
    fake_reset(0, E2);
    save(s, "/tbl/p/a.json", "{\"v\":2}", SAVE_UPDATE, E1, NULL);
    is_int(fake.call[0].how, TW_REPLACE, "SAVE_UPDATE: replace");
    is_str(fake.call[0].etag, E1, "guarded by the ETag it was read at");
    fake_reset(0, E2);
    s->merge = 1;
    save(s, "/tbl/p/c.json", "{\"v\":3}", SAVE_UPDATE, E3, NULL);
    is_int(fake.call[0].how, TW_MERGE, "SAVE_UPDATE with -o merge: merge");
    is_str(fake.call[0].etag, E3, "the merge is guarded too");
    fake_reset(0, E2);
    save(s, "/tbl/p/b.json", "{\"v\":4}", SAVE_REPLACE, E2, NULL);
    is_int(fake.call[0].how, TW_REPLACE, "SAVE_REPLACE with -o merge: still replace");
    is_str(fake.call[0].etag, E2, "guarded by its ETag");
    fake_reset(0, E2);
    s->merge = 0;
    is_int(save(s, "/tbl/p/a.json", "", SAVE_UPDATE, E2, NULL), 0, "an empty text");
    is_str(fake.call[0].wire, "{}", "is an entity without properties");
    free_store(s);
}

/* A text that is no entity sends nothing and leaves the cache as it was. */
static void test_invalid(void)
{
    struct store *s = new_store();

    is_int(save(s, "/tbl/p/a.json", "{\"v\":", SAVE_UPDATE, E1, NULL), -EINVAL,
           "broken JSON: -EINVAL");
    is_int(save(s, "/tbl/p/a.json", "[1]", SAVE_UPDATE, E1, NULL), -EINVAL,
           "not an object: -EINVAL");
    is_int(save(s, "/tbl/p/b.json", "{\"a b\":1}", SAVE_INSERT, NULL, NULL), -EINVAL,
           "a property name the service refuses: -EINVAL");
    is_int(fake.n, 0, "nothing was sent");
    ok(cached(s, "/tbl/p/a.json") && listed(s, "a.json") == 1, "a.json still cached");
    free_store(s);
}

/* A successful save leaves the saved entity cached with its new ETag (as
 * store_direct shows it), so that saving it again sends nothing; a merge
 * is not shown as exact (the entity holds more than was sent). */
static void test_save_shown(void)
{
    struct store *s = new_store();
    char *text, *etag = NULL;

    is_int(save(s, "/tbl/p/a.json", "{\"v\":7}", SAVE_UPDATE, E1, NULL), 0, "replace a");
    text = shown(s, "/tbl/p/a.json", &etag);
    ok(text && strstr(text, "\"v\": 7") && !strstr(text, "\"s\""), "the saved text is shown");
    is_str(etag, E2, "with the ETag the write gave");
    is_int(listed(s, "a.json"), 1, "still in the listing");
    fake_reset(0, E3);
    is_int(save(s, "/tbl/p/a.json", text, SAVE_UPDATE, E2, NULL), 0, "save it again");
    ok(fake.n == 1 && fake.call[0].op == OP_RESOLVED, "nothing is sent the second time");
    free(text);
    free(etag);
    fake_reset(0, E2);
    is_int(save(s, "/tbl/p/b.json", "{\"v\":8}", SAVE_INSERT, NULL, NULL), 0, "insert b");
    ok(cached(s, "/tbl/p/b.json") && listed(s, "b.json") == 1, "b is shown and listed");
    fake_reset(0, E3);
    s->merge = 1;
    is_int(save(s, "/tbl/p/c.json", "{\"v\":9}", SAVE_UPDATE, E3, NULL), 0, "merge c");
    ok(!cached(s, "/tbl/p/c.json"), "a merged entity is read back, not guessed");
    free_store(s);
}

/* A save answered -ESTALE, -EEXIST or -ENOENT (the entity is not what the
 * mount knew) drops it and its partition's listing, so that the next read
 * asks the service; any other failure (-EIO) keeps them. The error is the
 * caller's. */
static void test_save_conflicts(void)
{
    static const int conflict[] = { -ESTALE, -EEXIST, -ENOENT };
    static const char *const name[] = { "-ESTALE", "-EEXIST", "-ENOENT" };
    struct store *s;

    for (int i = 0; i < 3; i++) {
        char *etag = NULL;

        s = new_store();
        fake_reset(conflict[i], E2);
        is_int(save(s, "/tbl/p/a.json", "{\"v\":1}", SAVE_UPDATE, E1, &etag), conflict[i],
               "the seam's %s is the save's", name[i]);
        ok(etag == NULL, "%s: no ETag handed back", name[i]);
        ok(!cached(s, "/tbl/p/a.json"), "%s: the cached entity is dropped", name[i]);
        is_int(listed(s, "c.json"), -1, "%s: the partition's listing too", name[i]);
        free_store(s);
    }
    s = new_store();
    fake_reset(-EIO, E2);
    is_int(save(s, "/tbl/p/a.json", "{\"v\":1}", SAVE_UPDATE, E1, NULL), -EIO, "-EIO");
    ok(cached(s, "/tbl/p/a.json") && listed(s, "a.json") == 1,
       "-EIO: the entity is what it was, still cached");
    free_store(s);
}

/* --- save over, truncate, delete ------------------------------------------------ */

/* store_save_over replaces an entity the mount knows (with its cached ETag,
 * even with -o merge) and inserts where the listing says there is none. */
static void test_save_over(void)
{
    struct store *s = new_store();
    struct fspath fp;

    s->merge = 1;
    fspath_parse("/tbl/p/c.json", &fp);
    is_int(store_save_over(s, &fp, "/tbl/p/c.json", "{\"v\":1}", 7), 0, "save over c");
    fspath_free(&fp);
    ok(fake.n == 1 && fake.call[0].how == TW_REPLACE, "an existing target is replaced");
    is_str(fake.call[0].etag, E3, "guarded by its cached ETag");
    fake_reset(0, E2);
    fspath_parse("/tbl/p/b.json", &fp);
    is_int(store_save_over(s, &fp, "/tbl/p/b.json", "{\"v\":2}", 7), 0, "save over b");
    fspath_free(&fp);
    ok(fake.n == 1 && fake.call[0].how == TW_INSERT, "a target not listed is inserted");
    ok(fake.call[0].etag == NULL, "without If-Match");
    free_store(s);
}

static int truncate_to(struct store *s, const char *path, size_t size)
{
    struct fspath fp;
    int rc;

    fspath_parse(path, &fp);
    rc = store_truncate(s, &fp, path, size);
    fspath_free(&fp);
    return rc;
}

/* Truncating saves the cut text as an update guarded by the cached ETag:
 * to 0, an entity without properties; to its length, nothing changes;
 * beyond it, NUL bytes that are no entity. */
static void test_truncate(void)
{
    struct store *s = new_store();
    char *text = shown(s, "/tbl/p/a.json", NULL);
    size_t len = text ? strlen(text) : 0;

    is_int(truncate_to(s, "/tbl/p/a.json", len), 0, "truncate to its own length");
    ok(fake.n == 1 && fake.call[0].op == OP_RESOLVED, "nothing is sent");
    fake_reset(0, E2);
    is_int(truncate_to(s, "/tbl/p/c.json", len + 1), -EINVAL, "grow by a NUL byte");
    is_int(fake.n, 0, "nothing is sent");
    s->merge = 1;
    is_int(truncate_to(s, "/tbl/p/a.json", 0), 0, "truncate to 0");
    ok(fake.n == 1 && fake.call[0].op == OP_WRITE, "a write");
    is_int(fake.call[0].how, TW_MERGE, "an update: a merge with -o merge");
    is_str(fake.call[0].etag, E1, "guarded by the cached ETag");
    is_str(fake.call[0].wire, "{}", "of no properties");
    fake_reset(0, E2);
    is_int(truncate_to(s, "/tbl/p/b.json", 0), -ENOENT, "truncate what is not listed");
    is_int(fake.n, 0, "nothing is sent");
    free(text);
    free_store(s);
}

static int delete (struct store *s, const char *path)
{
    struct fspath fp;
    int rc;

    fspath_parse(path, &fp);
    rc = store_delete(s, &fp, path);
    fspath_free(&fp);
    return rc;
}

/* A delete is guarded by the cached ETag; once done, the entity is known
 * absent (no request) and gone from the listing. A stale or missing entity
 * drops the listing; any other failure only the entity. */
static void test_delete(void)
{
    struct store *s = new_store();
    struct fspath fp;
    struct cache_file f = { 0 };

    is_int(delete (s, "/tbl/p/a.json"), 0, "delete a");
    ok(fake.n == 1 && fake.call[0].op == OP_REMOVE, "one remove");
    is_str(fake.call[0].etag, E1, "guarded by the cached ETag");
    ok(fake.call[0].rk && strcmp(fake.call[0].rk, "a") == 0, "of RowKey a");
    fspath_parse("/tbl/p/a.json", &fp);
    is_int(store_load(s, &fp, "/tbl/p/a.json", &f), -ENOENT, "a is known absent");
    fspath_free(&fp);
    ok(listed(s, "a.json") == 0 && listed(s, "c.json") == 1, "and gone from the listing");
    fake_reset(0, E2);
    is_int(delete (s, "/tbl/p/b.json"), -ENOENT, "delete what is not listed");
    is_int(fake.n, 0, "nothing is sent");
    fake_reset(-EIO, E2);
    is_int(delete (s, "/tbl/p/c.json"), -EIO, "a failed delete");
    ok(!cached(s, "/tbl/p/c.json") && listed(s, "c.json") == 1,
       "-EIO: the entity is dropped, the listing kept");
    free_store(s);
    s = new_store();
    fake_reset(-ESTALE, E2);
    is_int(delete (s, "/tbl/p/c.json"), -ESTALE, "a stale delete");
    ok(!cached(s, "/tbl/p/c.json") && listed(s, "a.json") == -1,
       "-ESTALE: the entity and the listing are dropped");
    free_store(s);
}

/* --- rename ---------------------------------------------------------------------- */

static int rename_to(struct store *s, const char *from, const char *to, char **from_etag,
                     char **to_etag)
{
    struct fspath ff, tf;
    int rc;

    fspath_parse(from, &ff);
    fspath_parse(to, &tf);
    rc = store_rename(s, from, &ff, to, &tf, from_etag, to_etag);
    fspath_free(&ff);
    fspath_free(&tf);
    return rc;
}

/* Onto a name not listed: an insert of the source's entity (to_etag NULL)
 * and the delete of the source guarded by its ETag; afterwards the source
 * is known absent and the target shown with its new ETag. */
static void test_rename_new(void)
{
    struct store *s = new_store();
    struct cache_file f = { 0 };
    struct fspath fp;
    char *from_etag = NULL, *to_etag = NULL, *etag = NULL, *text;

    is_int(rename_to(s, "/tbl/p/a.json", "/tbl/p/b.json", &from_etag, &to_etag), 0,
           "rename a -> b");
    ok(fake.n == 1 && fake.call[0].op == OP_RENAME, "one move");
    is_str(fake.call[0].path, "/tbl/p/a.json", "from a");
    is_str(fake.call[0].to, "/tbl/p/b.json", "to b");
    ok(fake.call[0].from_rk && strcmp(fake.call[0].from_rk, "a") == 0 && fake.call[0].rk &&
           strcmp(fake.call[0].rk, "b") == 0,
       "the keys are the paths'");
    is_str(fake.call[0].etag, E1, "the source guarded by its ETag");
    ok(fake.call[0].to_etag == NULL, "no target: no to_etag (an insert)");
    is_str(fake.call[0].wire, "{\"n\":2.0,\"n@odata.type\":\"Edm.Double\",\"s\":\"x\"}",
           "the source's typed properties are written");
    is_str(from_etag, E1, "from_etag: the ETag the source had");
    is_str(to_etag, E2, "to_etag: the one the target got");
    fspath_parse("/tbl/p/a.json", &fp);
    is_int(store_load(s, &fp, "/tbl/p/a.json", &f), -ENOENT, "the source is known absent");
    fspath_free(&fp);
    text = shown(s, "/tbl/p/b.json", &etag);
    ok(text != NULL, "the target is cached");
    is_str(etag, E2, "with its new ETag");
    ok(listed(s, "a.json") == 0 && listed(s, "b.json") == 1, "the listing follows");
    free(text), free(etag), free(from_etag), free(to_etag);
    free_store(s);
}

/* Onto an existing entity: a replace guarded by the target's ETag. A
 * failed move hands back no ETag and drops both entities and the listing. */
static void test_rename_over(void)
{
    struct store *s = new_store();
    char *from_etag = NULL, *to_etag = NULL;

    is_int(rename_to(s, "/tbl/p/a.json", "/tbl/p/c.json", &from_etag, &to_etag), 0,
           "rename a -> c");
    is_str(fake.call[0].etag, E1, "from_etag: a's");
    is_str(fake.call[0].to_etag, E3, "to_etag: c's (a replace)");
    free(from_etag), free(to_etag);
    free_store(s);
    s = new_store();
    fake_reset(-ESTALE, E2);
    is_int(rename_to(s, "/tbl/p/a.json", "/tbl/p/c.json", &from_etag, &to_etag), -ESTALE,
           "a stale move");
    ok(from_etag == NULL && to_etag == NULL, "no ETags handed back");
    ok(!cached(s, "/tbl/p/a.json") && !cached(s, "/tbl/p/c.json"), "both are dropped");
    is_int(listed(s, "a.json"), -1, "and the partition's listing");
    free_store(s);
    s = new_store();
    is_int(rename_to(s, "/tbl/p/b.json", "/tbl/p/c.json", &from_etag, &to_etag), -ENOENT,
           "a source not listed");
    is_int(fake.n, 0, "nothing is sent");
    free_store(s);
}

int main(void)
{
    test_unchanged();
    test_changed();
    test_write_kinds();
    test_invalid();
    test_save_shown();
    test_save_conflicts();
    test_save_over();
    test_truncate();
    test_delete();
    test_rename_new();
    test_rename_over();
    return done_testing();
}

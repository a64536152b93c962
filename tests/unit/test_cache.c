/* test_cache.c - unit tests for the entity/listing cache: freshness, LRU bound, copies. */
#include <errno.h>
#include <unistd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/cache.h"
#include "tap.h"

static void test_files(void)
{
    struct cache *c = cache_new(1 << 20, 60);
    struct cache_file f;
    struct timespec mt = { 1700000000, 5 };
    size_t len = 0;
    struct timespec got;

    ok(c != NULL, "cache_new");
    is_int(cache_get_file(c, "/t/p/a.json", &f), -ENOENT, "miss on empty cache");
    is_int(cache_put_file(c, "/t/p/a.json", "{}\n", 3, "W/\"e1\"", mt, 0), 0, "put");
    is_int(cache_get_file(c, "/t/p/a.json", &f), 0, "hit");
    is_str(f.data, "{}\n", "data copied");
    is_int(f.len, 3, "length");
    is_str(f.etag, "W/\"e1\"", "etag copied");
    is_int(f.mtime.tv_sec, 1700000000, "mtime");
    cache_file_clear(&f);
    is_int(cache_file_attr(c, "/t/p/a.json", &len, &got), 0, "attr hit");
    is_int(len, 3, "attr length");
    is_int(cache_put_file(c, "/t/p/a.json", "{\"x\":1}\n", 8, NULL, mt, 0), 0, "replace");
    is_int(cache_get_file(c, "/t/p/a.json", &f), 0, "hit after replace");
    is_str(f.data, "{\"x\":1}\n", "replaced data");
    ok(f.etag == NULL, "replaced etag absent");
    cache_file_clear(&f);
    cache_invalidate(c, "/t/p/a.json");
    is_int(cache_get_file(c, "/t/p/a.json", &f), -ENOENT, "miss after invalidate");
    cache_free(c);
}

/* A sealed listing of COUNT entries from NAMES/KEYS; file attributes when
 * ATTR (size = index + 10). */
static struct listing *make_listing(const char *const *names, const char *const *keys, int count,
                                    int attr)
{
    struct listing *l = listing_new();
    struct timespec mt = { 1700000000, 7 };

    for (int i = 0; l && i < count; i++)
        listing_add(l, names[i], keys[i], attr, (uint64_t)i + 10, mt);
    return l;
}

static void test_dirs(void)
{
    static const char *const names[] = { "a.json", "%2E.json" };
    static const char *const keys[] = { "a", "." };
    struct cache *c = cache_new(1 << 20, 60);
    struct listing *in = make_listing(names, keys, 2, 1), *out, *empty = listing_new();
    struct listing_ent e;
    struct timespec mt;
    size_t len;
    char *key;

    is_int(cache_dir_lookup(c, "/t/p", "a.json", &key), -EAGAIN, "lookup without listing");
    ok(cache_get_listing(c, "/t/p") == NULL, "no listing yet");
    is_int(cache_put_listing(c, "/t/p", in, 0), 0, "put listing");
    listing_unref(in); /* the cache holds its own reference */
    out = cache_get_listing(c, "/t/p");
    ok(out != NULL, "get listing");
    is_int(listing_count(out), 2, "two entries");
    listing_get(out, 1, &e);
    is_str(e.name, "%2E.json", "name kept");
    ok(e.key_len == 1 && e.key[0] == '.', "key kept");
    cache_invalidate(c, "/t/p");
    is_int(listing_count(out), 2, "a held reference outlives invalidation");
    listing_unref(out);
    in = make_listing(names, keys, 2, 1);
    cache_put_listing(c, "/t/p", in, 0);
    listing_unref(in);
    is_int(cache_dir_lookup(c, "/t/p", "%2E.json", &key), 0, "lookup hit");
    is_str(key, ".", "lookup key");
    free(key);
    is_int(cache_dir_lookup(c, "/t/p", "zz.json", NULL), -ENOENT, "listed dir lacks name");
    is_int(cache_dir_attr(c, "/t/p", "%2E.json", &len, &mt), 0, "attributes from listing");
    is_int(len, 11, "listed size");
    is_int(mt.tv_sec, 1700000000, "listed mtime");
    is_int(cache_dir_attr(c, "/t/p", "zz.json", &len, &mt), -ENOENT, "attr: not listed");
    is_int(cache_dir_attr(c, "/t/x", "a.json", &len, &mt), -EAGAIN, "attr: no listing");
    is_int(cache_put_listing(c, "/t/q", empty, 0), 0, "empty listing");
    listing_unref(empty);
    out = cache_get_listing(c, "/t/q");
    ok(out && listing_count(out) == 0, "empty listing cached");
    listing_unref(out);
    in = make_listing(names, keys, 2, 0);
    cache_put_listing(c, "/t/r", in, 0);
    listing_unref(in);
    is_int(cache_dir_attr(c, "/t/r", "a.json", &len, &mt), -EAGAIN,
           "attr: listed without attributes");
    cache_free(c);
}

static void test_exists(void)
{
    static const char *const one[] = { "a.json" }, *const onekey[] = { "a" };
    struct cache *c = cache_new(1 << 20, 60);
    struct listing *l;

    is_int(cache_exists(c, "/t/p"), 0, "unknown dir does not exist");
    is_int(cache_put_exists(c, "/t/p"), 0, "marker stored");
    is_int(cache_exists(c, "/t/p"), 1, "marker says it exists");
    cache_invalidate(c, "/t/p");
    is_int(cache_exists(c, "/t/p"), 0, "invalidated marker");
    l = listing_new();
    cache_put_listing(c, "/t/q", l, 0);
    listing_unref(l);
    is_int(cache_exists(c, "/t/q"), 0, "empty listing is not existence");
    l = make_listing(one, onekey, 1, 0);
    cache_put_listing(c, "/t/q", l, 0);
    listing_unref(l);
    is_int(cache_exists(c, "/t/q"), 1, "listing with an entry is existence");
    is_int(cache_put_exists(c, "/t/q"), 0, "marker over a listing");
    is_int(cache_dir_lookup(c, "/t/q", "a.json", NULL), 0, "listing kept under the marker");
    cache_free(c);
}

static void test_listing_bound(void)
{
    /* a listing charged more than the whole cache is not kept */
    struct cache *c = cache_new(2000, 60);
    struct listing *l = listing_new();
    struct timespec mt = { 0, 0 };
    char name[32];

    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof(name), "%d.json", i);
        listing_add(l, name, name, 1, 1, mt);
    }
    is_int(cache_put_listing(c, "/t/p", l, 0), 0, "oversize listing put ok");
    ok(cache_get_listing(c, "/t/p") == NULL, "oversize listing not kept");
    is_int(listing_count(l), 200, "caller's reference intact");
    listing_unref(l);
    cache_free(c);
}

static void test_bound_and_lru(void)
{
    /* room for a few 1000-byte files only */
    struct cache *c = cache_new(4000, 60);
    struct timespec mt = { 0, 0 };
    char data[1000], path[32];
    struct cache_stats st;
    struct cache_file f;

    memset(data, 'x', sizeof(data));
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "/t/p/%d.json", i);
        cache_put_file(c, path, data, sizeof(data), NULL, mt, 0);
    }
    /* touch 0 so that 1 is the least recently used */
    ok(cache_get_file(c, "/t/p/0.json", &f) == 0, "0 present");
    cache_file_clear(&f);
    cache_put_file(c, "/t/p/3.json", data, sizeof(data), NULL, mt, 0);
    cache_get_stats(c, &st);
    ok(st.bytes <= 4000, "bytes within bound (%zu)", st.bytes);
    ok(st.evictions >= 1, "evicted something");
    is_int(cache_get_file(c, "/t/p/1.json", &f), -ENOENT, "LRU entry evicted");
    ok(cache_get_file(c, "/t/p/0.json", &f) == 0, "recently used entry kept");
    cache_file_clear(&f);
    ok(cache_get_file(c, "/t/p/3.json", &f) == 0, "new entry present");
    cache_file_clear(&f);
    /* an entry larger than the cache is not kept */
    {
        char *big = calloc(1, 8000);

        is_int(cache_put_file(c, "/t/p/big.json", big, 8000, NULL, mt, 0), 0, "oversize put ok");
        is_int(cache_get_file(c, "/t/p/big.json", &f), -ENOENT, "oversize not kept");
        free(big);
    }
    cache_free(c);
}

static void test_expiry(void)
{
    struct cache *c = cache_new(1 << 20, 0.05);
    struct timespec mt = { 0, 0 }, ts = { 0, 100 * 1000000L };
    struct cache_file f;
    struct cache *z = cache_new(1 << 20, 0);

    cache_put_file(c, "/t/p/a.json", "x", 1, NULL, mt, 0);
    ok(cache_get_file(c, "/t/p/a.json", &f) == 0, "fresh");
    cache_file_clear(&f);
    nanosleep(&ts, NULL);
    is_int(cache_get_file(c, "/t/p/a.json", &f), -ENOENT, "expired after ttl");
    cache_free(c);
    cache_put_file(z, "/t/p/a.json", "x", 1, NULL, mt, 0);
    is_int(cache_get_file(z, "/t/p/a.json", &f), -ENOENT, "ttl 0 keeps nothing");
    cache_free(z);
}

static void test_many(void)
{
    struct cache *c = cache_new(64 << 20, 60);
    struct timespec mt = { 0, 0 };
    struct cache_stats st;
    char path[64];
    int missing = 0;
    size_t len;

    for (int i = 0; i < 20000; i++) {
        snprintf(path, sizeof(path), "/t/p/%d.json", i);
        cache_put_file(c, path, path, strlen(path), NULL, mt, 0);
    }
    for (int i = 0; i < 20000; i++) {
        snprintf(path, sizeof(path), "/t/p/%d.json", i);
        if (cache_file_attr(c, path, &len, &mt) != 0 || len != strlen(path))
            missing++;
    }
    cache_get_stats(c, &st);
    is_int(missing, 0, "20000 entries all found after table growth");
    is_int(st.entries, 20000, "entry count");
    cache_free(c);
}

/* A listing whose directory's entities are cached or read is in use: it
 * outlives older entities of its directory (a listing saves a whole scan
 * and answers every stat). */
static void test_listings_outlive_entities(void)
{
    const char *names[] = { "a.json", "b.json" }, *keys[] = { "a", "b" };
    struct cache *c = cache_new(4000, 60);
    struct listing *l = make_listing(names, keys, 2, 1), *got;
    struct timespec mt = { 0, 0 };
    char data[1000], path[32];
    struct cache_file f;

    memset(data, 'x', sizeof(data));
    is_int(cache_put_listing(c, "/t/p", l, 0), 0, "listing cached");
    for (int i = 0; i < 6; i++) { /* twice what fits, all newer than the listing */
        snprintf(path, sizeof(path), "/t/p/%d.json", i);
        cache_put_file(c, path, data, sizeof(data), NULL, mt, 0);
    }
    got = cache_get_listing(c, "/t/p");
    ok(got != NULL, "the least recently used listing outlived newer entities");
    listing_unref(got);
    is_int(cache_get_file(c, "/t/p/0.json", &f), -ENOENT, "the oldest entity went instead");
    ok(cache_get_file(c, "/t/p/5.json", &f) == 0, "the newest entity is kept");
    cache_file_clear(&f);
    listing_unref(l);
    cache_free(c);
}

/* A listing no longer used goes before newer entities: the listings of
 * the partitions a walk has left do not pile up and push out the entities
 * of the ones it reads. Reading an entity uses its listing again. */
static void test_listings_of_left_directories_go(void)
{
    const char *names[] = { "a.json", "b.json" }, *keys[] = { "a", "b" };
    struct cache *c = cache_new(5000, 60);
    struct listing *la = make_listing(names, keys, 2, 1), *lb = make_listing(names, keys, 2, 1);
    struct listing *got;
    struct timespec mt = { 0, 0 };
    char data[1000], path[32];
    struct cache_file f;

    memset(data, 'x', sizeof(data));
    is_int(cache_put_listing(c, "/t/left", la, 0), 0, "listing of a directory left");
    is_int(cache_put_file(c, "/t/read/0.json", data, sizeof(data), NULL, mt, 0), 0,
           "an entity of another");
    is_int(cache_put_listing(c, "/t/read", lb, 0), 0, "its listing");
    ok(cache_get_file(c, "/t/read/0.json", &f) == 0, "the entity read");
    cache_file_clear(&f);
    for (int i = 1; i < 5; i++) { /* more than fits, all in /t/read */
        snprintf(path, sizeof(path), "/t/read/%d.json", i);
        cache_put_file(c, path, data, sizeof(data), NULL, mt, 0);
    }
    got = cache_get_listing(c, "/t/left");
    ok(got == NULL, "the listing of the directory left went first");
    listing_unref(got);
    got = cache_get_listing(c, "/t/read");
    ok(got != NULL, "the listing of the directory in use stayed");
    listing_unref(got);
    ok(cache_get_file(c, "/t/read/4.json", &f) == 0, "the newest entity is kept");
    cache_file_clear(&f);
    listing_unref(la);
    listing_unref(lb);
    cache_free(c);
}

/* Two threads on one path: one stores existence markers over and over
 * (cache_put_exists looks for a listing there first), the other drops and
 * replaces what is there, freeing the entry cache_put_exists just found.
 * cache_put_exists must not touch that entry once it let go of the lock:
 * under ThreadSanitizer (configure --enable-tsan) such a touch is a
 * reported race or use after free, and the test fails. */
#define RACE_ROUNDS 20000

struct race {
    struct cache *c;
    atomic_int done;
};

static void *race_dropper(void *p)
{
    static const char *const one[] = { "a.json" }, *const onekey[] = { "a" };
    struct race *r = p;

    for (int i = 0; !atomic_load(&r->done); i++) {
        if (i % 4 == 3) { /* a listing replaces the marker */
            struct listing *l = make_listing(one, onekey, 1, 0);

            cache_put_listing(r->c, "/t/p", l, 0);
            listing_unref(l);
        } else {
            cache_invalidate(r->c, "/t/p");
        }
    }
    return NULL;
}

static void test_put_exists_race(void)
{
    struct race r = { cache_new(1 << 20, 60), 0 };
    pthread_t t;
    int failed = 0;

    ok(pthread_create(&t, NULL, race_dropper, &r) == 0, "dropper thread started");
    for (int i = 0; i < RACE_ROUNDS; i++)
        failed += cache_put_exists(r.c, "/t/p") != 0;
    atomic_store(&r.done, 1);
    pthread_join(t, NULL);
    is_int(failed, 0, "%d markers stored while the entry kept being dropped", RACE_ROUNDS);
    is_int(cache_put_exists(r.c, "/t/p"), 0, "a marker after the race");
    is_int(cache_exists(r.c, "/t/p"), 1, "and it says the directory exists");
    cache_free(r.c);
}

/* The negative lifetime: a listing says "absent" only while it is young
 * or owned; absence markers; edits of a cached listing; walk activity. */
static void test_negative_lifetime(void)
{
    static const char *const names[] = { "a.json", "c.json" };
    static const char *const keys[] = { "a", "c" };
    struct cache *c = cache_new(1 << 20, 60);
    struct listing *l = make_listing(names, keys, 2, 1), *got, *empty = listing_new();
    struct timespec mt = { 1700000000, 0 };
    struct listing_ent e;
    size_t len;

    cache_set_negative_ttl(c, 0.05);
    cache_put_listing(c, "/t/p", l, 0);
    is_int(cache_dir_lookup(c, "/t/p", "b.json", NULL), -ENOENT, "young listing: absent");
    usleep(80000);
    is_int(cache_dir_lookup(c, "/t/p", "b.json", NULL), -EAGAIN, "older: ask the service");
    is_int(cache_dir_lookup(c, "/t/p", "a.json", NULL), 0, "older: still names what it has");
    is_int(cache_dir_attr(c, "/t/p", "b.json", &len, &mt), -EAGAIN, "attr: ask too");
    ok(!cache_dir_active(c, "/t/p"), "no walk after the lifetime");
    cache_dir_touch(c, "/t/p");
    ok(cache_dir_active(c, "/t/p"), "touched: a walk");
    ok(cache_dir_walk(c, "/t/p", "a.json"), "an open in an active directory: a walk's");
    ok(!cache_dir_walk(c, "/t/p", "a.json"), "the same file again: not a walk's");
    ok(cache_dir_walk(c, "/t/p", "c.json"), "another file: a walk's again");
    /* edits: added in key order, replaced, removed; freshness kept */
    is_int(cache_dir_edit(c, "/t/p", "b.json", "b", 1, 5, mt, 0), 0, "add b");
    got = cache_get_listing(c, "/t/p");
    ok(got && listing_count(got) == 3, "three names");
    if (got) {
        listing_get(got, 1, &e);
        is_str(e.name, "b.json", "b between a and c");
        ok(e.has_attr && e.size == 5, "with its size");
    }
    listing_unref(got);
    is_int(cache_dir_edit(c, "/t/p", "a.json", "a", 0, 0, mt, 1), 0, "remove a");
    is_int(cache_dir_lookup(c, "/t/p", "a.json", NULL), -EAGAIN, "a gone (old listing)");
    is_int(cache_dir_edit(c, "/t/none", "x.json", "x", 0, 0, mt, 0), -EAGAIN,
           "no listing: nothing to edit");
    /* owned: answers absence for its life, renewed by edits */
    cache_put_listing(c, "/t/q", empty, CACHE_OWNED);
    ok(cache_dir_owned(c, "/t/q") && !cache_dir_owned(c, "/t/p"), "owned");
    usleep(80000);
    is_int(cache_dir_lookup(c, "/t/q", "x.json", NULL), -ENOENT, "owned: absent still");
    ok(cache_known_dir(c, "/t/q"), "an empty listing is a known directory");
    /* absence markers last the negative lifetime */
    cache_put_absent(c, "/t/p/z.json");
    ok(cache_absent(c, "/t/p/z.json"), "absent");
    usleep(80000);
    ok(!cache_absent(c, "/t/p/z.json"), "absence forgotten after the lifetime");
    /* a short listing (the table list) expires with the negative lifetime */
    cache_put_listing(c, "/", l, CACHE_SHORT);
    ok(cache_known_dir(c, "/"), "short listing there");
    usleep(80000);
    ok(!cache_known_dir(c, "/"), "short listing gone");
    /* a file's age and origin */
    {
        struct cache_file f;

        cache_put_file(c, "/t/p/a.json", "{}", 2, "e", mt, CACHE_LISTED);
        is_int(cache_get_file(c, "/t/p/a.json", &f), 0, "get");
        ok(f.listed && f.age >= 0 && f.age < 1, "listed, young");
        cache_file_clear(&f);
    }
    listing_unref(l);
    listing_unref(empty);
    cache_free(c);
}

/* A file a walk has read (cache_used_once) goes before the ones not read
 * yet, even those put in the cache before it was read. */
static void test_used_once_goes_first(void)
{
    struct cache *c = cache_new(4000, 60);
    struct timespec mt = { 0, 0 };
    char data[1000], path[32];
    struct cache_file f;

    memset(data, 'x', sizeof(data));
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "/t/p/%d.json", i);
        cache_put_file(c, path, data, sizeof(data), NULL, mt, 0);
    }
    /* 2, the most recent, is read by a walk; 0 is the least recently used */
    ok(cache_get_file(c, "/t/p/2.json", &f) == 0, "2 present");
    cache_file_clear(&f);
    cache_used_once(c, "/t/p/2.json");
    cache_used_once(c, "/t/p/none.json"); /* not cached: nothing */
    cache_put_file(c, "/t/p/3.json", data, sizeof(data), NULL, mt, 0);
    is_int(cache_get_file(c, "/t/p/2.json", &f), -ENOENT, "the file read once went first");
    ok(cache_get_file(c, "/t/p/0.json", &f) == 0, "the least recently used one stayed");
    cache_file_clear(&f);
    /* the only entry, used once: still there, and still the one to go */
    cache_invalidate(c, "/t/p/0.json");
    cache_invalidate(c, "/t/p/1.json");
    cache_used_once(c, "/t/p/3.json");
    ok(cache_get_file(c, "/t/p/3.json", &f) == 0, "used once, kept until room is needed");
    cache_file_clear(&f);
    cache_free(c);
}

int main(void)
{
    test_files();
    test_dirs();
    test_exists();
    test_listing_bound();
    test_bound_and_lru();
    test_used_once_goes_first();
    test_listings_outlive_entities();
    test_listings_of_left_directories_go();
    test_expiry();
    test_many();
    test_put_exists_race();
    test_negative_lifetime();
    return done_testing();
}

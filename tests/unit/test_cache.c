/* test_cache.c - unit tests for the entity/listing cache: freshness, LRU bound, copies. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
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
    is_int(cache_put_file(c, "/t/p/a.json", "{}\n", 3, "W/\"e1\"", mt), 0, "put");
    is_int(cache_get_file(c, "/t/p/a.json", &f), 0, "hit");
    is_str(f.data, "{}\n", "data copied");
    is_int(f.len, 3, "length");
    is_str(f.etag, "W/\"e1\"", "etag copied");
    is_int(f.mtime.tv_sec, 1700000000, "mtime");
    cache_file_clear(&f);
    is_int(cache_file_attr(c, "/t/p/a.json", &len, &got), 0, "attr hit");
    is_int(len, 3, "attr length");
    is_int(cache_put_file(c, "/t/p/a.json", "{\"x\":1}\n", 8, NULL, mt), 0, "replace");
    is_int(cache_get_file(c, "/t/p/a.json", &f), 0, "hit after replace");
    is_str(f.data, "{\"x\":1}\n", "replaced data");
    ok(f.etag == NULL, "replaced etag absent");
    cache_file_clear(&f);
    cache_invalidate(c, "/t/p/a.json");
    is_int(cache_get_file(c, "/t/p/a.json", &f), -ENOENT, "miss after invalidate");
    cache_free(c);
}

static void test_dirs(void)
{
    struct cache *c = cache_new(1 << 20, 60);
    struct cache_dirent in[] = { { "a.json", "a" }, { "%2E.json", "." } };
    struct cache_dirent *out;
    size_t n;
    char *key;

    is_int(cache_dir_lookup(c, "/t/p", "a.json", &key), -EAGAIN, "lookup without listing");
    is_int(cache_put_dir(c, "/t/p", in, 2), 0, "put dir");
    is_int(cache_get_dir(c, "/t/p", &out, &n), 0, "get dir");
    is_int(n, 2, "two entries");
    is_str(out[1].name, "%2E.json", "name kept");
    is_str(out[1].key, ".", "key kept");
    cache_dirents_free(out, n);
    is_int(cache_dir_lookup(c, "/t/p", "%2E.json", &key), 0, "lookup hit");
    is_str(key, ".", "lookup key");
    free(key);
    is_int(cache_dir_lookup(c, "/t/p", "zz.json", NULL), -ENOENT, "listed dir lacks name");
    is_int(cache_put_dir(c, "/t/q", NULL, 0), 0, "empty listing");
    is_int(cache_get_dir(c, "/t/q", &out, &n), 0, "empty listing cached");
    is_int(n, 0, "no entries");
    cache_dirents_free(out, n);
    cache_free(c);
}

static void test_exists(void)
{
    struct cache *c = cache_new(1 << 20, 60);
    struct cache_dirent one[] = { { "a.json", "a" } };

    is_int(cache_exists(c, "/t/p"), 0, "unknown dir does not exist");
    is_int(cache_put_exists(c, "/t/p"), 0, "marker stored");
    is_int(cache_exists(c, "/t/p"), 1, "marker says it exists");
    cache_invalidate(c, "/t/p");
    is_int(cache_exists(c, "/t/p"), 0, "invalidated marker");
    cache_put_dir(c, "/t/q", NULL, 0);
    is_int(cache_exists(c, "/t/q"), 0, "empty listing is not existence");
    cache_put_dir(c, "/t/q", one, 1);
    is_int(cache_exists(c, "/t/q"), 1, "listing with an entry is existence");
    is_int(cache_put_exists(c, "/t/q"), 0, "marker over a listing");
    is_int(cache_dir_lookup(c, "/t/q", "a.json", NULL), 0, "listing kept under the marker");
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
        cache_put_file(c, path, data, sizeof(data), NULL, mt);
    }
    /* touch 0 so that 1 is the least recently used */
    ok(cache_get_file(c, "/t/p/0.json", &f) == 0, "0 present");
    cache_file_clear(&f);
    cache_put_file(c, "/t/p/3.json", data, sizeof(data), NULL, mt);
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

        is_int(cache_put_file(c, "/t/p/big.json", big, 8000, NULL, mt), 0, "oversize put ok");
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

    cache_put_file(c, "/t/p/a.json", "x", 1, NULL, mt);
    ok(cache_get_file(c, "/t/p/a.json", &f) == 0, "fresh");
    cache_file_clear(&f);
    nanosleep(&ts, NULL);
    is_int(cache_get_file(c, "/t/p/a.json", &f), -ENOENT, "expired after ttl");
    cache_free(c);
    cache_put_file(z, "/t/p/a.json", "x", 1, NULL, mt);
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
        cache_put_file(c, path, path, strlen(path), NULL, mt);
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

int main(void)
{
    test_files();
    test_dirs();
    test_exists();
    test_bound_and_lru();
    test_expiry();
    test_many();
    return done_testing();
}

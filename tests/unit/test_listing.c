/* test_listing.c - unit tests for compact directory listings: keys, attributes, index, refs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "tap.h"

static void test_basic(void)
{
    struct listing *l = listing_new();
    struct timespec mt = { 1700000000, 123 }, none = { 0, 0 };
    struct listing_ent e;
    char *k;

    ok(l != NULL, "listing_new");
    is_int(listing_count(l), 0, "empty");
    is_int(listing_find(l, "a.json"), -1, "find in empty listing");
    is_int(listing_add(l, "a.json", "a", 1, 42, mt), 0, "add file whose name starts with key");
    is_int(listing_add(l, "%2E.json", ".", 1, 7, mt), 0, "add escaped name");
    is_int(listing_add(l, "part", "part", 0, 0, none), 0, "add directory without attributes");
    is_int(listing_add(l, "", "", 0, 0, none), 0, "add empty name");
    is_int(listing_count(l), 4, "four entries");
    /* unsealed: find scans */
    is_int(listing_find(l, "%2E.json"), 1, "find before sealing");
    is_int(listing_seal(l), 0, "seal");
    is_int(listing_seal(l), 0, "seal twice");
    is_int(listing_add(l, "b.json", "b", 0, 0, none), -EINVAL, "no add after sealing");
    listing_get(l, 0, &e);
    is_str(e.name, "a.json", "name 0");
    ok(e.key_len == 1 && strncmp(e.key, "a", 1) == 0, "key 0 shares the name's bytes");
    ok(e.has_attr && e.size == 42, "size 0");
    ok(e.mtime.tv_sec == 1700000000 && e.mtime.tv_nsec == 123, "mtime 0");
    listing_get(l, 1, &e);
    ok(e.key_len == 1 && e.key[0] == '.', "key 1 stored apart");
    listing_get(l, 2, &e);
    ok(!e.has_attr && e.size == 0, "no attributes for a directory");
    k = listing_key_dup(l, 1);
    is_str(k, ".", "key_dup");
    free(k);
    k = listing_key_dup(l, 3);
    is_str(k, "", "empty key dup");
    free(k);
    is_int(listing_find(l, "part"), 2, "find after sealing");
    is_int(listing_find(l, ""), 3, "find empty name");
    is_int(listing_find(l, "a"), -1, "key is not a name");
    is_int(listing_find(l, "a.jso"), -1, "prefix is not a name");
    ok(listing_ref(l) == l, "ref returns the listing");
    listing_unref(l);
    is_int(listing_count(l), 4, "still alive after one unref");
    listing_unref(l);
    listing_unref(NULL);
    ok(1, "unref NULL is harmless");
}

static void test_many(void)
{
    struct listing *l = listing_new();
    struct timespec mt = { 5, 0 };
    char name[96], key[64];
    int bad = 0, n = 100000;
    size_t bytes;

    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "row-%08d", i);
        snprintf(name, sizeof(name), "%s.json", key);
        if (listing_add(l, name, key, 1, (uint64_t)i, mt) != 0)
            bad++;
    }
    is_int(bad, 0, "100000 adds");
    is_int(listing_seal(l), 0, "seal 100000");
    for (int i = 0; i < n; i++) {
        struct listing_ent e;

        snprintf(name, sizeof(name), "row-%08d.json", i);
        if (listing_find(l, name) != i) {
            bad++;
            continue;
        }
        listing_get(l, (size_t)i, &e);
        if (e.size != (uint64_t)i || e.key_len != 12)
            bad++;
    }
    is_int(bad, 0, "every name found at its index with its attributes");
    is_int(listing_find(l, "row-00100000.json"), -1, "absent name");
    bytes = listing_bytes(l);
    /* 32-byte records + names (18 bytes + NUL) + an index of 4-byte slots */
    ok(bytes < (size_t)n * 80, "compact: %zu bytes for %d entries", bytes, n);
    listing_unref(l);
}

static void test_edit(void)
{
    struct listing *l = listing_new(), *e1, *e2, *e3;
    struct timespec mt = { 5, 6 };
    struct listing_ent e;

    listing_add(l, "a.json", "a", 1, 1, mt);
    listing_add(l, "c.json", "c", 1, 3, mt);
    listing_seal(l);
    e1 = listing_edit(l, "b.json", "b", 1, 2, mt, 0);
    ok(e1 && listing_count(e1) == 3 && listing_count(l) == 2, "added; the original kept");
    listing_get(e1, 1, &e);
    is_str(e.name, "b.json", "in key order");
    e2 = listing_edit(e1, "b.json", "b", 0, 0, mt, 0);
    listing_get(e2, 1, &e);
    ok(listing_count(e2) == 3 && !e.has_attr, "replaced, not doubled");
    e3 = listing_edit(e2, "a.json", "a", 0, 0, mt, 1);
    ok(listing_count(e3) == 2 && listing_find(e3, "a.json") < 0 && listing_find(e3, "c.json") == 1,
       "removed, index rebuilt");
    listing_unref(e3);
    e3 = listing_edit(e2, "zz.json", "zz", 0, 0, mt, 0);
    ok(listing_find(e3, "zz.json") == 3, "a key after all goes last");
    listing_unref(e3);
    e3 = listing_edit(e2, "%2E.json", ".", 0, 0, mt, 0);
    ok(listing_find(e3, "%2E.json") == 0, "a key before all goes first");
    listing_unref(e3);
    listing_unref(e2);
    listing_unref(e1);
    listing_unref(l);
}

/* Names added once whatever the order and however often they come (a
 * service without key order), the index kept as the listing grows; then
 * sorted by key. */
static void test_once_sorted(void)
{
    struct listing *l = listing_new(), *sorted;
    struct timespec t = { 0, 0 };
    struct listing_ent e;
    char name[32], key[32];
    int added = 0, again = 0, order = 1;

    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 5000; i++) {
            int k = (i * 7919) % 5000; /* a permutation of 0..4999 */
            int rc;

            snprintf(key, sizeof(key), "r%05d", k);
            snprintf(name, sizeof(name), "r%05d.json", k);
            rc = listing_add_once(l, name, key, 1, (uint64_t)k, t);
            added += rc == 0;
            again += rc == 1;
        }
    is_int(added, 5000, "each name added once");
    is_int(again, 10000, "a name seen again is not added");
    is_int((int)listing_count(l), 5000, "5000 entries");
    ok(listing_find(l, "r04321.json") >= 0 && listing_find(l, "r05000.json") < 0,
       "found by its name before the seal");
    sorted = listing_sorted(l);
    ok(sorted != NULL, "sorted copy");
    for (size_t i = 0; sorted && i < listing_count(sorted); i++) {
        listing_get(sorted, i, &e);
        snprintf(key, sizeof(key), "r%05zu", i);
        order &= e.key_len == 6 && memcmp(e.key, key, 6) == 0 && e.size == i;
    }
    ok(order, "in key order, attributes kept");
    ok(sorted && listing_find(sorted, "r00007.json") == 7, "the sorted copy is indexed");
    listing_unref(sorted);
    listing_unref(l);
}

int main(void)
{
    test_basic();
    test_many();
    test_edit();
    test_once_sorted();
    return done_testing();
}

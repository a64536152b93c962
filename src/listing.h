/* listing.h - compact, refcounted directory listings: names, keys and file attributes. */
#ifndef AZTFS_LISTING_H
#define AZTFS_LISTING_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* A listing is built by one owner (listing_add), then sealed (listing_seal)
 * and from then on never changes, so any number of threads may read it
 * while they hold a reference. Strings live in one arena and each entry is
 * about 32 bytes plus its name, so 100,000 names cost a few MiB. */
struct listing;

/* A view of entry I (pointers borrowed from the listing; valid while the
 * caller holds a reference and, before sealing, until the next add). */
struct listing_ent {
    const char *name;          /* name as shown in the directory */
    const char *key;           /* the key it stands for (NOT NUL-terminated) */
    size_t key_len;
    int has_attr;              /* SIZE and MTIME are known (entity files) */
    uint64_t size;
    struct timespec mtime;
};

/* A new, empty, unsealed listing with one reference; NULL on ENOMEM. */
struct listing *listing_new(void);

/* Append an entry (strings copied). HAS_ATTR says whether SIZE/MTIME mean
 * anything. Only before sealing. Returns 0, -ENOMEM, or -EFBIG past 4 GiB. */
int listing_add(struct listing *l, const char *name, const char *key, int has_attr,
                uint64_t size, struct timespec mtime);

/* Freeze L and build its name index. Returns 0 or -ENOMEM (L stays usable
 * unsealed; listing_find then scans). Sealing twice is harmless. */
int listing_seal(struct listing *l);

size_t listing_count(const struct listing *l);

/* Fill *out with entry I (I < listing_count). */
void listing_get(const struct listing *l, size_t i, struct listing_ent *out);

/* Index of NAME, or -1 when absent. */
long listing_find(const struct listing *l, const char *name);

/* Malloc'd copy of entry I's key; NULL on ENOMEM. */
char *listing_key_dup(const struct listing *l, size_t i);

/* A new sealed listing: L without NAME and, unless REMOVE, with NAME
 * (KEY, attributes as for listing_add) placed before the first entry whose
 * key sorts after KEY (the service's order). L (sealed or not) is not
 * changed: readers holding it keep their snapshot. O(entries). Returns
 * NULL on ENOMEM or past 4 GiB. */
struct listing *listing_edit(const struct listing *l, const char *name, const char *key,
                             int has_attr, uint64_t size, struct timespec mtime, int remove);

/* Bytes of memory held (for cache accounting). */
size_t listing_bytes(const struct listing *l);

/* Take another reference (returns L); drop one (frees at zero; NULL ok). */
struct listing *listing_ref(struct listing *l);
void listing_unref(struct listing *l);

#endif

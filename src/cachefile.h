/* cachefile.h - what the cache hands out and is given: a cached entity
 * file, and the flags of its puts. A leaf: cache.h and the cache's inside
 * (cache_int.h) both include it, so neither includes the other. */
#ifndef AZTFS_CACHEFILE_H
#define AZTFS_CACHEFILE_H

#include <stddef.h>
#include <time.h>

#define CACHE_DIGEST_LEN 32

/* A cached entity file (all members malloc'd copies owned by the holder). */
struct cache_file {
    char *data;               /* rendered JSON */
    size_t len;
    char *etag;               /* may be NULL */
    struct timespec mtime;    /* entity Timestamp */
    double age;               /* cache_get_file: seconds since it was current */
    int listed;               /* cache_get_file: it came with its directory's listing */
    int has_digest;           /* DIGEST holds what the service holds (entity.h) */
    unsigned char digest[CACHE_DIGEST_LEN];
};

/* Flags of cache_put_file and cache_put_listing. */
#define CACHE_LISTED 1u       /* a file that came with its directory's listing */
#define CACHE_OWNED  2u       /* a listing of a directory the mount made (below) */
#define CACHE_SHORT  4u       /* a listing kept only for the negative lifetime */

#endif

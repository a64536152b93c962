/* prefetch.h - partition listings fetched ahead of a walk (-o scan_parallel=N).
 *
 * When readdir hands out a table's partitions, the walk (find, grep -r,
 * rsync) enters them next in that order. The pool fetches their listings
 * into the cache before the walk gets there: a small fixed set of worker
 * threads owned by the mount (at most N fetches in flight, one request
 * each, beside the walker's own), jobs taken in the order they were added,
 * no two jobs for one directory (a second walker joins the one under way),
 * and no new job started while the listings fetched and not yet entered
 * hold a quarter of the cache (a fetch that alone grows past that stops
 * unless a walker waits for it, and the walker lists that partition
 * itself). A listing is put in the cache only
 * when complete; one that failed is simply not there, and the walker lists
 * it as it would without the pool. Part of the store layer: requests go
 * through scan.h. */
#ifndef AZTFS_PREFETCH_H
#define AZTFS_PREFETCH_H

#include <stddef.h>

#include "storecore.h"

struct prefetch;
/* The jobs added while one directory handle of a table is read. */
struct prefetch_walk;

/* A pool for store S (borrowed; it must outlive the pool) with N
 * workers, started when the first job is added. NULL when N <= 1, nothing
 * is cached (cache_timeout=0) or the cache is under 16 MiB: every function
 * below then does nothing (and the walk is today's, one fetch at a time). *err gets -ENOMEM on failure (else 0). */
struct prefetch *prefetch_new(struct store *s, int n, int *err);

/* Cancel every job, wait for the workers, free P (NULL: nothing). */
void prefetch_free(struct prefetch *p);

/* A new walk of TABLE in P (NULL when P is NULL or on ENOMEM: then
 * nothing is fetched ahead). */
struct prefetch_walk *prefetch_walk_new(struct prefetch *p, const char *table);

/* Fetch the listing of partition PK (PK_LEN bytes) of W's table, directory
 * DIR, ahead of W's walk, unless the cache holds it or a job for DIR
 * exists. Returns 0 or -ENOMEM (nothing queued: the walker lists it when it
 * gets there). W NULL: nothing. */
int prefetch_add(struct prefetch_walk *w, const char *pk, size_t pk_len, const char *dir);

/* The directory handle of W is closed. Unless its listing was read to the
 * end (COMPLETE: the walk goes on into the partitions), W's jobs are
 * cancelled: queued ones dropped, running ones stopped before their next
 * page. Frees W (NULL: nothing). */
void prefetch_walk_end(struct prefetch_walk *w, int complete);

/* A walker enters DIR: a job fetching it is waited for, a queued one is
 * run by the caller (other walkers entering DIR wait for it): either way
 * its listing is then in the cache, unless the fetch failed (the walker
 * then lists it itself). Nothing when P is NULL or no job names DIR. */
void prefetch_claim(struct prefetch *p, const char *dir);

#endif

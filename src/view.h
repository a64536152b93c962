/* view.h - query views: a table or a partition restricted to a user's
 * OData filter (/t/.where/FILTER/..., /t/pk/.where/FILTER/...), listed with
 * one paged, filtered query whose entities are cached under their normal
 * paths (a view and the table share the entity cache) and whose listings
 * are cached under the view's paths. A view's query is started by the
 * lookup of the view (which must fail when the service refuses the filter)
 * and streamed on by the readdir that follows: the pages in between wait
 * in the mount's table of views under way (struct view_pending). Read-only:
 * nothing here changes anything remote. Part of the store layer
 * (storecore.h): no FUSE, requests through table.h. */
#ifndef AZTFS_VIEW_H
#define AZTFS_VIEW_H

#include "fspath.h"
#include "listing.h"
#include "storecore.h"

/* The view queries a lookup started and no reader has taken over yet (at
 * most VIEW_PENDING_MAX; the oldest is dropped). Thread-safe. */
struct view_pending;
#define VIEW_PENDING_MAX 8

/* A new, empty table; NULL on ENOMEM. */
struct view_pending *view_pending_new(void);
/* Free VP and the queries waiting in it (NULL: nothing). */
void view_pending_free(struct view_pending *vp);

/* Does the ".where" directory FP (FSP_WHERE) stand: its table exists (and,
 * under a partition, the partition holds an entity)? Nothing is sent when
 * the mount knows. 0, -ENOENT, or -errno. */
int view_where_exists(struct store *s, struct fspath *fp);

/* Look up view directory DIR, parsed as FP (FSP_VIEW: the view, listing
 * partitions or, under a partition, entities; FSP_VIEW_PARTITION: a
 * partition of a table-level view). Known from a cached listing, else the
 * view's query is started: its first page (for a partition, up to its
 * first entity) is fetched and the query waits in VP for the reader.
 * Returns 0, -ENOENT (no such table; a partition the view does not hold),
 * -EINVAL (the filter is over the service's limits, nothing sent, or the
 * service refused it: one log line with its message), -EINTR, -errno
 * (logged). */
int view_lookup(struct store *s, struct view_pending *vp, struct fspath *fp, const char *dir);

/* The names of a view directory as a reader goes through them: the cached
 * listing, or a listing that grows page by page (cached when complete).
 * One reader at a time. */
struct view_reader;

/* A reader of view directory DIR (FP as for view_lookup): the cached
 * listing, the query its lookup left in VP, or a new query whose first page
 * is fetched here. Returns 0 with *out (free with view_reader_free), or as
 * view_lookup. */
int view_reader_open(struct store *s, struct view_pending *vp, struct fspath *fp,
                     const char *dir, struct view_reader **out);

/* Entry I of R (borrowed: valid while R is open), fetching pages until it
 * is in. Returns 0 with *e, 1 when the listing ended before I, or -errno
 * (logged). Does the reader list entity files (else partitions)? is in
 * view_reader_files. */
int view_reader_get(struct view_reader *r, size_t i, struct listing_ent *e);
int view_reader_files(const struct view_reader *r);
void view_reader_free(struct view_reader *r);

/* The entity FP (FSP_VIEW_ENTITY) outside the view: 0 with *nfp parsed
 * from *npath (malloc'd), keys filled in from the view's listing (its
 * directory read to its end when not cached); -ENOENT when the view does
 * not list it; else as view_lookup. Its partition is noted as being walked
 * (store_dir_read), so an open reads the copy the view's fresh listing
 * brought instead of asking again. */
int view_entity(struct store *s, struct view_pending *vp, struct fspath *fp,
                struct fspath *nfp, char **npath);

#endif

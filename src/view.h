/* view.h - query views: a table or a partition restricted to a user's
 * OData filter (/t/.where/FILTER/..., /t/pk/.where/FILTER/...), listed with
 * one paged, filtered query whose entities are cached under their normal
 * paths (a view and the table share the entity cache) and whose listings
 * are cached under the view's paths. Read-only: nothing here changes
 * anything remote. Part of the store layer (storecore.h): no FUSE,
 * requests through table.h. */
#ifndef AZTFS_VIEW_H
#define AZTFS_VIEW_H

#include "fspath.h"
#include "listing.h"
#include "storecore.h"

/* Does the ".where" directory FP (FSP_WHERE) stand: its table exists (and,
 * under a partition, the partition holds an entity)? Nothing is sent when
 * the mount knows. 0, -ENOENT, or -errno. */
int view_where_exists(struct store *s, struct fspath *fp);

/* The listing of view directory DIR, parsed as FP (FSP_VIEW: partitions,
 * or a partition's entities when scoped; FSP_VIEW_PARTITION: entities):
 * the cached one while fresh, else the view's query run to its end (pages
 * without an entity included, however many; ^C stops it). A table-level
 * view's query caches the listing of every partition it passes too, so
 * listing them costs nothing more. Returns 0 with *out (release with
 * listing_unref), -ENOENT (no such table, or a partition the view does not
 * hold), -EINVAL (the filter is over the service's limits, nothing sent, or
 * the service refused it: one log line with its message), -EINTR, -errno
 * (logged). */
int view_listing(struct store *s, struct fspath *fp, const char *dir, struct listing **out);

/* The entity FP (FSP_VIEW_ENTITY) outside the view: 0 with *nfp parsed
 * from *npath (malloc'd), keys filled in from the view's listing; -ENOENT
 * when the view does not list it; as view_listing. Its partition is noted
 * as being walked (store_dir_read), so an open reads the copy the view's
 * fresh listing brought instead of asking again. */
int view_entity(struct store *s, struct fspath *fp, struct fspath *nfp, char **npath);

#endif

/* table.h - the table protocol layer, the one header its users include:
 * Table service operations on entities and tables (table.c), and, through
 * the headers below, the client, status and OData helpers (tablereq.h),
 * paged queries (cursor.h) and entity group transactions (batch.h). */
#ifndef AZTFS_TABLE_H
#define AZTFS_TABLE_H

#include <jansson.h>

#include "batch.h"
#include "connstr.h"
#include "cursor.h"
#include "http.h"
#include "log.h"
#include "tablereq.h"
#include "userfilter.h"

/* Point query. On success *entity is a new reference (the wire object, with
 * "odata.etag"), and *etag (if ETAG non-NULL) a malloc'd copy of the ETag.
 * Returns 0, -ENOENT when no such entity, -EINVAL when PK or RK is NULL, or
 * -errno with details in *st. */
int table_get_entity(struct table_client *tc, const char *table, const char *pk,
                     const char *rk, json_t **entity, char **etag, struct az_status *st);

/* How an entity write is guarded. */
enum table_write {
    TW_INSERT,          /* POST: fails with EEXIST when the entity exists */
    TW_REPLACE,         /* PUT with If-Match: ETAG (ESTALE when it moved on) */
    TW_MERGE,           /* MERGE with If-Match: ETAG */
};

/* Write ENTITY (wire form, without keys: they come from PK/RK) to TABLE.
 * For TW_REPLACE/TW_MERGE, ETAG is required ("*" = any existing entity).
 * On success *new_etag (if non-NULL) is the malloc'd ETag the service
 * returned (NULL if none). Returns 0, or -errno (EEXIST, ESTALE, ENOENT,
 * EINVAL, EIO...) with details in *st. A 409 (insert) or 412 (replace,
 * merge) is -EEXIST/-ESTALE whenever the request was sent once. Only when an
 * earlier send may have been applied (http_response.resent) is the entity
 * read back, and the write counts as done when it holds exactly what was
 * sent with a Timestamp inside the window of our sends. */
int table_write_entity(struct table_client *tc, const char *table, const char *pk,
                       const char *rk, const json_t *entity, enum table_write how,
                       const char *etag, char **new_etag, struct az_status *st);

/* Delete with If-Match: ETAG ("*" for any). Returns 0, -ENOENT when the
 * service says the entity is not there (someone else deleted it; but 0 when
 * an earlier send of ours may have been applied: then the delete was ours),
 * -ESTALE, -EIO (a 404 without the service's not-found code, 5xx, no
 * response), -errno. */
int table_delete_entity(struct table_client *tc, const char *table, const char *pk,
                        const char *rk, const char *etag, struct az_status *st);

/* Create table NAME. Returns 0, -EEXIST when it exists (any case; but 0
 * when our own earlier send created it), or -errno with details in *st. */
int table_create(struct table_client *tc, const char *name, struct az_status *st);

/* Delete table NAME. Returns 0 (also when it is already gone), or -errno
 * with details in *st. */
int table_delete(struct table_client *tc, const char *name, struct az_status *st);

#endif

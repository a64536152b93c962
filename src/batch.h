/* batch.h - entity group transactions ($batch): the multipart request,
 * reading its answer, and settling one whose answer was lost. Part of the
 * table protocol layer (table.h includes it). */
#ifndef AZTFS_BATCH_H
#define AZTFS_BATCH_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

#include "tablereq.h"

/* One operation of an entity group transaction. */
struct table_batch_op {
    enum { TB_INSERT, TB_REPLACE, TB_MERGE, TB_DELETE } kind;
    const char *rk;             /* all operations share one PartitionKey */
    const json_t *entity;       /* TB_INSERT/TB_REPLACE/TB_MERGE */
    const char *etag;           /* If-Match for TB_REPLACE/TB_MERGE/TB_DELETE, NULL = "*" */
    char **new_etag;            /* writes, may be NULL: receives the
                                 * written entity's new ETag (see table_batch) */
};

/* Run OPS (at most 100, one partition PK of TABLE) atomically with $batch.
 * Returns 0 when every operation succeeded; else -errno of the failing one
 * (st->message names its index), and nothing was applied; -EINVAL for no
 * or more than 100 operations. A 409/412 is settled like a single write's:
 * only after a send that may have been applied, and then when every entity
 * holds the batch's result (written within the window of our sends,
 * deleted ones gone), that is success.
 * On success each non-NULL new_etag of a write gets a malloc'd copy of the
 * ETag its changeset response carried (for a settled batch: the ETag of
 * the entity found to hold our write), or NULL when there was none; on
 * failure NULL. */
int table_batch(struct table_client *tc, const char *table, const char *pk,
                const struct table_batch_op *ops, size_t n, struct az_status *st);

/* table_batch for a batch that was handed to the network before, at
 * FIRST_SENT (wall clock), and whose answer never came (a crash, a lost
 * answer): a 409/412 is then settled by the entities as for a resend, the
 * window of our sends starting at FIRST_SENT less 1 s. FIRST_SENT NULL:
 * table_batch. */
int table_batch_again(struct table_client *tc, const char *table, const char *pk,
                      const struct table_batch_op *ops, size_t n,
                      const struct timespec *first_sent, struct az_status *st);

/* The 0-based index of the operation a failed batch's error names (the
 * service begins the message with "INDEX:"), or -1 when it names none. */
int table_batch_failed_index(const struct az_status *st);

/* Parsers of $batch answers, exposed for the fuzz targets and tests. */

/* Find the first non-2xx "HTTP/1.1 NNN" status line in the NUL-terminated
 * $batch response BODY and fill ST from it (status, and code/message from
 * the JSON error after it). Returns 0 when every operation succeeded, -1
 * when one failed. */
int table_batch_outcome(const char *body, struct az_status *st);

/* The ETag header of the response to operation INDEX (counted from 0) of
 * the NUL-terminated $batch response BODY. Returns 0 with *etag a malloc'd
 * copy, or NULL when that response has no ETag (or there is no such
 * response); -ENOMEM. */
int table_batch_etag(const char *body, size_t index, char **etag);

#endif

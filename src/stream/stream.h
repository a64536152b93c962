/* stream/stream.h - the streams layer's face: a table, a partition or a
 * view read as one NDJSON file (export), and NDJSON written to a table or
 * a partition applied in entity group transactions (import). Above the
 * store, beside the cache: a stream's pages and lines pass through neither
 * the entity cache nor the listings. */
#ifndef AZTFS_STREAM_STREAM_H
#define AZTFS_STREAM_STREAM_H

#include "store/store.h"

/* ---- stream/export.c: export streams (/t/.ndjson, /t/pk/.ndjson and a
 * view's .ndjson: doc/USAGE.md, "Export streams"): a table's, a
 * partition's or a view's entities as NDJSON, one line per entity
 * (entity_render_line), read page by page from the service without the
 * cache. No FUSE; entities through the store, requests through table.h. */

/* Does stream FP (FSP_STREAM, FSP_VIEW_STREAM) stand: its table exists,
 * and its partition (when it has one) holds an entity, and a view's filter
 * is within the service's limits (-EINVAL, logged; nothing sent)? Nothing is
 * sent when the mount knows. 0, -ENOENT, -EINVAL, or -errno. */
int export_exists(struct store *s, struct fspath *fp);

/* One open stream: its query, the page being read and the pages fetched
 * ahead (at most s->scan_ways + 2, or one). Reads are serialised by its
 * own lock. */
struct export_stream;

/* Open stream FP (FSP_STREAM, FSP_VIEW_STREAM; a long-form partition name
 * is resolved here) at PATH (for log lines): with write-behind, the table's
 * queued changes are sent first; the query is started and its first page
 * fetched. Returns 0 with *out (free with export_free), -ENOENT (no such
 * table, or partition name), -EINVAL (a filter over the limits, or one the
 * service refused: logged), -EINTR, or -errno (logged). */
int export_open(struct store *s, struct fspath *fp, const char *path, struct export_stream **out);

/* Copy SIZE bytes of X's stream at OFF (where the last read ended: it is
 * opened non-seekable) into BUF in full, as a regular file's read: the page
 * held, then the next ones, fetched now, until SIZE bytes or the stream's
 * end (a failure after some bytes ends the read there, the next read
 * reporting it). Returns the bytes copied (0: the end), -ESPIPE (OFF is
 * elsewhere: logged, nothing read), or -errno (logged as for export_open). */
int export_read(struct export_stream *x, char *buf, size_t size, unsigned long long off);

/* Free X (NULL: nothing): its fetches under way are waited for (a split's
 * workers finish the request they have out), none is sent after. */
void export_free(struct export_stream *x);

/* ---- stream/import.c: NDJSON written to a table's or a partition's stream
 * (/t/.ndjson, /t/pk/.ndjson: doc/USAGE.md, "Import"), applied in entity
 * group transactions of up to 100 entities of one partition. No FUSE. */

/* One stream being written: the line not yet ended, the transactions being
 * filled (one per partition, at most 1,024 and 16 MiB of lines together),
 * queued (the cache's size of lines in memory, the rest in the spool: -o
 * spool_dir) and out (scan_ways, spread over the partitions, each on a
 * sender thread of its own). */
struct import_stream;

/* Open stream FP (FSP_STREAM; a table's or a partition's; a long-form
 * partition name is resolved here) at PATH (for log lines) for writing:
 * each line an entity, applied as Insert Or Replace (the entity becomes
 * the line's), or as Insert when INSERT (an entity that exists fails the
 * stream, -EEXIST). With write-behind, the table's queued changes are sent
 * first. Returns 0 with *out (free with import_free), -ENOENT (a long-form
 * partition name not listed), -ENOMEM, -EAGAIN (no thread) or -errno. */
int import_open(struct store *s, struct fspath *fp, const char *path, int insert,
                struct import_stream **out);

/* Take SIZE bytes of M's stream at offset OFF (the bytes taken so far:
 * else -ESPIPE, logged): the lines they end are parsed and queued, waiting
 * while the queue is full (import_stream). Returns SIZE, or -errno: the
 * stream's first failure, which stops it (-EINVAL for a line that is not
 * an entity of the stream, with every line before it applied; the errno
 * of a transaction the service refused, with the transactions not yet
 * sent dropped; logged once, with the line's number, and kept in
 * user.aztfs.errors), or -EINTR (the request was interrupted). */
int import_write(struct import_stream *m, const char *buf, size_t size, unsigned long long off);

/* A close of a copy of M's descriptor, or an fsync: every line ended so
 * far sent and answered (one not yet ended too when it is whole JSON).
 * Returns 0 when each was applied, else as import_write. */
int import_flush(struct import_stream *m);

/* The stream's end (RELEASE; NULL: nothing): a line not yet ended taken
 * as the last, and all sent and answered, unless it failed or the mount is
 * ending (a failure only logged); one log line says what was applied. */
void import_free(struct import_stream *m);

#endif

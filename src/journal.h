/* journal.h - the write-behind journal: an append-only file of records
 * (one JSON object each), made durable by group commit, read back whole
 * at the next mount. A leaf of the store layer (writeback.c uses it): it
 * knows files and records, not what they mean.
 *
 * On disk each record is one line: 16 hex digits (the first 8 bytes of the
 * SHA-256 of the JSON text), a space, the JSON text (compact, so without a
 * newline), a newline. A record whose line is cut short or whose digest
 * does not match (a torn write at a crash, a damaged disk) is skipped,
 * never interpreted. */
#ifndef AZTFS_JOURNAL_H
#define AZTFS_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "log.h"

struct journal;

/* Open (creating it) the journal NAME in directory DIR (created 0700 with
 * its missing parents; the file is 0600), locked against another process
 * using it (NAME.lock, flock). LG (borrowed) gets the log lines. Returns 0
 * with *out, -EBUSY when another mount holds the lock, or -errno (logged). */
int journal_open(const char *dir, const char *name, struct logger *lg, struct journal **out);

/* The records of the file, oldest first (at open, before any append: an
 * append after a torn last record would join it, so a reader rewrites
 * the journal with journal_rewrite before appending, as wb_open does): FN(CTX, REC) for each whole one
 * (REC borrowed for the call); a record cut short or failing its digest is
 * skipped and logged with its byte offset, and *BAD (not NULL) counts them.
 * Returns 0, FN's negative return (which stops the reading), or -errno. */
int journal_read(struct journal *j, int (*fn)(void *ctx, const json_t *rec), void *ctx,
                 unsigned *bad);

/* Append REC (borrowed; a JSON object, else -EINVAL) as one record. *LSN gets the position after it,
 * for journal_sync. Returns 0, or -errno (logged); after a failed write or
 * sync every later append fails with -EIO (nothing is appended after a
 * hole). */
int journal_append(struct journal *j, const json_t *rec, uint64_t *lsn);

/* Make every record up to LSN durable. Callers that arrive while a flush
 * runs wait for it and share the next one: one fdatasync for all the
 * commits that arrive together. Returns 0 or -EIO (logged). */
int journal_sync(struct journal *j, uint64_t lsn);

/* Replace the file's contents by the records BUILD(CTX) returns (a new
 * reference to an array; empty: an empty file; NULL: -ENOMEM),
 * atomically (a new file written, flushed and renamed over the old one).
 * BUILD runs while appends wait, so an append either is in what it saw or
 * goes into the new file after it. Returns 0 or -errno (logged; the old
 * file stays). */
int journal_rewrite(struct journal *j, json_t *(*build)(void *ctx), void *ctx);

/* Bytes appended since the last rewrite (or the open). */
uint64_t journal_size(struct journal *j);

/* The journal file's path (for log lines; owned by J). */
const char *journal_path(const struct journal *j);

/* Close J (NULL: nothing) and release its lock; the file stays. */
void journal_close(struct journal *j);

#endif

/* journal.h - the write-behind journal: an append-only file of records
 * (one JSON object each), made durable by group commit, read back at the
 * next mount. A leaf of the store layer (write-behind uses it): it knows
 * files and records, not what they mean.
 *
 * On disk each record is one line: 32 hex digits (the first 16 bytes of
 * the HMAC-SHA256 of the JSON text, keyed by the journal's own random key,
 * kept 0600 beside it as NAME.key), a space, the JSON text (compact, so
 * without a newline), a newline. A record whose MAC does not match is never
 * interpreted: a torn write at a crash, a damaged disk, or a record this
 * journal's mounts did not write. Damage does not end the reading: intact
 * records after it are found and read.
 *
 * Where it lives is checked as the config file is (util.h): the
 * directory belongs to the mounting user and no one else may write it
 * (unless -o allow_shared_dirs), and the journal, its key, its lock and its
 * temporary files are opened without following symlinks, owned by the
 * mounting user, one link each. */
#ifndef AZTFS_JOURNAL_JOURNAL_H
#define AZTFS_JOURNAL_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "util/util.h"

struct journal;

/* Open (creating them) the journal NAME in directory DIR (created 0700
 * with its missing parents), its key NAME.key (32 random bytes, made with
 * the journal; exactly 64 hex digits and a newline, mode 0600) and its
 * lock NAME.lock (flock: one process at a time). ALLOW_SHARED lifts the
 * rule on the directory's owner and mode only. LG (borrowed) gets the log
 * lines. Returns 0 with *out, -EBUSY when another process holds the lock,
 * -EACCES when a place is refused (the log line says why and what to do),
 * -ENOKEY when the journal holds keyed records and its key is gone, or
 * -errno (logged). */
int journal_open(const char *dir, const char *name, int allow_shared, struct logger *lg,
                 struct journal **out);

/* What journal_read found besides whole records (each stretch logged with
 * its byte offset, and put in the logger's failure ring). */
struct journal_damage {
    unsigned torn;    /* the end cut short: a write a crash interrupted (never
                       * acknowledged: an acknowledgement waits for the flush) */
    unsigned damaged; /* stretches that hold no record, with whole records after
                       * them: if one held an acknowledged change, it is lost */
    unsigned foreign; /* well-formed records not made with this journal's key:
                       * refused, never applied */
};

/* The records of the file, oldest first (at open, before any append: the
 * caller rewrites the journal with journal_rewrite before appending, as
 * wb_open does): FN(CTX, REC) for each whole one (REC borrowed for the
 * call). Damage is skipped and the reading goes on after it; when some is
 * found (damaged or foreign), the file as it was is kept under the name
 * NAME.damaged-TIME beside it (a copy), said in the log. *DMG
 * (not NULL) gets the counts. Returns 0, FN's negative return (which stops
 * the reading), or -errno. */
int journal_read(struct journal *j, int (*fn)(void *ctx, const json_t *rec), void *ctx,
                 struct journal_damage *dmg);

/* Append REC (borrowed; a JSON object, else -EINVAL) as one record, or
 * the records of REC an array of objects, all or none. *LSN gets the
 * position after them (an empty array: the end as it is), for
 * journal_sync. Returns 0, -ENOSPC (no
 * room on the disk now: nothing appended; appends work again once there is
 * room), -EIO (the disk failed), -EFBIG, -ENOMEM; logged except -ENOSPC,
 * which the caller handles (it may make room by a rewrite). */
int journal_append(struct journal *j, const json_t *rec, uint64_t *lsn);

/* Make every record up to LSN durable. Callers that arrive while a flush
 * runs wait for it and share the next one: one fdatasync for all the
 * commits that arrive together. After the flush, the journal's name must
 * still be this file and its lock file still the lock held. Returns 0,
 * -EIO (a flush failed: what was appended may not be on disk; only a
 * journal_rewrite makes it durable again, and until then every sync fails),
 * -ESTALE (the file at the journal's name is not this one any more: removed
 * or replaced; a journal_rewrite puts the live records back there), -EBUSY
 * (the lock file was removed and another process holds a new one), all
 * logged. */
int journal_sync(struct journal *j, uint64_t lsn);

/* Replace the file's contents by the records BUILD(CTX) returns (a new
 * reference to an array; empty: an empty file; NULL: -ENOMEM),
 * atomically: a new file (a random temporary name, created exclusively)
 * written, flushed and renamed over the old one, and the directory
 * flushed. BUILD runs while appends wait, so an append either is in what
 * it saw or goes into the new file after it. On success everything live is
 * durable: a failed flush or a removed journal is healed. Returns 0 or
 * -errno (logged; the old file stays). */
int journal_rewrite(struct journal *j, json_t *(*build)(void *ctx), void *ctx);

/* Bytes appended since the last rewrite (or the open). */
uint64_t journal_size(struct journal *j);

/* Bytes the journal may use at most now: what its filesystem has free for
 * the mounting user, plus what the journal file holds. */
uint64_t journal_room(struct journal *j);

/* The journal file's path (for log lines; owned by J). */
const char *journal_path(const struct journal *j);

/* Close J (NULL: nothing) and release its lock; the files stay. The key
 * is wiped from memory. */
void journal_close(struct journal *j);

#endif

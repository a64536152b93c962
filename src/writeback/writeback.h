/* writeback.h - the public face of the writeback/ folder: its parts below, each
 * with its own contract. */
#ifndef AZTFS_WRITEBACK_WRITEBACK_H
#define AZTFS_WRITEBACK_WRITEBACK_H

#include <stddef.h>
#include <jansson.h>
#include <time.h>

#include "auth/auth.h"
#include "http/http.h"
#include "util/util.h"
#include "table/table.h"

/* ---- wbtypes: the types write-behind's callers and its inside share: what
 * a change is, the hooks of its outcomes, the settings (writeback.h says
 * what is done with them). A leaf: writeback.h and writeback_i.h both include
 * it, so that the inside does not include the outside's header. */

/* What a change does to its entity. */
enum wb_kind { WB_INSERT, WB_REPLACE, WB_MERGE, WB_DELETE };

/* One change, as store/store.c hands it over (everything borrowed). */
struct wb_change {
    const char *path; /* the entity's path in the mount */
    const char *table, *pk, *rk;
    enum wb_kind kind;
    const json_t *entity; /* wire form without keys; NULL for WB_DELETE */
    const char *if_match; /* the ETag the change was made against (a real
                           * one, or the token of a queued change);
                           * NULL for WB_INSERT */
};

/* How the store hears of outcomes (called without writeback's lock, from
 * a sending thread or wb_open's replay). */
struct wb_hooks {
    /* PATH's change is applied: ENTITY (NULL: deleted) now has ETAG (NULL:
     * unknown). EXACT: the entity is exactly ENTITY (not a merge). Called
     * only when no later change of PATH is queued. */
    void (*applied)(void *ctx, const char *path, const json_t *entity, int exact, const char *etag);
    /* PATH's queued changes failed for good: what the mount shows of it
     * must be read again. */
    void (*failed)(void *ctx, const char *path);
    /* Should a writer stop waiting (for room in the queue, for a flush)?
     * Asked, with writeback's lock held, from the writer's own thread at
     * least every WB_WAIT_STEP_MS: nonzero when the request it serves was
     * interrupted or the mount is going away. NULL: never. */
    int (*cancelled)(void *ctx);
    void *ctx;
};

struct wb_config {
    const char *dir;      /* journal directory */
    const char *name;     /* journal file name in it */
    double delay;         /* seconds a change may wait for batch-mates */
    size_t max_bytes;     /* queue bound: writers wait beyond it */
    int senders;          /* partitions sent in parallel */
    double stop_seconds;  /* wb_close sends for at most this long */
    int allow_shared_dir; /* -o allow_shared_dirs: the directory's owner and mode
                           * are not checked (journal_open) */
};

/* ---- queue.c: write-behind (-o writeback): changes acknowledged once the
 * journal holds them on disk, sent later in entity group transactions of
 * up to 100 operations per partition. Part of the store layer: store/store.c
 * hands it the changes of a mount in write-behind mode and asks it what is
 * still queued; it sends through table.h and keeps its journal (journal.h).
 *
 * What it promises (doc/USAGE.md "Write-behind"): nothing acknowledged is
 * dropped in silence. A change that fails for good stays in the journal as
 * failed (log line, the root's user.aztfs.pending, EIO from fsync) until a
 * new change of the same entity or a discard replaces it; a crash loses
 * nothing acknowledged: the next open sends what the journal holds, and a
 * batch handed to the network without an answer is settled by the
 * entities (table_batch_again), never by its content alone. */

struct writeback;

/* Open the journal and load what it holds (failed changes stay failed,
 * the others are queued again; nothing is sent yet: wb_drain). Write-behind
 * sends through a client of its own for ACCT with HC (so the mount's read
 * cancellation never cuts its requests, and its stop deadline cuts only
 * them); ACCT, LG and STATS borrowed (they outlive it), HC copied.
 * Returns 0 with *out, or -errno (logged). */
int wb_open(const struct wb_config *cfg, const struct account *acct, const struct http_config *hc,
            struct logger *lg, struct http_stats *stats, const struct wb_hooks *hooks,
            struct writeback **out);

/* Send everything queued from this thread, now (before the mount serves:
 * the replay of a crash). Returns 0, or -EIO when some changes failed
 * (they stay in the journal, reported). */
int wb_drain(struct writeback *wb);

/* Start the sending threads (after the process has daemonized).
 * Returns 0 or -errno. */
int wb_start(struct writeback *wb);

/* Stop: send what is queued for at most cfg.stop_seconds (then every
 * request still out is cut short: its send was journalled, the next mount
 * settles it), stop the threads, log one line saying what was sent and
 * what is left, and close the journal: emptied when everything was sent,
 * else left for the next mount. Waiting writers are woken (-EINTR). WB is
 * freed. Returns the number of changes left in the journal (unsent or
 * failed); WB NULL: 0. */
size_t wb_close(struct writeback *wb);

/* Queue N (1, or 2 for a rename: written and deleted in one batch) changes
 * and return once the journal holds them on disk. Writers wait while the
 * queue is full. A change to an entity with a queued change must be made
 * against that change's token (else -ESTALE; -EEXIST for an insert over a
 * queued write; -ENOENT for a change of a queued delete), and merges with
 * it (keeping its If-Match). TOKENS[i] (TOKENS may be NULL) gets the
 * malloc'd ETag the entity shows until it is sent (NULL for a delete).
 * Returns 0 or -errno (-EIO: the journal cannot be written). */
int wb_submit(struct writeback *wb, const struct wb_change *c, size_t n, char **tokens);

/* Is a change of PATH queued? 1: a write, *entity (a new reference to the
 * wire form with keys, Timestamp and ETag as the mount shows it) set;
 * -ENOENT: a delete; 0: nothing queued. -ENOMEM. */
int wb_lookup(struct writeback *wb, const char *path, json_t **entity);

/* Is ETAG the token of a change sent since (then *real gets the malloc'd
 * ETag the service gave)? 1, 0, or -ENOMEM. */
int wb_resolve(struct writeback *wb, const char *etag, char **real);

/* Send now the queued changes under SCOPE (a path: "/" for all, a table
 * or partition directory, or an entity's path) and, with WAIT, wait until
 * they are sent, failed, or could not be sent (the service unreachable
 * after the request's own retries: they stay queued, retried with
 * backoff). Returns 0, or -EIO when a change under SCOPE has failed (then
 * it stays reported until dealt with) or, with WAIT, is still unsent. */
int wb_flush(struct writeback *wb, const char *scope, int wait);

/* Are changes under SCOPE queued or being sent? 1 or 0. */
int wb_queued(struct writeback *wb, const char *scope);

/* What write-behind holds: changes queued, being sent, failed and kept;
 * journal stretches skipped as damaged or refused at the mount. */
struct wb_counts {
    size_t queued, sending, failed, damaged;
};

/* WB's counts into *OUT, read under its lock. */
void wb_counts(struct writeback *wb, struct wb_counts *out);

/* The root's user.aztfs.pending: {"queued": N, "sending": N, "failed": N,
 * "damaged": N, "journal": PATH, "failures": [{"path", "op", "errno", "error", "why"}]}
 * (at most LIMIT bytes of failures). malloc'd, or NULL. */
char *wb_pending_json(struct writeback *wb, size_t limit);

/* Drop the failed change of PATH ("*": every failed change) from the
 * journal: the mount shows the entity as the service holds it. WHY ends
 * the log line ("PATH: the failed replace is dropped from the journal:
 * WHY"). Returns 0, or -ENOENT when PATH has no failed change, -EIO. */
int wb_discard(struct writeback *wb, const char *path, const char *why);

#endif

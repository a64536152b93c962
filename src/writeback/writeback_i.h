/* writeback_i.h - the inside of write-behind, shared by the files of
 * writeback/ only: the queue's structures, then what each module offers
 * the others. Calls go one way: life.c -> replay.c, send.c -> outcome.c ->
 * oplog.c, maps.c (replay.c and queue.c use oplog.c and maps.c too). */
#ifndef AZTFS_WRITEBACK_WRITEBACK_I_H
#define AZTFS_WRITEBACK_WRITEBACK_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "journal/journal.h"
#include "util/util.h"
#include "table/table.h"
#include "writeback/writeback.h"

/* What a batch's weights (wb_weight: the entities as sent) leave out of
 * its body: each operation's headers and URL. See table_batch_room. */
#define WB_BATCH_HEADROOM ((size_t)64 * 1024)
#define WB_COMPACT_MIN (1024u * 1024) /* journal not compacted below this */
#define WB_QUEUE_MIN (256u * 1024)    /* the queue's bound is never lowered below this */
#define WB_TOKEN_PREFIX "W/\"aztfs-queued-"

enum wb_state { WS_QUEUED, WS_SENDING, WS_FAILED };

struct wb_part;

/* Everything below is write-behind's lock's (writeback.mu) once wb_open
 * has returned; wb_open (and wb_replay in it) builds it before anyone
 * else has WB, without the lock. */

/* One queued change of one entity (merged changes are one op). A batch
 * taken to be sent (WS_SENDING) belongs to its sender, which reads what
 * never changes while an op is sent (kind, entity, if_match, path and
 * keys, part, sent_at) without the lock. */
struct wb_op {
    uint64_t seq;                 /* its journal record; its token's number: set when
                                   * it is made */
    enum wb_kind kind;            /* set when it is made */
    enum wb_state state;          /* guarded by writeback.mu */
    json_t *entity;               /* wire form without keys; NULL for a delete: set when
                                   * it is made */
    char *if_match;               /* real ETag, or the token of DEP; guarded by
                                   * writeback.mu (fixed once WS_SENDING) */
    char *path, *table, *pk, *rk; /* set when it is made */
    uint64_t group;               /* nonzero: sent in one batch with its group; set when
                                   * it is made */
    struct wb_op *dep;            /* the earlier change of this entity it waits for;
                                   * guarded by writeback.mu */
    struct wb_op *succ;           /* the later change waiting for this one; guarded by
                                   * writeback.mu */
    struct timespec sent_at;      /* first handed to the network (0: never); guarded by
                                   * writeback.mu (written by its sender only) */
    int done;                     /* WS_SENDING: applied, being settled (done_etag);
                                   * guarded by writeback.mu */
    char *done_etag;              /* the ETag the service gave (NULL: none, a delete);
                                   * guarded by writeback.mu */
    struct timespec queued_at;    /* monotonic, for the delay; set when it is queued */
    int err;                      /* WS_FAILED: the positive errno; guarded by
                                   * writeback.mu */
    char *why;                    /* WS_FAILED: what the service said; guarded by
                                   * writeback.mu */
    size_t bytes;                 /* what it weighs in the queue: set when it is made */
    struct wb_part *part;         /* set when it is queued */
    struct wb_op *prev, *next;    /* the partition's queue, or the failed list; guarded
                                   * by writeback.mu */
};

/* The changes of one partition, in the order they were made. */
struct wb_part {
    char *dir;                  /* "/table/partition" as the mount shows it: set when
                                 * it is made */
    char *table, *pk;           /* set with its first change; guarded by writeback.mu */
    struct wb_op *head, *tail;  /* queued (not sending) changes; guarded by
                                 * writeback.mu */
    size_t n;                   /* how many; guarded by writeback.mu */
    int gave_up;                /* closing: a transient failure; left for the next
                                 * mount; guarded by writeback.mu */
    int sending;                /* a batch of it is out; guarded by writeback.mu */
    int flush;                  /* asked to go now (fsync, sync, unmount); guarded by
                                 * writeback.mu */
    int again;                  /* the rest of a batch cut in two after a refusal
                                 * waits at the head: it goes as soon as the partition
                                 * is free (and its backoff over); guarded by
                                 * writeback.mu */
    struct timespec not_before; /* monotonic: backoff after a transient failure;
                                 * guarded by writeback.mu */
    unsigned backoff;           /* seconds of the next backoff; guarded by writeback.mu */
    struct wb_part *hnext;      /* the parts hash chain; guarded by writeback.mu */
};

/* An entity with a queued, sending or failed change. */
struct wb_ent {
    char *path;           /* set when it is made */
    struct wb_op *last;   /* its latest queued or sending change; guarded by
                           * writeback.mu */
    struct wb_op *failed; /* its failed change; guarded by writeback.mu */
    struct wb_ent *hnext; /* guarded by writeback.mu */
};

/* A token whose change was sent, with the ETag the service gave. */
struct wb_done {
    char *token, *etag;    /* set when it is made */
    struct wb_done *hnext; /* guarded by writeback.mu */
};

struct writeback {
    pthread_mutex_t mu;
    pthread_cond_t work_cv;               /* senders: something to send; waited on with mu */
    pthread_cond_t done_cv;               /* flushers, waiting writers: something was sent;
                                           * waited on with mu */
    struct wb_config cfg;                 /* set before the threads start (wb_open: fit_queue
                                           * bounds max_bytes) */
    struct table_client *tc;              /* owned: write-behind's own connections, cut
                                           * short at the stop deadline (wb_aborted); set by
                                           * wb_open */
    struct logger *lg;                    /* borrowed; set by wb_open */
    struct wb_hooks hooks;                /* set by wb_open */
    struct journal *j;                    /* set by wb_open (NULL while wb_replay reads it);
                                           * the journal has its own lock */
    char *journal_name;                   /* unused */
    uint64_t next_seq;                    /* guarded by mu */
    size_t bytes;                         /* queued and sending; guarded by mu */
    size_t n_queued, n_sending, n_failed; /* guarded by mu */
    size_t n_applied;                     /* changes applied since the mount; guarded by mu */
    unsigned n_damaged;                   /* journal stretches skipped at the mount (damaged,
                                           * refused): set by wb_open (wb_replay) */
    struct wb_ent **ents;                 /* hash by path: the array set by wb_open, its chains
                                           * guarded by mu */
    size_t n_ent_buckets;                 /* set by wb_open */
    size_t n_ents;                        /* guarded by mu */
    struct wb_part **parts;               /* hash by directory: the array set by wb_open, its
                                           * chains guarded by mu */
    size_t n_part_buckets;                /* set by wb_open */
    size_t n_parts;                       /* guarded by mu */
    struct wb_done **dones;               /* ring-bounded map token -> ETag: the array set by
                                           * wb_open, its chains guarded by mu */
    size_t n_done_buckets;                /* set by wb_open */
    size_t n_dones;                       /* guarded by mu */
    struct wb_op *failed_head;            /* the failed changes, oldest first; guarded by mu */
    int stopping, urgent;                 /* closing; queue full: send everything; guarded by mu */
    atomic_llong stop_ms;                 /* closing: the monotonic ms when sending ends (0: not) */
    struct workers senders;               /* the sending threads (util/worker.c): started and
                                           * joined by the thread that opens and closes WB */
    int n_threads;                        /* how many were started (stays after they are joined);
                                           * guarded by mu (wb_start, its only writer, and
                                           * wb_close read it unlocked) */
};

/* --- writeback/maps.c, writeback/oplog.c and writeback/outcome.c, for the
 * others (lock held unless said). "Or replaying": also called by
 * wb_replay, at wb_open, without the lock (nobody else has WB yet); those
 * do not assert it. --- */

/* The entity entry of PATH (creating it when CREATE), or NULL. Or
 * replaying. */
struct wb_ent *wb_ent_get(struct writeback *wb, const char *path, int create);

/* The entity entry of PATH freed when it holds no change any more. Or
 * replaying. */
void wb_ent_release(struct writeback *wb, struct wb_ent *e);

/* The partition entry of directory DIR (created when CREATE), or NULL. Or
 * replaying. */
struct wb_part *wb_part_get(struct writeback *wb, const char *dir, int create);

/* Remember that TOKEN's change was sent and the service gave ETAG. Or
 * replaying. */
void wb_done_put(struct writeback *wb, const char *token, const char *etag);

/* The ETag the service gave TOKEN's change: 1 with *etag malloc'd, 0
 * (unknown), or -ENOMEM. Lock held. */
int wb_done_get(struct writeback *wb, const char *token, char **etag);

/* OP's token (the ETag the entity shows while OP is queued) in OUT. */
void wb_op_token(const struct wb_op *op, char out[64]);

/* "insert", "replace", "merge" or "delete". */
const char *wb_kind_name(enum wb_kind k);

void wb_op_free(struct wb_op *op);

/* Put NEW where OLD is (queue, entity chain) and free OLD. Or replaying. */
void wb_op_swap(struct writeback *wb, struct wb_op *old, struct wb_op *new);

/* OP's journal record (a new reference or NULL); REPLACES: the seq of
 * the change it was merged into (0: none). */
json_t *wb_op_record(const struct wb_op *op, uint64_t replaces);

/* Take failed change F off the failed list (and its entity's). Or
 * replaying. */
void wb_failed_unlink(struct writeback *wb, struct wb_op *f);

/* Keep OP as its entity's failed change (replacing an older one). Or
 * replaying. */
void wb_failed_keep(struct writeback *wb, struct wb_op *op, int rc, const char *why);

/* Queue a hook call (applied or failed) for OP on *CALLS. */
struct wb_call;
void wb_call_add(struct wb_call **calls, int applied, const struct wb_op *op, const char *etag);

/* Append OP to its partition's queue. Or replaying. (These three are not
 * given WB: nothing to assert the lock of.) */
void wb_part_push_back(struct wb_op *op);

/* Remove OP from its partition's queue. Or replaying. */
void wb_part_unlink(struct wb_op *op);

/* Put OP back at the head of its partition's queue. */
void wb_part_push_front(struct wb_op *op);

/* OP was applied with ETAG (may be NULL): the changes after it, hooks. Returns
 * the hook calls to make after unlocking in *CALLS. */
void wb_op_applied(struct writeback *wb, struct wb_op *op, const char *etag,
                   struct wb_call **calls);

/* OP failed for good with -RC: journal, log, the changes after it, hooks (*CALLS). */
void wb_op_failed(struct writeback *wb, struct wb_op *op, int rc, const char *why,
                  struct wb_call **calls);

/* Make the hook calls of CALLS (lock not held) and free them. */
void wb_calls_run(struct writeback *wb, struct wb_call *calls);

/* Append REC (stolen) to the journal and flush it. 0 or -EIO. With the
 * lock held or not: the senders call it unlocked (mark_sent,
 * batch_applied), the others locked; it touches only WB->j, which has its
 * own lock. */
int wb_journal(struct writeback *wb, json_t *rec);

/* The ops of SEQS as a JSON array of numbers (new reference), or NULL. */
json_t *wb_seq_array(struct wb_op **ops, size_t n);

/* The monotonic clock. */
struct timespec wb_now(void);

/* How long a waiting writer sleeps before it asks hooks.cancelled again. */
#define WB_WAIT_STEP_MS 200

/* A writer's wait for something sent (done_cv, lock held): at most
 * WB_WAIT_STEP_MS. Returns 0, or -EINTR when hooks.cancelled says the
 * writer should stop waiting (its request interrupted, the mount going
 * away: libfuse joins its workers before the mount can end). */
int wb_wait_sent(struct writeback *wb);

/* --- writeback/replay.c --- */

/* Read the journal back into WB's queue (nothing sent; failed changes stay
 * failed), counting what was damaged or refused (wb->n_damaged) and setting
 * next_seq past every seq read. The caller then compacts the journal (an
 * append after a torn end would join it). Lock not held: called by wb_open
 * before anyone else has WB (it takes the lock in wb_resolve). Returns 0
 * or -errno. */
int wb_replay(struct writeback *wb);

/* --- writeback/oplog.c: compaction --- */

/* Rewrite the journal with what is live (lock held): queued, sending and
 * failed changes. Returns 0 or -errno (journal_rewrite; the old file
 * stays). */
int wb_compact(struct writeback *wb);

/* Compact the journal when it has grown past WB_COMPACT_MIN and holds more
 * than twice what is live (lock held). */
void wb_maybe_compact(struct writeback *wb);

/* --- writeback/send.c --- */

/* Pick a partition ready to go (with FORCE: any with queued changes),
 * cut its next batch into OPS (at most TABLE_BATCH_OPS) and mark it sending.
 * Returns the number of ops (0: nothing ready; *wait_until then the
 * monotonic time the next one is due, or 0 for none). Lock held. */
size_t wb_take_batch(struct writeback *wb, int force, struct wb_op **ops,
                     struct timespec *wait_until);

/* Send the batch OPS (N, taken by wb_take_batch) and settle every op of
 * it. Called without the lock. */
void wb_send_batch(struct writeback *wb, struct wb_op **ops, size_t n);

/* The sending threads' body (ARG a struct writeback). */
void *wb_sender(void *arg);

/* OPS[I] (and the other half of its rename) failed for good with -RC and
 * WHY: settle them (wb_op_failed, the hooks called) and remove them from
 * OPS (N, taken by wb_take_batch), the others kept in their order, still
 * sending. Returns the new count. Called without the lock. Exposed for the
 * unit tests (otherwise wb_send_batch's own). */
size_t wb_batch_drop_failed(struct writeback *wb, struct wb_op **ops, size_t n, size_t i, int rc,
                            const char *why);

/* Where to split a batch of N (> 1) with no failing operation named: in
 * the middle, moved so as not to cut a rename (after it, else before it);
 * 0 when the batch is one rename, which is never cut. Exposed for the unit
 * tests (otherwise wb_send_batch's own). */
size_t wb_split_at(struct wb_op **ops, size_t n);

#endif

/* writeback_i.h - the inside of write-behind, shared by the files of
 * writeback/ only: the queue's structures, then what each module offers
 * the others. Calls go one way: life.c -> replay.c, send.c -> outcome.c ->
 * ops.c, maps.c (replay.c and queue.c use ops.c and maps.c too). */
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

#define WB_BATCH_OPS 100
#define WB_BATCH_BYTES (4u * 1024 * 1024 - 64 * 1024)   /* under the 4 MiB cap */
#define WB_COMPACT_MIN (1024u * 1024)   /* journal not compacted below this */
#define WB_QUEUE_MIN (256u * 1024)      /* the queue's bound is never lowered below this */
#define WB_TOKEN_PREFIX "W/\"aztfs-queued-"

enum wb_state { WS_QUEUED, WS_SENDING, WS_FAILED };

struct wb_part;

/* One queued change of one entity (merged changes are one op). */
struct wb_op {
    uint64_t seq;               /* its journal record; its token's number */
    enum wb_kind kind;
    enum wb_state state;
    json_t *entity;             /* wire form without keys; NULL for a delete */
    char *if_match;             /* real ETag, or the token of DEP */
    char *path, *table, *pk, *rk;
    uint64_t group;             /* nonzero: sent in one batch with its group */
    struct wb_op *dep;          /* the earlier change of this entity it waits for */
    struct wb_op *succ;         /* the later change waiting for this one */
    struct timespec sent_at;    /* first handed to the network (0: never) */
    int done;                   /* WS_SENDING: applied, being settled (done_etag) */
    char *done_etag;            /* the ETag the service gave (NULL: none, a delete) */
    struct timespec queued_at;  /* monotonic, for the delay */
    int err;                    /* WS_FAILED: the positive errno */
    char *why;                  /* WS_FAILED: what the service said */
    size_t bytes;               /* what it weighs in the queue */
    struct wb_part *part;
    struct wb_op *prev, *next;  /* the partition's queue, or the failed list */
};

/* The changes of one partition, in the order they were made. */
struct wb_part {
    char *dir;                  /* "/table/partition" as the mount shows it */
    char *table, *pk;
    struct wb_op *head, *tail;  /* queued (not sending) changes */
    size_t n;                   /* how many */
    int gave_up;                /* closing: a transient failure; left for the next mount */
    int sending;                /* a batch of it is out */
    int flush;                  /* asked to go now (fsync, sync, unmount) */
    struct timespec not_before; /* monotonic: backoff after a transient failure */
    unsigned backoff;           /* seconds of the next backoff */
    struct wb_part *hnext;      /* the parts hash chain */
};

/* An entity with a queued, sending or failed change. */
struct wb_ent {
    char *path;
    struct wb_op *last;         /* its latest queued or sending change */
    struct wb_op *failed;       /* its failed change */
    struct wb_ent *hnext;
};

/* A token whose change was sent, with the ETag the service gave. */
struct wb_done {
    char *token, *etag;
    struct wb_done *hnext;
};

struct writeback {
    pthread_mutex_t mu;
    pthread_cond_t work_cv;     /* senders: something to send */
    pthread_cond_t done_cv;     /* flushers, waiting writers: something was sent */
    struct wb_config cfg;
    struct table_client *tc;    /* owned: write-behind's own connections, cut
                                 * short at the stop deadline (wb_aborted) */
    struct logger *lg;          /* borrowed */
    struct wb_hooks hooks;
    struct journal *j;
    char *journal_name;
    uint64_t next_seq;
    size_t bytes;               /* queued and sending */
    size_t n_queued, n_sending, n_failed;
    size_t n_applied;           /* changes applied since the mount */
    unsigned n_damaged;         /* journal stretches skipped at the mount (damaged, refused) */
    struct wb_ent **ents;       /* hash by path */
    size_t n_ent_buckets, n_ents;
    struct wb_part **parts;     /* hash by directory */
    size_t n_part_buckets, n_parts;
    struct wb_done **dones;     /* ring-bounded map token -> ETag */
    size_t n_done_buckets, n_dones;
    struct wb_op *failed_head;  /* the failed changes, oldest first */
    int stopping, urgent;       /* closing; queue full: send everything */
    atomic_llong stop_ms;       /* closing: the monotonic ms when sending ends (0: not) */
    pthread_t *threads;
    int n_threads;
};

/* --- writeback/maps.c, writeback/ops.c and writeback/outcome.c, for the
 * others (lock held unless said) --- */

/* The entity entry of PATH (creating it when CREATE), or NULL. */
struct wb_ent *wb_ent_get(struct writeback *wb, const char *path, int create);

/* The entity entry of PATH freed when it holds no change any more. */
void wb_ent_release(struct writeback *wb, struct wb_ent *e);

/* The partition entry of directory DIR (created when CREATE), or NULL. */
struct wb_part *wb_part_get(struct writeback *wb, const char *dir, int create);

/* Remember that TOKEN's change was sent and the service gave ETAG. */
void wb_done_put(struct writeback *wb, const char *token, const char *etag);

/* The ETag the service gave TOKEN's change: 1 with *etag malloc'd, 0
 * (unknown), or -ENOMEM. Lock held. */
int wb_done_get(struct writeback *wb, const char *token, char **etag);

/* OP's token (the ETag the entity shows while OP is queued) in OUT. */
void wb_op_token(const struct wb_op *op, char out[64]);

/* "insert", "replace", "merge" or "delete". */
const char *wb_kind_name(enum wb_kind k);

void wb_op_free(struct wb_op *op);

/* Put NEW where OLD is (queue, entity chain) and free OLD. */
void wb_op_swap(struct writeback *wb, struct wb_op *old, struct wb_op *new);

/* OP's journal record (a new reference or NULL); REPLACES: the seq of
 * the change it was merged into (0: none). */
json_t *wb_op_record(const struct wb_op *op, uint64_t replaces);

/* Take failed change F off the failed list (and its entity's). */
void wb_failed_unlink(struct writeback *wb, struct wb_op *f);

/* Keep OP as its entity's failed change (replacing an older one). */
void wb_failed_keep(struct writeback *wb, struct wb_op *op, int rc, const char *why);

/* Queue a hook call (applied or failed) for OP on *CALLS. */
struct wb_call;
void wb_call_add(struct wb_call **calls, int applied, const struct wb_op *op,
                 const char *etag);

/* Append OP to its partition's queue. */
void wb_part_push_back(struct wb_op *op);

/* Remove OP from its partition's queue. */
void wb_part_unlink(struct wb_op *op);

/* Put OP back at the head of its partition's queue. */
void wb_part_push_front(struct wb_op *op);

/* OP was applied with ETAG (may be NULL): dependants, hooks. Returns
 * the hook calls to make after unlocking in *CALLS. */
void wb_op_applied(struct writeback *wb, struct wb_op *op, const char *etag,
                   struct wb_call **calls);

/* OP failed for good with -RC: journal, log, dependants, hooks (*CALLS). */
void wb_op_failed(struct writeback *wb, struct wb_op *op, int rc, const char *why,
                  struct wb_call **calls);

/* Make the hook calls of CALLS (lock not held) and free them. */
void wb_calls_run(struct writeback *wb, struct wb_call *calls);

/* Append REC (stolen) to the journal and flush it. 0 or -EIO. */
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
 * append after a torn end would join it). Returns 0 or -errno. */
int wb_replay(struct writeback *wb);

/* --- writeback/ops.c: compaction --- */

/* Rewrite the journal with what is live (lock held): queued, sending and
 * failed changes. Returns 0 or -errno (journal_rewrite; the old file
 * stays). */
int wb_compact(struct writeback *wb);

/* Compact the journal when it has grown past WB_COMPACT_MIN and holds more
 * than twice what is live (lock held). */
void wb_maybe_compact(struct writeback *wb);

/* --- writeback/send.c --- */

/* Pick a partition ready to go (with FORCE: any with queued changes),
 * cut its next batch into OPS (at most WB_BATCH_OPS) and mark it sending.
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
size_t wb_batch_drop_failed(struct writeback *wb, struct wb_op **ops, size_t n, size_t i,
                            int rc, const char *why);

/* Where to split a batch of N (> 1) with no failing operation named: in
 * the middle, moved so as not to cut a rename (when the rename ends the
 * batch: the middle). Exposed for the unit tests (otherwise wb_send_batch's
 * own). */
size_t wb_split_at(struct wb_op **ops, size_t n);

#endif

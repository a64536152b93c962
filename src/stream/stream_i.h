/* stream/stream_i.h - an import stream's inside, shared by its writer's
 * side (import.c: lines, transactions being filled, the face) and its
 * senders' (importsend.c: the queue, the senders, the service's targets). */
#ifndef AZTFS_STREAM_STREAM_I_H
#define AZTFS_STREAM_STREAM_I_H
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "store/store.h"
#include "stream/stream.h"

/* What a transaction's lines (their text) leave out of its body: each
 * operation's headers and URL (some 400 bytes), and what a line grows by
 * on the wire. The lines of a transaction to Azure Storage add up to
 * 3,500 KiB. See table_batch_room. */
#define IMPORT_BATCH_HEADROOM ((size_t)596 * 1024)
/* A line longer than this is refused (an entity is at most 1 MiB; its
 * Binary values as base64 grow by a third). */
#define IMPORT_LINE_MAX ((size_t)4 * 1024 * 1024)
/* Partitions whose transactions are being filled at once, and the lines
 * they may hold together: past either, the fullest is sent as it is (lines
 * of many partitions interleaved; a stream in partition order, as an
 * export writes it, fills one at a time). */
#define IMPORT_GROUPS_MAX 1024
#define IMPORT_HELD_BYTES ((size_t)16 * 1024 * 1024)
/* The counting filter of keys held or out: 2^20 counters. */
#define IMPORT_FILTER_BITS 20
#define IMPORT_FILTER_SIZE ((size_t)1 << IMPORT_FILTER_BITS)
/* Transactions queued (full, waiting for a sender) at most: 409,600
 * entities, each transaction's bookkeeping 3.3 KiB (13 MiB). The lines of
 * those in memory are held to the cache's size (-o cache_size, 32 MiB by
 * default: the memory the user gave the mount); past it they wait in the
 * spool on disk (importspool.c). The writer reads this far ahead of what
 * is sent, so that a stream in partition order has many partitions'
 * transactions to send at once (importsend.c). */
#define IMPORT_QUEUE_MAX 4096
/* Transactions out at once, whatever -o scan_parallel says (its range). */
#define IMPORT_SENDERS_MAX 64
/* Sends remembered for spreading them over partitions (importsend.c). */
#define IMPORT_RECENT 64
/* One transaction: lines of one partition, being filled or queued. */
struct import_batch {
    char *pk;
    uint64_t pk_hash; /* hash_fnv1a(pk) */
    size_t n;
    size_t bytes;
    json_t *wire[TABLE_BATCH_OPS];
    char *rk[TABLE_BATCH_OPS];
    uint64_t key[TABLE_BATCH_OPS];            /* key_hash of pk, rk */
    unsigned long long line[TABLE_BATCH_OPS]; /* 1-based line numbers */
    struct import_batch *next;                /* in the queue */
    /* spooled (importspool.c): where its lines are in the spool; until a
     * sender reads them back, wire and rk are NULL and its keys are known
     * by their hashes only. SPOOL_LEN is 0 for a transaction in memory. */
    unsigned long long spool_off;
    size_t spool_len;
};

struct import_stream {
    struct store *s;
    char *path;       /* the stream's, for log lines */
    char *table;      /* the table written */
    char *table_path; /* "/table", for the cache */
    char *pk;         /* a partition's stream: its PartitionKey, else NULL */
    int insert;       /* Insert (refused when it exists) instead of Insert Or Replace */
    struct timespec started;

    /* the writer's side: one write at a time */
    pthread_mutex_t wlock;
    struct buf partial;                           /* a line not yet ended; guarded by wlock */
    unsigned long long off;                       /* bytes taken; guarded by wlock */
    unsigned long long lines;                     /* lines taken; guarded by wlock */
    struct import_batch *held[IMPORT_GROUPS_MAX]; /* being filled; guarded by wlock */
    int n_held;                                   /* guarded by wlock */
    size_t held_bytes;                            /* their lines' bytes; guarded by wlock */
    /* a close's flush: its waits are not interrupted (a close cannot be
     * tried again, and its answer is the outcome); guarded by wlock */
    int closing;
    /* line LINES was taken at a flush before its newline: only blanks may
     * come until it; guarded by wlock */
    int cut;
    /* the spool (importspool.c): written by the writer, read by senders */
    int spool_fd;                 /* -1 until the first transaction spooled */
    int spool_broken;             /* it failed once: memory only; guarded by wlock */
    unsigned long long spool_end; /* its length; guarded by wlock */

    /* shared with the senders */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct import_batch *queue, **queue_tail;     /* guarded by lock */
    int queued, running;                          /* guarded by lock */
    size_t queued_bytes;                          /* their lines' bytes; guarded by lock */
    size_t queue_bytes;                           /* what they may add up to (the cache's size) */
    struct import_batch *out[IMPORT_SENDERS_MAX]; /* by sender: the transaction it sends,
                                                     NULL when none; guarded by lock */
    int next_slot;                             /* the next sender's index in out; guarded by lock */
    uint64_t recent[IMPORT_RECENT];            /* the partitions (pk_hash) of the last sends,
                                                 a ring; guarded by lock */
    unsigned recent_n;                         /* sends so far; guarded by lock */
    int stopping;                              /* guarded by lock */
    uint16_t *filter;                          /* keys held or out; guarded by lock */
    int err;                                   /* the first failure: 0 or -errno; guarded by lock */
    unsigned long long applied, transactions;  /* guarded by lock */
    unsigned long long dropped;                /* lines not applied; guarded by lock */
    unsigned long long spooled;                /* transactions spooled; guarded by lock */
    unsigned long long spool_held, spool_peak; /* bytes spooled, not yet read back, now
                                                  and at most; guarded by lock */
    struct workers senders;
};

/* The keys held or out (a counting filter, under m->lock): of entity PK,
 * RK; may K be there; K added (BY 1) or taken away (BY -1). */
uint64_t import_key_hash(const char *pk, const char *rk);
int import_filter_has(const struct import_stream *m, uint64_t k);

/* Is entity PK, RK (hash K) held, queued or out? The filter's answer made
 * exact, asked when it says maybe (under m->lock; the writer's wlock held). */
int import_key_held(const struct import_stream *m, const char *pk, const char *rk, uint64_t k);
void import_filter_add(struct import_stream *m, uint64_t k, int by);

void import_batch_free(struct import_batch *b);

/* Record the first failure of M (under m->lock): RC, and WHY with ST in
 * the log and user.aztfs.errors. Later ones are not logged. */
void import_fail(struct import_stream *m, int rc, const struct az_status *st, const char *why);

/* Queue held transaction I of M (the writer's), waiting for room: in
 * memory while the cache's size allows, else through the spool while it
 * works, else once the senders have made room. Returns 0, the stream's
 * failure, or -EINTR (the transaction stays held, maybe spooled). */
int import_submit(struct import_stream *m, int i);

/* Queue every held transaction and wait until all are answered. Returns 0,
 * the stream's failure, or -EINTR. */
int import_drain(struct import_stream *m);

/* Write held transaction B of M (the writer's, its wlock held) to the
 * spool, keeping its keys' hashes and freeing its lines. Returns 0, or
 * -errno with the spool turned off (logged) and B as it was. */
int import_spool_put(struct import_stream *m, struct import_batch *b);

/* Read spooled transaction B's lines back (a sender's, without the lock).
 * Returns 0 or -errno (-EIO: the spool does not hold what was written). */
int import_spool_get(struct import_stream *m, struct import_batch *b);

/* A sender thread of M (util/worker.c). */
void *import_sender(void *arg);

#endif

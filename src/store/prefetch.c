/* store/prefetch.c - partition listings fetched ahead of a walk by a pool of workers (store.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/util.h"
#include "store/store.h"

/* Jobs a pool holds at most (queued, running or done and not yet entered);
 * a walk of more partitions enters the rest without prefetch. */
#define PREFETCH_MAX_JOBS 65536
/* The smallest cache prefetch runs with: a quarter of it (the budget) holds
 * a few partitions of a page or more. */
#define PREFETCH_MIN_CACHE (16u << 20)

enum pf_state { PF_QUEUED, PF_RUNNING, PF_DONE };

/* One partition's listing to fetch. Jobs live in the pool's list in the
 * order they were added (the order readdir handed the names out), from
 * prefetch_add until the walker enters the directory, the walk is
 * cancelled, the fetch fails, or (done) the listing's freshness is over. */
struct pf_job {
    struct pf_job *prev, *next; /* guarded by prefetch.lock */
    struct prefetch *p;         /* set by prefetch_add */
    struct prefetch_walk *walk; /* NULL once its directory handle is closed; guarded
                                      by prefetch.lock */
    char *table, *pk, *dir;     /* set by prefetch_add */
    uint64_t hash;              /* of dir: set by prefetch_add */
    enum pf_state state;        /* guarded by prefetch.lock */
    int cancel;                 /* stop before the next page; guarded by
                                      prefetch.lock */
    int claimed;                /* a walker waits for it: no size limit; guarded by
                                      prefetch.lock */
    size_t bytes;               /* charged to the cache so far; guarded by
                                      prefetch.lock */
    struct timespec done_at;    /* PF_DONE: when; guarded by prefetch.lock */
};

struct prefetch_walk {
    struct prefetch *p; /* set by prefetch_walk_new */
    char *table;        /* set by prefetch_walk_new */
};

struct prefetch {
    struct store *st; /* borrowed; set by prefetch_new */
    pthread_mutex_t lock;
    pthread_cond_t work;        /* a job was added, the budget freed, or stop; waited
                                      on with lock */
    pthread_cond_t done;        /* a running job ended; waited on with lock */
    struct pf_job *head, *tail; /* guarded by lock */
    size_t jobs;                /* guarded by lock */
    size_t held;                /* bytes of listings fetched and not entered; guarded
                                      by lock */
    size_t budget;              /* the limit of HELD: set by prefetch_new */
    size_t est;                 /* bytes of the last partition fetched (to its end,
                                      or stopped past the budget), 0 before any:
                                      what the next fetch is expected to charge;
                                      guarded by lock */
    int running;                /* jobs in PF_RUNNING; guarded by lock */
    struct workers threads;     /* util/worker.c, started with the first job, those
                                      the client's budget left out with a later one;
                                      guarded by lock (prefetch_free joins them
                                      unlocked once STOP lets no one start more) */
    int nthreads;               /* asked for; guarded by lock */
    int started, stop;          /* guarded by lock */
};

static void job_free(struct pf_job *j)
{
    free(j->table);
    free(j->pk);
    free(j->dir);
    free(j);
}

/* Take J out of P's list (P locked, or shared with no one: prefetch_free
 * once the workers are joined; not asserted) and free it; its bytes are no
 * longer owed to a walker. */
static void job_drop(struct prefetch *p, struct pf_job *j)
{
    if (j->prev)
        j->prev->next = j->next;
    else
        p->head = j->next;
    if (j->next)
        j->next->prev = j->prev;
    else
        p->tail = j->prev;
    p->jobs--;
    p->held -= j->bytes;
    job_free(j);
}

static struct pf_job *job_find(struct prefetch *p, const char *dir)
{
    uint64_t h = hash_fnv1a(dir);

    for (struct pf_job *j = p->head; j; j = j->next)
        if (j->hash == h && strcmp(j->dir, dir) == 0)
            return j;
    return NULL;
}

/* Drop done jobs older than the cache's freshness (P locked): their
 * listings have expired, nothing is owed to a walker any more. */
static void reap(struct prefetch *p)
{
    struct timespec now;
    struct pf_job *j, *next;

    LOCK_HELD(&p->lock);
    clock_gettime(CLOCK_MONOTONIC, &now);
    for (j = p->head; j; j = next) {
        next = j->next;
        if (j->state == PF_DONE && (double)(now.tv_sec - j->done_at.tv_sec) >= p->st->cache_timeout)
            job_drop(p, j);
    }
}

/* Should running job J stop before its next page? (Cancelled, unmount, or
 * a partition larger than the whole budget that no walker waits for: the
 * walker lists it itself.) BYTES
 * is what it has charged to the cache so far. */
static int job_stop(void *ctx, size_t bytes)
{
    struct pf_job *j = ctx;
    struct prefetch *p = j->p;
    int stop;

    pthread_mutex_lock(&p->lock);
    p->held += bytes - j->bytes;
    j->bytes = bytes;
    stop = j->cancel || p->stop || (!j->claimed && bytes > p->budget);
    pthread_mutex_unlock(&p->lock);
    return stop;
}

/* The first queued job, when the budget allows another fetch (P locked):
 * what is held, plus what the running fetches and this one are expected to
 * charge (the last partition's size), stays within the budget. Before any
 * partition's size is known, one fetch at a time. A partition larger than
 * the budget stops the workers' fetches (EST past the budget) until a
 * walker's own fetch (prefetch_claim) finds a smaller one: what a worker
 * would fetch would be thrown away, or would evict what the walker reads. */
static struct pf_job *next_job(struct prefetch *p)
{
    LOCK_HELD(&p->lock);
    if (p->est == 0 ? p->running > 0 : p->held + (size_t)(p->running + 1) * p->est > p->budget)
        return NULL;
    for (struct pf_job *j = p->head; j; j = j->next)
        if (j->state == PF_QUEUED)
            return j;
    return NULL;
}

/* Run job J (P locked on entry and exit). */
static void run_job(struct prefetch *p, struct pf_job *j)
{
    size_t bytes;
    int rc;

    LOCK_HELD(&p->lock);
    j->state = PF_RUNNING;
    p->running++;
    pthread_mutex_unlock(&p->lock);
    rc = scan_fetch_partition(p->st, j->table, j->pk, j->dir, job_stop, j, &bytes);
    pthread_mutex_lock(&p->lock);
    p->running--;
    p->held += bytes - j->bytes; /* the last page is charged too */
    j->bytes = bytes;
    if (rc == 0 || bytes > p->budget)
        p->est = bytes;
    if (rc == 0 && !j->cancel) {
        j->state = PF_DONE;
        clock_gettime(CLOCK_MONOTONIC, &j->done_at);
    } else {
        job_drop(p, j); /* failed or cancelled: the walker lists it itself */
    }
    pthread_cond_broadcast(&p->done);
    pthread_cond_broadcast(&p->work);
}

static void *worker_main(void *arg)
{
    struct prefetch *p = arg;
    struct pf_job *j;
    struct timespec until;

    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        reap(p);
        if ((j = next_job(p))) {
            run_job(p, j);
            continue;
        }
        /* woken by work, or once a second to reap what no walker entered */
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&p->work, &p->lock, &until);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* See store/store.h. */
struct prefetch *prefetch_new(struct store *s, int n, int *err)
{
    struct prefetch *p;
    struct cache_stats cs;

    *err = 0;
    cache_get_stats(s->cache, &cs);
    if (n <= 1 || s->cache_timeout <= 0 || cs.max_bytes < PREFETCH_MIN_CACHE)
        return NULL;
    if (!(p = calloc(1, sizeof(*p)))) {
        *err = -ENOMEM;
        return NULL;
    }
    p->st = s;
    p->nthreads = n;
    p->threads.budget = s->tc ? table_client_threads(s->tc) : NULL;
    p->budget = cs.max_bytes / 4;
    lock_init(&p->lock);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    return p;
}

/* Start those of P's workers not running (P locked). Those that cannot
 * start (no place in the client's budget of threads, -o fetch_threads)
 * are left out until the next job: a job no worker takes is fetched by
 * the walker that reaches it. */
static void start_workers(struct prefetch *p)
{
    int n;

    LOCK_HELD(&p->lock);
    n = workers_start(&p->threads, "aztfs-prefetch", p->nthreads - p->threads.n, worker_main, p);
    if (p->threads.n < p->nthreads && !p->started)
        log_debug(&p->st->log, "prefetch: %d of %d workers started", n, p->nthreads);
    p->started = 1;
}

/* See store/store.h. */
void prefetch_free(struct prefetch *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    for (struct pf_job *j = p->head; j; j = j->next)
        j->cancel = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    workers_join(&p->threads);
    while (p->head)
        job_drop(p, p->head);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* See store/store.h. */
struct prefetch_walk *prefetch_walk_new(struct prefetch *p, const char *table)
{
    struct prefetch_walk *w;

    if (!p || !(w = calloc(1, sizeof(*w))))
        return NULL;
    if (!(w->table = strdup(table))) {
        free(w);
        return NULL;
    }
    w->p = p;
    return w;
}

/* Is the listing of DIR in the cache? */
static int cached(struct store *s, const char *dir)
{
    struct listing *l = cache_get_listing(s->cache, dir);

    listing_unref(l);
    return l != NULL;
}

/* See store/store.h. */
int prefetch_add(struct prefetch_walk *w, const char *pk, size_t pk_len, const char *dir)
{
    struct prefetch *p = w ? w->p : NULL;
    struct pf_job *j;

    if (!p || cached(p->st, dir))
        return 0;
    pthread_mutex_lock(&p->lock);
    if (p->stop || p->jobs >= PREFETCH_MAX_JOBS || job_find(p, dir)) {
        pthread_mutex_unlock(&p->lock);
        return 0;
    }
    if (!(j = calloc(1, sizeof(*j))) || !(j->table = strdup(w->table)) ||
        !(j->pk = strndup(pk, pk_len)) || !(j->dir = strdup(dir))) {
        pthread_mutex_unlock(&p->lock);
        if (j)
            job_free(j);
        return -ENOMEM;
    }
    j->p = p;
    j->walk = w;
    j->hash = hash_fnv1a(dir);
    j->prev = p->tail;
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    p->jobs++;
    if (p->threads.n < p->nthreads)
        start_workers(p);
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

/* See store/store.h. */
void prefetch_walk_end(struct prefetch_walk *w, int complete)
{
    struct prefetch *p;
    struct pf_job *j, *next;
    int dropped = 0, stopped = 0;

    if (!w)
        return;
    p = w->p;
    pthread_mutex_lock(&p->lock);
    for (j = p->head; j; j = next) {
        next = j->next;
        if (j->walk != w)
            continue;
        j->walk = NULL;
        if (complete)
            continue;
        if (j->state == PF_QUEUED) {
            job_drop(p, j);
            dropped++;
        } else if (j->state == PF_RUNNING) {
            j->cancel = 1;
            stopped++;
        }
    }
    pthread_mutex_unlock(&p->lock);
    if (dropped + stopped)
        log_debug(&p->st->log,
                  "prefetch: /%s closed before its end: %d queued fetch(es) "
                  "dropped, %d stopped",
                  w->table, dropped, stopped);
    free(w->table);
    free(w);
}

/* See store/store.h. */
void prefetch_claim(struct prefetch *p, const char *dir)
{
    struct pf_job *j;

    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    while ((j = job_find(p, dir)) && j->state != PF_DONE) {
        j->claimed = 1;
        if (j->state == PF_QUEUED)
            run_job(p, j); /* not started: this walker fetches it, others join */
        else
            pthread_cond_wait(&p->done, &p->lock);
    }
    if (j) {
        job_drop(p, j); /* its listing is in the cache */
        pthread_cond_signal(&p->work);
    }
    pthread_mutex_unlock(&p->lock);
}

/* util/worker.c - the one place the daemon starts threads. Every background
 * thread (write-behind's senders, a split query's fetchers, the prefetch
 * pool, the metrics writer, the signal thread, a cursor's page fetcher) is
 * started here: named (top -H, gdb, /proc/PID/task/TID/comm), with every
 * signal blocked (a signal goes to a thread that waits for it, never to a
 * worker in the middle of a request), joined here, and counted here
 * against a budget where its owner gives one. Two shapes: a group
 * of threads that each run one function until it returns (struct
 * workers), and one thread that runs the jobs posted to it, one at a time
 * (struct worker). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* What a new thread needs before it runs its function. */
struct start {
    void *(*fn)(void *);
    void *arg;
    char name[16]; /* the kernel keeps 15 bytes of a thread's name */
};

/* The first thing every thread runs: its name, then its function. */
static void *trampoline(void *p)
{
    struct start st = *(struct start *)p;

    free(p);
    (void)pthread_setname_np(pthread_self(), st.name);
    return st.fn(st.arg);
}

/* Start one thread running FN(ARG), named NAME, with every signal blocked:
 * the mask is set around pthread_create, which the new thread inherits.
 * Returns 0 or -errno. */
static int start_thread(pthread_t *tid, const char *name, void *(*fn)(void *), void *arg)
{
    struct start *st = malloc(sizeof(*st));
    sigset_t all, old;
    int rc;

    if (!st)
        return -ENOMEM;
    st->fn = fn;
    st->arg = arg;
    snprintf(st->name, sizeof(st->name), "%s", name);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(tid, NULL, trampoline, st);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        free(st);
        return -rc;
    }
    return 0;
}

/* See util.h. */
int worker_budget_init(struct worker_budget *b, int limit)
{
    memset(b, 0, sizeof(*b));
    b->limit = limit < 0 ? 0 : limit;
    return lock_init(&b->lock);
}

/* See util.h. */
void worker_budget_destroy(struct worker_budget *b)
{
    pthread_mutex_destroy(&b->lock);
}

/* See util.h. */
void worker_budget_read(struct worker_budget *b, struct worker_budget_counts *out)
{
    pthread_mutex_lock(&b->lock);
    out->limit = b->limit;
    out->used = b->used;
    out->peak = b->peak;
    out->refused = b->refused;
    pthread_mutex_unlock(&b->lock);
}

/* Take a place in B (NULL: always one). 0, or -EAGAIN: none free. */
static int budget_take(struct worker_budget *b)
{
    int rc = 0;

    if (!b)
        return 0;
    pthread_mutex_lock(&b->lock);
    if (b->limit && b->used >= b->limit) {
        b->refused++;
        rc = -EAGAIN;
    } else if (++b->used > b->peak) {
        b->peak = b->used;
    }
    pthread_mutex_unlock(&b->lock);
    return rc;
}

/* Give N places back to B (NULL: nothing). */
static void budget_give(struct worker_budget *b, int n)
{
    if (!b || n <= 0)
        return;
    pthread_mutex_lock(&b->lock);
    b->used -= n;
    pthread_mutex_unlock(&b->lock);
}

/* See util.h. */
int workers_add(struct workers *w, const char *name, void *(*fn)(void *), void *arg)
{
    int rc;

    if (w->n >= WORKERS_MAX || budget_take(w->budget) < 0)
        return -EAGAIN;
    rc = start_thread(&w->tids[w->n], name, fn, arg);
    if (rc == 0)
        w->n++;
    else
        budget_give(w->budget, 1);
    return rc;
}

/* See util.h. */
int workers_start(struct workers *w, const char *name, int n, void *(*fn)(void *), void *arg)
{
    int started = 0;

    while (started < n && workers_add(w, name, fn, arg) == 0)
        started++;
    return started;
}

/* See util.h. */
void workers_join(struct workers *w)
{
    for (int i = 0; i < w->n; i++)
        pthread_join(w->tids[i], NULL);
    budget_give(w->budget, w->n);
    w->n = 0;
}

/* One thread and its one job slot. */
struct worker {
    pthread_mutex_t lock;
    pthread_cond_t cv;            /* a job posted, a job done, or stop; waited on
                                   with lock */
    pthread_t tid;                /* set by worker_new, read by worker_free */
    void (*job)(void *arg);       /* the posted job not yet done (NULL: none);
                                   guarded by lock (the thread reads it and ARG
                                   unlocked to run it: no post changes them
                                   until it is done) */
    void *arg;                    /* guarded by lock */
    int running;                  /* the job is running now; guarded by lock */
    int stop;                     /* worker_free asked the thread to end; guarded by lock */
    struct worker_budget *budget; /* its place's (borrowed), or NULL */
};

static void *worker_main(void *p)
{
    struct worker *w = p;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->job && !w->stop)
            pthread_cond_wait(&w->cv, &w->lock);
        if (!w->job)
            break;
        w->running = 1;
        pthread_mutex_unlock(&w->lock);
        w->job(w->arg);
        pthread_mutex_lock(&w->lock);
        w->running = 0;
        w->job = NULL;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* See util.h. */
int worker_new(struct worker **out, const char *name, struct worker_budget *budget)
{
    struct worker *w;
    int rc;

    *out = NULL;
    if ((rc = budget_take(budget)) < 0)
        return rc;
    if (!(w = calloc(1, sizeof(*w)))) {
        budget_give(budget, 1);
        return -ENOMEM;
    }
    w->budget = budget;
    lock_init(&w->lock);
    pthread_cond_init(&w->cv, NULL);
    if ((rc = start_thread(&w->tid, name, worker_main, w)) < 0) {
        budget_give(budget, 1);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return rc;
    }
    *out = w;
    return 0;
}

/* See util.h. */
void worker_post(struct worker *w, void (*job)(void *arg), void *arg)
{
    pthread_mutex_lock(&w->lock);
    while (w->job) /* one slot: the job before this one runs first */
        pthread_cond_wait(&w->cv, &w->lock);
    w->job = job;
    w->arg = arg;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->lock);
}

/* See util.h. */
void worker_wait(struct worker *w)
{
    pthread_mutex_lock(&w->lock);
    while (w->job)
        pthread_cond_wait(&w->cv, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

/* See util.h. */
void worker_free(struct worker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->tid, NULL); /* it runs the job posted, if any, first */
    budget_give(w->budget, 1);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

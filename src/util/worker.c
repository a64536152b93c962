/* util/worker.c - the one place the daemon starts threads. Every background
 * thread (write-behind's senders, a split query's fetchers, the prefetch
 * pool, the metrics writer, the signal thread, a cursor's page fetcher) is
 * started here: named (top -H, gdb, /proc/PID/task/TID/comm), with every
 * signal blocked (a signal goes to a thread that waits for it, never to a
 * worker in the middle of a request), and joined here. Two shapes: a group
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
int workers_add(struct workers *w, const char *name, void *(*fn)(void *), void *arg)
{
    int rc;

    if (w->n >= WORKERS_MAX)
        return -EAGAIN;
    rc = start_thread(&w->tids[w->n], name, fn, arg);
    if (rc == 0)
        w->n++;
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
    w->n = 0;
}

/* One thread and its one job slot. */
struct worker {
    pthread_mutex_t lock;
    pthread_cond_t cv;      /* a job posted, a job done, or stop; waited on
                                   with lock */
    pthread_t tid;          /* set by worker_new, read by worker_free */
    void (*job)(void *arg); /* the posted job not yet done (NULL: none);
                                   guarded by lock (the thread reads it and ARG
                                   unlocked to run it: no post changes them
                                   until it is done) */
    void *arg;              /* guarded by lock */
    int running;            /* the job is running now; guarded by lock */
    int stop;               /* worker_free asked the thread to end; guarded by lock */
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
int worker_new(struct worker **out, const char *name)
{
    struct worker *w = calloc(1, sizeof(*w));
    int rc;

    *out = NULL;
    if (!w)
        return -ENOMEM;
    lock_init(&w->lock);
    pthread_cond_init(&w->cv, NULL);
    if ((rc = start_thread(&w->tid, name, worker_main, w)) < 0) {
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
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* test_worker.c - util/worker.c: the one place threads start. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "util/util.h"

/* What a thread saw of itself. */
struct seen {
    pthread_mutex_t lock; /* NAME is written by every thread */
    atomic_int runs;
    atomic_int all_blocked; /* every run found SIGTERM, SIGINT, SIGUSR1 blocked */
    char name[16];
};

static void look(struct seen *s)
{
    sigset_t cur;

    pthread_sigmask(SIG_SETMASK, NULL, &cur);
    if (!sigismember(&cur, SIGTERM) || !sigismember(&cur, SIGINT) || !sigismember(&cur, SIGUSR1))
        atomic_store(&s->all_blocked, 0);
    pthread_mutex_lock(&s->lock);
    pthread_getname_np(pthread_self(), s->name, sizeof(s->name));
    pthread_mutex_unlock(&s->lock);
    atomic_fetch_add(&s->runs, 1);
}

static void *group_main(void *p)
{
    look(p);
    return NULL;
}

/* A group: every thread runs, with every signal blocked, named, and is
 * joined; the caller's own mask is as it was. */
static void test_group(void)
{
    struct workers w = { .n = 0 };
    struct seen s = { .lock = PTHREAD_MUTEX_INITIALIZER, .all_blocked = 1 };
    sigset_t before, after;

    pthread_sigmask(SIG_SETMASK, NULL, &before);
    is_int(workers_start(&w, "aztfs-test-a-long-name", 5, group_main, &s), 5,
           "group: 5 threads started");
    is_int(w.n, 5, "group: 5 held");
    workers_join(&w);
    is_int(w.n, 0, "group: empty after the join");
    is_int(atomic_load(&s.runs), 5, "group: every thread ran before the join returned");
    ok(atomic_load(&s.all_blocked), "group: every signal blocked in the threads");
    is_str(s.name, "aztfs-test-a-lo", "group: named (the kernel keeps 15 bytes)");
    pthread_sigmask(SIG_SETMASK, NULL, &after);
    ok(sigismember(&after, SIGTERM) == sigismember(&before, SIGTERM) &&
           sigismember(&after, SIGUSR1) == sigismember(&before, SIGUSR1),
       "group: the caller's mask is unchanged");
}

static void test_group_bound(void)
{
    struct workers w = { .n = 0 };
    struct seen s = { .lock = PTHREAD_MUTEX_INITIALIZER, .all_blocked = 1 };

    is_int(workers_start(&w, "t", WORKERS_MAX + 3, group_main, &s), WORKERS_MAX,
           "group: at most WORKERS_MAX threads");
    is_int(workers_add(&w, "t", group_main, &s), -EAGAIN, "group: one more is -EAGAIN");
    workers_join(&w);
    is_int(atomic_load(&s.runs), WORKERS_MAX, "group: all of them ran");
}

/* A budget shared by two groups and a worker: a thread starts only with a
 * place free, whichever of them asks, and gives it back when joined or
 * freed; the most at once and the refusals are counted. */
static void test_budget(void)
{
    struct worker_budget b;
    struct worker_budget_counts r;
    struct workers g1 = { .n = 0, .budget = &b }, g2 = { .n = 0, .budget = &b };
    struct seen s = { .lock = PTHREAD_MUTEX_INITIALIZER, .all_blocked = 1 };
    struct worker *w = NULL;

    is_int(worker_budget_init(&b, 5), 0, "budget: made with 5 places");
    is_int(workers_start(&g1, "t", 3, group_main, &s), 3, "budget: a group takes 3");
    is_int(workers_start(&g2, "t", 4, group_main, &s), 2, "budget: another gets the 2 left");
    is_int(worker_new(&w, "t", &b), -EAGAIN, "budget: a worker finds none free");
    ok(w == NULL, "budget: and is not made");
    is_int(workers_add(&g1, "t", group_main, &s), -EAGAIN, "budget: nor one more of a group");
    workers_join(&g1);
    is_int(worker_new(&w, "t", &b), 0, "budget: a place freed by a join is taken");
    worker_budget_read(&b, &r);
    ok(r.limit == 5 && r.used == 3 && r.peak == 5 && r.refused == 3,
       "budget: 3 running, 5 at most, 3 refused (limit %d used %d peak %d refused %lu)", r.limit,
       r.used, r.peak, r.refused);
    worker_free(w);
    workers_join(&g2);
    worker_budget_read(&b, &r);
    is_int(r.used, 0, "budget: every place given back");
    worker_budget_destroy(&b);

    is_int(worker_budget_init(&b, 0), 0, "budget: 0 is no bound");
    g1.budget = &b;
    is_int(workers_start(&g1, "t", 20, group_main, &s), 20, "budget: no bound, 20 start");
    workers_join(&g1);
    worker_budget_read(&b, &r);
    ok(r.peak == 20 && r.used == 0 && r.refused == 0, "budget: unbounded, still counted");
    worker_budget_destroy(&b);
}

/* Jobs of one worker: run in the order posted, one at a time, on one
 * thread that is not the caller's. */
struct order {
    int log[8];
    int n;
    atomic_int busy, overlap;
    pthread_t tid[8];
};

struct step {
    struct order *o;
    int id;
};

static void job(void *p)
{
    struct step *st = p;

    if (atomic_fetch_add(&st->o->busy, 1) != 0)
        atomic_store(&st->o->overlap, 1);
    usleep(2000);
    st->o->tid[st->o->n] = pthread_self();
    st->o->log[st->o->n++] = st->id;
    atomic_fetch_sub(&st->o->busy, 1);
}

static void test_worker(void)
{
    struct worker *w = NULL;
    struct order o = { .n = 0 };
    struct step steps[6];
    int in_order = 1, same = 1;

    is_int(worker_new(&w, "aztfs-test", NULL), 0, "worker: started");
    for (int i = 0; i < 6; i++) {
        steps[i] = (struct step){ &o, i };
        worker_post(w, job, &steps[i]);
    }
    worker_wait(w);
    is_int(o.n, 6, "worker: every job done when worker_wait returns");
    for (int i = 0; i < o.n; i++) {
        in_order &= o.log[i] == i;
        same &= pthread_equal(o.tid[i], o.tid[0]) != 0;
    }
    ok(in_order, "worker: jobs run in the order posted");
    ok(same && !pthread_equal(o.tid[0], pthread_self()), "worker: all on its one thread");
    ok(!atomic_load(&o.overlap), "worker: one job at a time");
    worker_post(w, job, &steps[0]);
    worker_free(w); /* the job posted runs first */
    is_int(o.n, 7, "worker: a job posted before worker_free runs");
    worker_free(NULL);
    ok(1, "worker: worker_free(NULL) is a no-op");
}

int main(void)
{
    test_group();
    test_group_bound();
    test_budget();
    test_worker();
    return done_testing();
}

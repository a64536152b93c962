/* table/split.c - one query's pages fetched as disjoint key ranges in
 * parallel (table/table_i.h: table_split_new).
 *
 * The query starts as one range, read page by page by a worker. When a
 * page of a range comes back with more to come and fewer than
 * SPLIT_OPEN_PER_WAY * WAYS ranges are open, the rest of that range (after
 * the page's last key) is cut into ranges at keys guessed from the page
 * (table_split_cuts) and the range ends
 * there: each new range is its own query (the query's filter and'ed with
 * its PartitionKey/RowKey bounds, never a continuation token of another
 * query: Azure's are opaque). Pages are handed to the reader in key order
 * (ranges in order, each range's pages in order), so the reader sees what
 * the one query would have shown. Each range costs at most one request
 * more than the sequential scan would (its last, partial page, or one
 * empty answer), and at most SPLIT_MAX_RANGES ranges are made (none after
 * SPLIT_MAX_EMPTY came back empty).
 *
 * Order of the fetches: the reader's next range when the reader waits for
 * it (whatever the pages held); else, while fewer than WAYS + SPLIT_HELD_EXTRA
 * pages are held, an open-ended range (no upper bound: its page makes the
 * next cut) as soon as fewer than WAYS idle ranges wait before it, and
 * otherwise the ranges in key order. A page's cut is made as soon as it is
 * parsed, and the page joins its range then, before the PREP works on it,
 * so the next fetches (its range's next page too) go out first. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/table.h"
#include "entity/entity.h"
#include "util/util.h"
#include "table/table_i.h"

/* A page is its fetcher's until it joins its range's list, and the
 * reader's once taken off it (table_split_next). */
struct split_page {
    struct split_page *next; /* guarded by table_split.lock */
    json_t *value;           /* the page's "value" array (owned; NULL: replaced by
                              * PREP): set before it joins the list, cleared by
                              * its fetcher when replaced */
    void *prep;              /* what the split's PREP made of it (owned): set
                              * by its fetcher, with PREPPING cleared */
    int prepping;            /* its fetcher's PREP is at work on it: the reader
                              * waits; guarded by table_split.lock */
};

/* A range of keys below HI (NULL: no bound) in one dimension: RowKeys of
 * partition PK when PK is set, else PartitionKeys (its lower bound is in
 * its query only). */
struct split_range {
    struct split_range *next;       /* key order; guarded by table_split.lock */
    char *pk, *hi;                  /* set when it is made */
    struct table_cursor *cur;       /* its query (NULL: the range is complete); guarded by
                                     * table_split.lock (the one fetching it, BUSY, uses
                                     * it unlocked while its request is out) */
    struct split_page *head, *tail; /* guarded by table_split.lock */
    size_t entities;                /* guarded by table_split.lock */
    int busy;                       /* a worker is fetching its next page; guarded by
                                     * table_split.lock */
    int rc;                         /* a failed fetch, for the reader (0: none); guarded by
                                     * table_split.lock */
    struct az_status st;            /* guarded by table_split.lock */
};

struct table_split {
    pthread_mutex_t lock;
    pthread_cond_t work;          /* a range may be fetched, or stop; waited on with lock */
    pthread_cond_t ready;         /* a page or a failure for the reader; waited on with
                                   * lock */
    struct table_client *tc;      /* set by the first table_split_next, before the
                                   * workers start; guarded by lock */
    const struct table_cursor *c; /* the query split (borrowed: its owner); set by
                                   * table_split_new */
    struct split_range *ranges;   /* not yet read to their end by the reader; guarded by
                                   * lock */
    struct workers threads;       /* the fetchers (util/worker.c); none: the reader
                                   * fetches. Started by the reader under lock, joined
                                   * by table_split_free */
    int ways;                     /* set by table_split_new */
    int one_partition;            /* cut RowKeys only: set by table_split_new */
    int no_cuts;                  /* cut nothing (SPLIT_CUT_NONE): set by
                                   * table_split_new */
    int made, empty;              /* ranges made by cuts, ranges that held nothing;
                                   * guarded by lock */
    size_t held;                  /* pages fetched and not yet read, and fetches under
                                   * way; guarded by lock */
    int stop;                     /* guarded by lock */
    int ended;                    /* the reader stopped it (table_split_next); guarded
                                   * by lock */
    struct table_prep prep;       /* the workers' work on each page (none: NULLs): set
                                   * by table_split_new */
    void *page_prep;              /* the prep of the page the reader's FN has: the
                                   * reader's alone, no lock */
};

/* Free page PG of SP (NULL: nothing). */
static void page_free(const struct table_split *sp, struct split_page *pg)
{
    if (!pg)
        return;
    json_decref(pg->value);
    if (pg->prep)
        sp->prep.free(pg->prep);
    free(pg);
}

static void range_free(const struct table_split *sp, struct split_range *r)
{
    struct split_page *p, *n;

    if (!r)
        return;
    for (p = r->head; p; p = n) {
        n = p->next;
        page_free(sp, p);
    }
    table_cursor_free(r->cur);
    free(r->pk);
    free(r->hi);
    free(r);
}

/* A range below HI (NULL: no bound) in one dimension, RowKeys of partition
 * PK when PK is set (paced by its target), else PartitionKeys, read by the
 * query SP->c narrowed by filter F (F NULL: ENOMEM; SP->c's fields are
 * only read). NULL on ENOMEM. */
static struct split_range *range_make(struct table_split *sp, const char *pk, const char *hi,
                                      const char *f)
{
    struct split_range *r = f ? calloc(1, sizeof(*r)) : NULL;

    if (!r || (pk && !(r->pk = strdup(pk))) || (hi && !(r->hi = strdup(hi))) ||
        table_cursor_narrow(sp->c, f, &r->cur) < 0 ||
        (pk && table_cursor_partition(r->cur, pk) < 0)) {
        range_free(sp, r);
        r = NULL;
    }
    return r;
}

/* A range of keys K with LO < K (LO_INCL: LO <= K; LO NULL: no bound) and
 * K < HI, RowKeys of partition PK when PK is set, else PartitionKeys, and
 * its query. NULL on ENOMEM. */
static struct split_range *range_new(struct table_split *sp, const char *pk, const char *lo,
                                     int lo_incl, const char *hi)
{
    struct split_range *r = NULL;
    const char *key = pk ? "RowKey" : "PartitionKey";
    char *upper = hi ? table_filter_cmp(key, "lt", hi, NULL) : NULL;
    char *lower = lo ? table_filter_cmp(key, lo_incl ? "ge" : "gt", lo, upper) : NULL;
    char *bounds = pk && !sp->one_partition ?
        table_filter_cmp("PartitionKey", "eq", pk, lower ? lower : upper) :
        NULL;
    const char *f = bounds ? bounds : lower ? lower : upper;

    if ((!hi || upper) && (!lo || lower) && (!(pk && !sp->one_partition) || bounds))
        r = range_make(sp, pk, hi, f);
    free(upper);
    free(lower);
    free(bounds);
    return r;
}

/* The range of the keys after (PK, RK) and below partition HI (NULL: no
 * bound), a range of PartitionKeys starting inside partition PK: its query
 * "PartitionKey ge PK [and PartitionKey lt HI] and (PartitionKey gt PK or
 * RowKey gt RK)". The top-level terms bound the partitions the service
 * reads (an "or" of key terms alone would make it scan); the "or" drops the
 * rows of PK up to RK, which the page just read. One query instead of the
 * rest of PK (usually empty: a page tends to end where a partition does)
 * and the partitions after it. NULL on ENOMEM. */
static struct split_range *range_after(struct table_split *sp, const char *pk, const char *rk,
                                       const char *hi)
{
    struct split_range *r = NULL;
    char *pk_gt = table_filter_cmp("PartitionKey", "gt", pk, NULL);
    char *rk_gt = table_filter_cmp("RowKey", "gt", rk, NULL);
    char *either = NULL, *upper = NULL, *f = NULL;

    if (!pk_gt || !rk_gt || asprintf(&either, "(%s or %s)", pk_gt, rk_gt) < 0)
        either = NULL;
    if (either && hi)
        upper = table_filter_cmp("PartitionKey", "lt", hi, either);
    if (either && (!hi || upper))
        f = table_filter_cmp("PartitionKey", "ge", pk, upper ? upper : either);
    r = range_make(sp, NULL, hi, f);
    free(pk_gt);
    free(rk_gt);
    free(either);
    free(upper);
    free(f);
    return r;
}

/* The ranges open: made and not yet fetched to their end (SP locked). */
static int open_ranges(const struct table_split *sp)
{
    int n = 0;

    LOCK_HELD(&sp->lock);
    for (const struct split_range *r = sp->ranges; r; r = r->next)
        n += r->cur != NULL;
    return n;
}

/* Append to *TAIL the ranges from LO (LO_INCL) to HI cut at CUTS[0..N)
 * (RowKeys of partition PK when PK is set, else PartitionKeys). Returns how
 * many (N + 1), or -ENOMEM. */
static int add_ranges(struct table_split *sp, struct split_range ***tail, const char *pk,
                      const char *lo, int lo_incl, char **cuts, int n, const char *hi)
{
    const char *from = lo;

    for (int i = 0; i <= n; i++) {
        const char *to = i == n ? hi : cuts[i];
        struct split_range *nr = range_new(sp, pk, from, i ? 1 : lo_incl, to);

        if (!nr)
            return -ENOMEM;
        **tail = nr;
        *tail = &nr->next;
        from = to;
    }
    return n + 1;
}

/* R's page VALUE with more to come ran from keys (FPK, FRK) to (PK, RK): cut the
 * rest of R into ranges, when there is room for more to be open (SP
 * locked); R's query then ends with this page. Within a partition (R's, or
 * the query's), RowKeys are cut; else, when the next page's token seems to
 * name PK (a big partition), the rest of PK is cut by RowKey and the
 * partitions after it are one range, and otherwise the rest of PK and the
 * partitions before the first PartitionKey cut are one range (range_after:
 * the page usually ended with PK, and the rest of PK alone would be an
 * empty answer) and the PartitionKeys after it are cut. Nothing happens
 * on ENOMEM or when no cut can be guessed (R reads on). */
static void split_range(struct table_split *sp, struct split_range *r, const char *fpk,
                        const char *frk, const char *pk, const char *rk, const json_t *value)
{
    char *rcuts[SPLIT_MAX_RANGES] = { NULL }, *pcuts[SPLIT_MAX_RANGES] = { NULL };
    struct split_range *list = NULL, **tail = &list, *nr;
    int room, nr_cut = 0, np_cut = 0, made = 0, rc, in_row = r->pk || sp->one_partition;
    int big = 0;

    LOCK_HELD(&sp->lock);
    if (sp->no_cuts)
        return;
    room = SPLIT_OPEN_PER_WAY * sp->ways - open_ranges(sp) + 1; /* R's place too */
    if (room > SPLIT_MAX_RANGES - sp->made)
        room = SPLIT_MAX_RANGES - sp->made;
    if (room < 2 || sp->empty >= SPLIT_MAX_EMPTY || !pk || !rk || !frk || (!in_row && !fpk))
        return;
    /* a cut trusts the service's key order: never on a service that has
     * none (Cosmos DB), nor after a page that shows none (checked only
     * here, where a cut is to be made: at most SPLIT_MAX_RANGES times) */
    if (!table_client_ordered(sp->tc))
        return;
    if (!table_page_in_order(value)) {
        table_client_disorder(sp->tc, "a split query");
        return;
    }
    if (in_row) {
        if ((nr_cut = table_split_cuts(frk, rk, r->hi, rcuts, room - 1)) <= 0)
            return;
    } else {
        /* a big partition gets the room; the partitions after it stay one
         * range, cut when its first page shows what they look like */
        big = table_token_names(table_cursor_next_pk(r->cur), pk);
        if (big)
            nr_cut = table_split_cuts(frk, rk, NULL, rcuts, room - 2);
        else if ((np_cut = table_split_cuts(fpk, pk, r->hi, pcuts, room - 2)) == 0)
            return;
        if (nr_cut < 0 || np_cut < 0) {
            nr_cut = np_cut = 0; /* ENOMEM: the cuts made were freed */
            goto out;
        }
    }
    if (in_row || big) {
        if ((rc = add_ranges(sp, &tail, pk, rk, 0, rcuts, nr_cut, in_row ? r->hi : NULL)) < 0)
            goto out;
        made = rc;
        if (!in_row) { /* the partitions after the big one: one range */
            if ((rc = add_ranges(sp, &tail, NULL, pk, 0, (char *[]){ NULL }, 0, r->hi)) < 0)
                goto out;
            made += rc;
        }
    } else {
        /* the rest of PK and the partitions before the first cut: one range */
        if (!(nr = range_after(sp, pk, rk, pcuts[0])))
            goto out;
        *tail = nr;
        tail = &nr->next;
        if ((rc = add_ranges(sp, &tail, NULL, pcuts[0], 1, pcuts + 1, np_cut - 1, r->hi)) < 0)
            goto out;
        made = rc + 1;
    }
    *tail = r->next;
    r->next = list;
    list = NULL;
    sp->made += made;
    table_cursor_free(r->cur);
    r->cur = NULL;
    log_debug(sp->tc->lg, "query cut after %s/%s into %d ranges fetched in parallel", pk, rk, made);
out:
    while (list) {
        nr = list->next;
        range_free(sp, list);
        list = nr;
    }
    for (int i = 0; i < nr_cut; i++)
        free(rcuts[i]);
    for (int i = 0; i < np_cut; i++)
        free(pcuts[i]);
}

/* What a worker's page callback gathers. */
struct split_fetch {
    json_t *value;
    /* the first PartitionKey, the last keys, and the first RowKey of the
     * last partition (owned, freed by keys_free; NULL: none) */
    char *fpk, *frk, *pk, *rk;
};

static void keys_free(struct split_fetch *f)
{
    free(f->fpk);
    free(f->frk);
    free(f->pk);
    free(f->rk);
}

/* Is entity I of page VALUE of partition PK? */
static int of_partition(const json_t *value, size_t i, const char *pk)
{
    char *k = table_entity_key(json_array_get(value, i), ENTITY_PK);
    int same = k && strcmp(k, pk) == 0;

    free(k);
    return same;
}

static int on_fetched(void *ctx, json_t *value)
{
    struct split_fetch *f = ctx;
    size_t n = json_array_size(value), lo = 0, hi;

    f->value = json_incref(value);
    if (n == 0)
        return 0;
    hi = n - 1;
    f->fpk = table_entity_key(json_array_get(value, 0), ENTITY_PK);
    f->pk = table_entity_key(json_array_get(value, hi), ENTITY_PK);
    f->rk = table_entity_key(json_array_get(value, hi), ENTITY_RK);
    /* the first entity of the last partition: a page's keys come in order,
     * so that partition's entities are its tail (entity HI is one) */
    while (f->pk && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (of_partition(value, mid, f->pk))
            hi = mid;
        else
            lo = mid + 1;
    }
    f->frk = table_entity_key(json_array_get(value, hi), ENTITY_RK);
    return 0;
}

/* The range a worker should fetch next (SP locked): the reader's next
 * range when it waits for it, always; else, if the pages held leave room,
 * an open-ended range (its first page makes the next cut) once fewer than
 * WAYS idle ranges wait before it, or the first open idle range in key
 * order. NULL: none. */
static struct split_range *next_range(struct table_split *sp)
{
    struct split_range *first = NULL, *r;
    int before = 0;

    LOCK_HELD(&sp->lock);
    r = sp->ranges;
    if (r && r->cur && !r->busy && !r->rc && !r->head)
        return r;
    if (sp->held >= (size_t)sp->ways + SPLIT_HELD_EXTRA)
        return NULL;
    for (; r; r = r->next) {
        if (!r->cur || r->busy || r->rc)
            continue;
        if (!r->hi && before < sp->ways)
            return r;
        if (!first)
            first = r;
        before++;
    }
    return first;
}

/* Fetch R's next page (SP locked; unlocked while the request is out and
 * while the PREP works on the page). The page joins R as soon as it is
 * parsed, its PREP still to come (PREPPING: the reader waits for it), so
 * R's next page may be fetched while this one is worked on: at 0 ms a
 * page's work took longer than its fetch, and a range read one page after
 * the other, fetch then work, was slower than one page ahead. */
static void fetch_one(struct table_split *sp, struct split_range *r)
{
    struct split_fetch f = { 0 };
    struct split_page *pg;
    struct az_status st = { 0 };
    void *prep;
    int rc, replaced;

    LOCK_HELD(&sp->lock);
    r->busy = 1;
    sp->held++;
    pthread_mutex_unlock(&sp->lock);
    rc = table_cursor_next(sp->tc, r->cur, on_fetched, &f, &st);
    pg = rc >= 0 ? calloc(1, sizeof(*pg)) : NULL;
    pthread_mutex_lock(&sp->lock);
    /* the rest of R is cut as soon as the page's keys are known, so the
     * next fetches go out before the work on this page */
    if (rc > 0 && !sp->stop)
        split_range(sp, r, f.fpk, f.frk, f.pk, f.rk, f.value);
    keys_free(&f);
    r->busy = 0;
    if (rc >= 0 && !pg)
        rc = -ENOMEM;
    if (rc < 0) {
        sp->held--;
        json_decref(f.value);
        r->rc = rc;
        r->st = st;
        pthread_cond_broadcast(&sp->ready);
        pthread_cond_broadcast(&sp->work);
        return;
    }
    pg->value = f.value;
    pg->prepping = sp->prep.prep && json_array_size(f.value) > 0;
    if (r->tail)
        r->tail->next = pg;
    else
        r->head = pg;
    r->tail = pg;
    r->entities += json_array_size(f.value);
    if (rc == 0) {
        table_cursor_free(r->cur);
        r->cur = NULL;
        sp->empty += r->entities == 0;
    }
    pthread_cond_broadcast(&sp->ready);
    pthread_cond_broadcast(&sp->work);
    if (!pg->prepping)
        return;
    /* PG is still this thread's to finish: the reader does not take a page
     * being prepped, and nothing else frees one before the workers are
     * joined */
    pthread_mutex_unlock(&sp->lock);
    prep = sp->prep.prep(f.value); /* NULL (ENOMEM): the reader does it */
    pthread_mutex_lock(&sp->lock);
    replaced = prep && sp->prep.replaces;
    pg->prep = prep;
    pg->prepping = 0;
    if (replaced)
        pg->value = NULL;
    pthread_cond_broadcast(&sp->ready);
    if (replaced) {
        /* the page's JSON freed by the thread that made it (its memory
         * goes back where it came from) */
        pthread_mutex_unlock(&sp->lock);
        json_decref(f.value);
        pthread_mutex_lock(&sp->lock);
    }
}

static void *worker_main(void *arg)
{
    struct table_split *sp = arg;
    struct split_range *r;

    pthread_mutex_lock(&sp->lock);
    while (!sp->stop) {
        if ((r = next_range(sp)))
            fetch_one(sp, r);
        else
            pthread_cond_wait(&sp->work, &sp->lock);
    }
    pthread_mutex_unlock(&sp->lock);
    return NULL;
}

/* See table/table_i.h. */
int table_split_new(struct table_split **out, const struct table_cursor *c, int ways,
                    enum split_cuts cuts, const struct table_prep *prep)
{
    struct table_split *sp = calloc(1, sizeof(*sp));
    struct split_range *r = calloc(1, sizeof(*r));

    *out = NULL;
    if (!sp || !r || table_cursor_narrow(c, NULL, &r->cur) < 0) {
        range_free(sp, r);
        free(sp);
        return -ENOMEM;
    }
    sp->c = c;
    sp->ranges = r;
    sp->ways = ways < 1 ? 1 : ways > SPLIT_MAX_WAYS ? SPLIT_MAX_WAYS : ways;
    sp->one_partition = cuts == SPLIT_CUT_ROWS;
    sp->no_cuts = cuts == SPLIT_CUT_NONE;
    if (prep && prep->prep && prep->free)
        sp->prep = *prep;
    lock_init(&sp->lock);
    pthread_cond_init(&sp->work, NULL);
    pthread_cond_init(&sp->ready, NULL);
    *out = sp;
    return 0;
}

/* See table/table_i.h. */
void *table_split_page_prep(const struct table_split *sp)
{
    return sp->page_prep;
}

/* See table/table_i.h. */
void table_split_free(struct table_split *sp)
{
    struct split_range *r, *n;
    int unread = 0;

    if (!sp)
        return;
    pthread_mutex_lock(&sp->lock);
    sp->stop = 1;
    pthread_cond_broadcast(&sp->work);
    pthread_mutex_unlock(&sp->lock);
    workers_join(&sp->threads);
    for (r = sp->ranges; r; r = n) {
        n = r->next;
        range_free(sp, r);
        unread++;
    }
    if (unread && sp->tc && !sp->ended)
        log_debug(sp->tc->lg, "query stopped before its end: %d ranges not read", unread);
    pthread_mutex_destroy(&sp->lock);
    pthread_cond_destroy(&sp->work);
    pthread_cond_destroy(&sp->ready);
    free(sp);
}

/* Start SP's workers (SP locked); without any, the reader fetches. */
static void start_workers(struct table_split *sp, struct table_client *tc)
{
    LOCK_HELD(&sp->lock);
    sp->tc = tc;
    sp->threads.budget = &tc->threads;
    if (sp->threads.n < sp->ways)
        (void)workers_start(&sp->threads, "aztfs-split", sp->ways - sp->threads.n, worker_main, sp);
}

/* Drop the ranges at the head that are read to their end (SP locked). */
static void drop_read(struct table_split *sp)
{
    struct split_range *r;

    LOCK_HELD(&sp->lock);
    while ((r = sp->ranges) && !r->cur && !r->head && !r->busy) {
        sp->ranges = r->next;
        range_free(sp, r);
    }
}

/* See table/table_i.h. */
int table_split_next(struct table_client *tc, struct table_split *sp, table_page_fn fn, void *ctx,
                     struct az_status *st)
{
    struct split_range *r;
    struct split_page *pg;
    int rc;

    pthread_mutex_lock(&sp->lock);
    if (sp->ended) {
        pthread_mutex_unlock(&sp->lock);
        return 0;
    }
    if (!sp->tc)
        start_workers(sp, tc);
    for (;;) {
        drop_read(sp);
        if (!(r = sp->ranges)) {
            pthread_mutex_unlock(&sp->lock);
            return 0;
        }
        if (r->head && !r->head->prepping)
            break;
        if (!r->head && r->rc) { /* failed: told once, fetched again when asked again */
            rc = r->rc;
            *st = r->st;
            r->rc = 0;
            pthread_mutex_unlock(&sp->lock);
            return rc;
        }
        if (tc->cancelled && tc->cancelled(tc->cancel_ctx)) {
            pthread_mutex_unlock(&sp->lock);
            memset(st, 0, sizeof(*st));
            snprintf(st->message, sizeof(st->message), "cancelled");
            return -EINTR;
        }
        if (!r->head && sp->threads.n == 0 && !r->busy) {
            fetch_one(sp, r);
        } else { /* a fetch, or the work on the head page, under way */
            if (!r->head && r->cur && !r->busy) /* a worker must take it: wake them */
                pthread_cond_broadcast(&sp->work);
            pthread_cond_wait(&sp->ready, &sp->lock);
        }
    }
    pg = r->head;
    if (!(r->head = pg->next))
        r->tail = NULL;
    sp->held--;
    pthread_cond_broadcast(&sp->work);
    pthread_mutex_unlock(&sp->lock);
    sp->page_prep = pg->prep; /* only the reader reads it: no lock */
    rc = fn(ctx, pg->value);
    sp->page_prep = NULL;
    page_free(sp, pg);
    if (rc != 0) { /* stopped early, or failed: the query ends */
        pthread_mutex_lock(&sp->lock);
        sp->stop = sp->ended = 1;
        pthread_cond_broadcast(&sp->work);
        pthread_mutex_unlock(&sp->lock);
        return rc > 0 ? 0 : rc;
    }
    pthread_mutex_lock(&sp->lock);
    drop_read(sp);
    rc = sp->ranges != NULL;
    pthread_mutex_unlock(&sp->lock);
    return rc;
}

/* listcost.c - aztfs's own CPU cost per listed entity, without FUSE or the network.
 *
 *     listcost PAGE.json ROUNDS
 *
 * PAGE.json is one Query Entities page as the service sends it (bench/listcost.py
 * writes one of bench/seed.py's entities). Each round parses the page
 * (table_parse_page: what a listing's fetch does) and hands every entity to
 * store_list_entity (render, digest, cache insert, listing entry: what a
 * listing costs per entity), in a fresh cache per round, into one partition
 * directory; then it does the same the way a split listing does
 * (-o scan_parallel > 1): the page rendered ahead (store_render_page, in a
 * worker thread of the mount) and listed from that alone (store_list_entity
 * with the rendered entity and no JSON: what is left for FUSE's thread). Prints one line of
 * JSON: the fastest round's CPU time per entity, in microseconds, for the
 * parse, the listing, the rendering ahead and the listing after it, and the
 * entities a round. The fastest of many rounds, in CPU time, is steady on a busy
 * machine where wall times of a mount are not. Built against src/libaztfs.a
 * by listcost.py. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A tree of one folder per layer (src/table/table.h), or an older flat one:
 * listcost.py builds this against either, to compare them. */
#if __has_include("table/table.h")
#include "cache/cache.h"
#include "store/store.h"
#include "table/table.h"
#else
#include "cursor.h"
#include "listing.h"
#include "storecore.h"
#endif

struct round {
    struct store *s;
    struct listing *l;
    int ahead;          /* render the page first (store_render_page) */
    double list_s;      /* CPU seconds in store_list_entity */
    double ahead_s;     /* CPU seconds in store_render_page */
    size_t n;
};

static double cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* table_parse_page's callback: list every entity of the page VALUE. */
static int list_page(void *ctx, json_t *value)
{
    struct round *r = ctx;
    double t0 = cpu_now();
    struct store_page_render *pre = r->ahead ? store_render_page(value) : NULL;
    size_t i, n = pre ? pre->n : json_array_size(value);
    int rc = 0;

    if (r->ahead && !pre)
        return -ENOMEM;
    r->ahead_s = cpu_now() - t0;
    t0 = cpu_now();
    for (i = 0; i < n; i++) {
        rc = store_list_entity(r->s, "/bench/p00", pre ? NULL : json_array_get(value, i), r->l,
                               NULL, pre ? &pre->e[i] : NULL);
        if (rc < 0)
            break;
        r->n++;
    }
    r->list_s = cpu_now() - t0;
    store_render_page_free(pre);
    return rc < 0 ? rc : 0;
}

/* Read the whole file PATH into *OUT (*LEN bytes). Returns 0 or -errno. */
static int read_file(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    long size;
    int rc = -EIO;

    *out = NULL;
    if (!f)
        return -errno;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        *out = malloc((size_t)size + 1);
        rc = !*out ? -ENOMEM : fread(*out, 1, (size_t)size, f) == (size_t)size ? 0 : -EIO;
        *len = (size_t)size;
    }
    fclose(f);
    if (rc < 0) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

/* One round: parse BODY (LEN bytes) and list it (AHEAD: rendered ahead),
 * into R (its store gets a fresh cache, freed here). Returns the CPU
 * seconds of the parse, or -1 (a message printed). */
static double one_round(const char *body, size_t len, struct round *r)
{
    struct az_status st;
    double t0;
    int rc;

    memset(&st, 0, sizeof(st));
    r->s->cache = cache_new(1u << 30, 30);
    r->l = listing_new();
    if (!r->s->cache || !r->l) {
        fprintf(stderr, "listcost: out of memory\n");
        return -1;
    }
    t0 = cpu_now();
    rc = table_parse_page(body, len, list_page, r, &st);
    t0 = cpu_now() - t0 - r->list_s - r->ahead_s;
    listing_unref(r->l);
    cache_free(r->s->cache);
    if (rc < 0) {
        fprintf(stderr, "listcost: the page failed (%d): %s\n", rc, st.message);
        return -1;
    }
    return t0;
}

int main(int argc, char **argv)
{
    double best[4] = { 1e9, 1e9, 1e9, 1e9 };    /* parse, list, render ahead, list after */
    size_t len = 0, n = 0;
    char *body = NULL;
    int rounds;

    if (argc != 3 || (rounds = atoi(argv[2])) < 1) {
        fprintf(stderr, "usage: listcost PAGE.json ROUNDS\n");
        return 2;
    }
    if (read_file(argv[1], &body, &len) < 0) {
        fprintf(stderr, "listcost: cannot read %s\n", argv[1]);
        return 1;
    }
    for (int i = 0; i < 2 * rounds; i++) {
        struct store s = { .log = { .level = LOG_LVL_WARN }, .cache_timeout = 30,
                           .negative_timeout = 1 };
        struct round r = { .s = &s, .ahead = i % 2 };
        double parse = one_round(body, len, &r);

        if (parse < 0) {
            free(body);
            return 1;
        }
        if (!r.ahead && parse < best[0])
            best[0] = parse;
        if (!r.ahead && r.list_s < best[1])
            best[1] = r.list_s;
        if (r.ahead && r.ahead_s < best[2])
            best[2] = r.ahead_s;
        if (r.ahead && r.list_s < best[3])
            best[3] = r.list_s;
        n = r.n;
    }
    free(body);
    if (n == 0) {
        fprintf(stderr, "listcost: the page held no entity\n");
        return 1;
    }
    printf("{\"entities\": %zu, \"parse_us\": %.3f, \"list_us\": %.3f, \"render_ahead_us\": %.3f, "
           "\"list_after_us\": %.3f}\n", n, best[0] / (double)n * 1e6, best[1] / (double)n * 1e6,
           best[2] / (double)n * 1e6, best[3] / (double)n * 1e6);
    return 0;
}

/* test_split.c - a query split into key ranges (table/split.c) against a
 * tiny Table service the test runs on 127.0.0.1 (TAP): it holds a table
 * of keys, answers Query Entities pages of a few entities with
 * continuation tokens, and evaluates the filters the split writes (key
 * comparisons joined by "and", one "or" in parentheses). Checked: the
 * exact filter of the range after a page that ends in a partition
 * (range_after) and of the ranges cut by RowKey (a big partition, a
 * one-partition query), and that the reader gets every entity exactly
 * once, in key order, whatever the table's shape and the page size, and
 * with a PREP at work on the pages (the reader waits for a page's). And a
 * service that keeps no key order (Cosmos DB for Table: its pages in any
 * order, opaque tokens): a client told so (table_client_set_ordered)
 * cuts nothing and gets every entity once, in the service's order; one
 * that trusted the order sees a page out of order, cuts nothing, and
 * from then on trusts it no more. And the RowKeys a range is cut at
 * (table_split_cuts, table/splitkeys.c). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "auth/auth.h"
#include "entity/entity.h"
#include "http/http.h"
#include "table/table.h"
#include "table/table_i.h"
#include "util/util.h"
#include "tap.h"
#include "httpd.h"

/* --- the service ------------------------------------------------------------ */

struct ent {
    char pk[16], rk[16];
};

#define TABLE_MAX 256
#define FILTERS_MAX 256

/* What the service holds and how it answers (httpd.lock). */
static struct {
    struct ent e[TABLE_MAX]; /* in the order the service answers: key order,
                              * unless shuffled (svc_shuffle) */
    int n;
    int page;                   /* entities per page */
    int emulator;               /* NextPartitionKey: base64 of the key (else opaque) */
    char *filters[FILTERS_MAX]; /* each request's $filter ("": none) */
    int nfilters;
    int bad; /* filters the service could not read */
} svc;

/* Filters: a disjunction of conjunctions of terms, a term being a
 * parenthesised disjunction or "Field op 'literal'". Each function
 * evaluates what starts at *P for E and moves *P past it. */
static int m_disj(const char **p, const struct ent *e);

static int m_cmp(const char **p, const struct ent *e)
{
    char field[16], op[4], lit[64];
    size_t n = 0;
    int c;

    if (sscanf(*p, "%15s %3s '", field, op) != 2 || !(*p = strchr(*p, '\''))) {
        svc.bad++;
        return 0;
    }
    for ((*p)++; **p && !(**p == '\'' && (*p)[1] != '\''); (*p)++) {
        if (**p == '\'')
            (*p)++; /* '' is one quote */
        if (n < sizeof(lit) - 1)
            lit[n++] = **p;
    }
    lit[n] = '\0';
    if (**p == '\'')
        (*p)++;
    c = strcmp(strcmp(field, "PartitionKey") == 0 ? e->pk : e->rk, lit);
    if (strcmp(field, "PartitionKey") != 0 && strcmp(field, "RowKey") != 0)
        svc.bad++;
    return !strcmp(op, "eq") ? c == 0 :
        !strcmp(op, "ne")    ? c != 0 :
        !strcmp(op, "lt")    ? c < 0 :
        !strcmp(op, "le")    ? c <= 0 :
        !strcmp(op, "gt")    ? c > 0 :
        !strcmp(op, "ge")    ? c >= 0 :
                               (svc.bad++, 0);
}

static int m_term(const char **p, const struct ent *e)
{
    int v;

    if (**p != '(')
        return m_cmp(p, e);
    (*p)++;
    v = m_disj(p, e);
    if (**p == ')')
        (*p)++;
    else
        svc.bad++;
    return v;
}

static int m_conj(const char **p, const struct ent *e)
{
    int v = m_term(p, e);

    while (strncmp(*p, " and ", 5) == 0) {
        *p += 5;
        v &= m_term(p, e);
    }
    return v;
}

static int m_disj(const char **p, const struct ent *e)
{
    int v = m_conj(p, e);

    while (strncmp(*p, " or ", 4) == 0) {
        *p += 4;
        v |= m_conj(p, e);
    }
    return v;
}

/* Does E match filter F (NULL: everything)? */
static int matches(const char *f, const struct ent *e)
{
    const char *p = f;
    int v;

    if (!f)
        return 1;
    v = m_disj(&p, e);
    if (*p)
        svc.bad++;
    return v;
}

/* The decoded value of query parameter NAME of request HEAD (malloc'd;
 * NULL: absent). */
static char *param(const char *head, const char *name)
{
    const char *sp = strchr(head, ' '), *end = sp ? strchr(sp + 1, ' ') : NULL;
    size_t len = strlen(name);

    for (const char *p = sp ? strchr(sp, '?') : NULL; p && end && p < end; p = strchr(p + 1, '&')) {
        if (p + 1 + len < end && strncmp(p + 1, name, len) == 0 && p[1 + len] == '=') {
            char *raw = strndup(p + 2 + len, strcspn(p + 2 + len, "& ")), *v;

            v = raw ? http_unescape(raw) : NULL;
            free(raw);
            return v;
        }
    }
    return NULL;
}

/* The page of matching entities from index FROM: its JSON into BODY, the
 * index of the next match (-1: none) returned. */
static int page_of(const char *f, int from, struct buf *body)
{
    int n = 0, i;

    buf_add(body, "{\"value\":[", 10);
    for (i = from; i < svc.n && n < svc.page; i++) {
        if (!matches(f, &svc.e[i]))
            continue;
        buf_addf(body, "%s{\"PartitionKey\":\"%s\",\"RowKey\":\"%s\"}", n++ ? "," : "", svc.e[i].pk,
                 svc.e[i].rk);
    }
    buf_add(body, "]}", 2);
    while (i < svc.n && !matches(f, &svc.e[i]))
        i++;
    return i < svc.n ? i : -1;
}

/* The handler: a Query Entities page, resumed at the index NextRowKey
 * names. */
static size_t serve_query(const char *head, int n, char *out, size_t size, int *keep)
{
    struct buf body = BUF_INIT(HTTPD_OUT_MAX);
    char *f = param(head, "$filter"), *tok = param(head, "NextRowKey"), hdr[256] = "";
    unsigned char pk64[16];
    int next = page_of(f, tok ? atoi(tok) : 0, &body);
    size_t len = 0;

    (void)n;
    if (svc.nfilters < FILTERS_MAX)
        svc.filters[svc.nfilters++] = f ? f : strdup("");
    else
        free(f);
    if (next >= 0) {
        EVP_EncodeBlock(pk64, (const unsigned char *)svc.e[next].pk, (int)strlen(svc.e[next].pk));
        snprintf(hdr, sizeof(hdr),
                 "x-ms-continuation-NextPartitionKey: %s\r\n"
                 "x-ms-continuation-NextRowKey: %d\r\n",
                 svc.emulator ? (char *)pk64 : "1!opaque", next);
    }
    strcat(hdr, "Content-Type: application/json;odata=nometadata\r\n");
    if (buf_add(&body, "", 1) == 0)
        len = httpd_response(out, size, 200, hdr, body.ptr, 0);
    *keep = 0;
    free(tok);
    buf_free(&body);
    return len;
}

/* The table anew: partition "p<i>" (i from 1) holds ROWS[i-1] rows
 * "r00", "r01", ...; pages of PAGE; tokens as the emulator's or opaque. */
static void table_is(const int *rows, int parts, int page, int emulator)
{
    pthread_mutex_lock(&httpd.lock);
    for (int i = 0; i < svc.nfilters; i++)
        free(svc.filters[i]);
    memset(&svc, 0, sizeof(svc));
    for (int p = 0; p < parts; p++)
        for (int r = 0; r < rows[p] && svc.n < TABLE_MAX; r++, svc.n++) {
            snprintf(svc.e[svc.n].pk, sizeof(svc.e[0].pk), "p%d", p + 1);
            snprintf(svc.e[svc.n].rk, sizeof(svc.e[0].rk), "r%02d", r);
        }
    svc.page = page;
    svc.emulator = emulator;
    pthread_mutex_unlock(&httpd.lock);
}

/* The service's order shuffled (SEED > 0, a permutation of the seed) or
 * reversed (SEED 0): its pages hold no key order from now on, as Cosmos
 * DB's. */
static void svc_shuffle(unsigned seed)
{
    pthread_mutex_lock(&httpd.lock);
    for (int i = svc.n - 1; i > 0; i--) {
        struct ent t;
        int j = svc.n - 1 - i;

        if (seed) {
            seed = seed * 1103515245u + 12345u;
            j = (int)((seed >> 16) % (unsigned)(i + 1));
        } else if (j >= i) {
            break;
        }
        t = svc.e[i];
        svc.e[i] = svc.e[j];
        svc.e[j] = t;
    }
    pthread_mutex_unlock(&httpd.lock);
}

/* Did the service receive filter F? */
static int asked(const char *f)
{
    int found = 0;

    pthread_mutex_lock(&httpd.lock);
    for (int i = 0; i < svc.nfilters && !found; i++)
        found = strcmp(svc.filters[i], f) == 0;
    pthread_mutex_unlock(&httpd.lock);
    if (!found)
        printf("# no request asked for: %s\n", f);
    return found;
}

/* --- the reader ------------------------------------------------------------- */

static struct logger quiet = { .level = LOG_LVL_QUIET };
static struct http_stats stats;
static struct account svc_account = {
    .name = "devstoreaccount1",
    .scheme = "http",
    .base_path = "/devstoreaccount1",
};
static char host[32];

/* The reader's page callback's context: what it got, and the split (for
 * the page's prep). */
struct reading {
    struct buf *got;
    struct table_split *sp;
    int prepped; /* a PREP works on every page */
    int missing; /* pages handed without what the PREP made */
};

/* Append "pk/rk " for each entity of page VALUE to B. */
static void page_keys(const json_t *value, struct buf *b)
{
    size_t i;
    json_t *e;

    json_array_foreach (value, i, e)
        buf_addf(b, "%s/%s ", entity_wire_sys(e, ENTITY_PK), entity_wire_sys(e, ENTITY_RK));
}

/* A PREP that stands in for an export's: the page's keys as text (a struct
 * buf), made slowly (1 ms: longer than a fetch here), so the next page's
 * fetch and other pages' work overlap it. */
static void *prep_keys(const json_t *value)
{
    struct buf *b = malloc(sizeof(*b));
    struct timespec ms = { 0, 1000000 };

    if (!b)
        return NULL;
    buf_init(b, 1 << 20);
    page_keys(value, b);
    nanosleep(&ms, NULL);
    return b;
}

static void prep_free(void *prepared)
{
    if (prepared)
        buf_free(prepared);
    free(prepared);
}

/* What the reader got: "pk/rk " for each entity, in the order handed,
 * from the page or from what the PREP made of it. */
static int on_page(void *ctx, json_t *value)
{
    struct reading *rd = ctx;
    struct buf *made = table_split_page_prep(rd->sp);

    if (made)
        buf_add(rd->got, made->ptr, made->len);
    else
        page_keys(value, rd->got);
    rd->missing += rd->prepped && !made && json_array_size(value) > 0;
    return 0;
}

/* The entities of the table matching FILTER, as the reader must get them:
 * in the service's order (key order unless shuffled). */
static void expected(const char *filter, struct buf *want)
{
    pthread_mutex_lock(&httpd.lock);
    for (int i = 0; i < svc.n; i++)
        if (matches(filter, &svc.e[i]))
            buf_addf(want, "%s/%s ", svc.e[i].pk, svc.e[i].rk);
    pthread_mutex_unlock(&httpd.lock);
}

/* Read the query of FILTER split WAYS ways (ONE_PARTITION as for
 * table_split_new) to its end, by a client that trusts the service's
 * order when *ORDERED (and says in *ORDERED whether it still does after);
 * 1 when the reader got every entity the query matches exactly once, in
 * the service's order, and the service could read every filter. */
static int read_split_order(const char *filter, int ways, int one_partition,
                            const struct table_prep *prep, int *ordered)
{
    struct buf got = BUF_INIT(1 << 20), want = BUF_INIT(1 << 20);
    struct table_client *tc = NULL;
    struct table_cursor *c = NULL;
    struct table_split *sp = NULL;
    struct reading rd = { &got, NULL, prep != NULL, 0 };
    struct az_status st;
    int rc, same;

    if (table_client_new(&tc, &svc_account, NULL, &quiet, &stats) != 0 ||
        table_cursor_new(&c, "tbl", filter, NULL, 0) != 0 ||
        table_split_new(&sp, c, ways, one_partition ? SPLIT_CUT_ROWS : SPLIT_CUT_KEYS, prep) != 0)
        abort();
    table_client_set_ordered(tc, *ordered);
    rd.sp = sp;
    while ((rc = table_split_next(tc, sp, on_page, &rd, &st)) == 1)
        ;
    table_split_free(sp);
    *ordered = table_client_ordered(tc);
    table_cursor_free(c);
    table_client_free(tc);
    expected(filter, &want);
    buf_add(&got, "", 1);
    buf_add(&want, "", 1);
    same = rc == 0 && strcmp(got.ptr, want.ptr) == 0 && svc.bad == 0 && rd.missing == 0;
    if (!same)
        printf("# rc %d, bad filters %d, pages without their prep %d\n# got:  %s\n# want: %s\n", rc,
               svc.bad, rd.missing, got.ptr, want.ptr);
    buf_free(&got);
    buf_free(&want);
    return same;
}

static int read_split_prep(const char *filter, int ways, int one_partition,
                           const struct table_prep *prep)
{
    int ordered = 1;

    return read_split_order(filter, ways, one_partition, prep, &ordered);
}

static int read_split(const char *filter, int ways, int one_partition)
{
    return read_split_prep(filter, ways, one_partition, NULL);
}

/* Did the service receive only the query's own filter F ("": none), never
 * a range's? */
static int only_asked(const char *f)
{
    int others = 0;

    pthread_mutex_lock(&httpd.lock);
    for (int i = 0; i < svc.nfilters; i++)
        others += strcmp(svc.filters[i], f) != 0;
    pthread_mutex_unlock(&httpd.lock);
    if (others)
        printf("# %d requests of another filter than \"%s\"\n", others, f);
    return others == 0;
}

/* --- the checks ------------------------------------------------------------- */

/* A first page that ends inside p1 with an opaque token: the rest of p1
 * and the partitions before the first cut (p3) are one range, "after" the
 * page's last key; the partitions from p3 on are cut (p3, p4). */
static void test_range_after(void)
{
    static const int rows[] = { 6, 2, 2, 2, 2, 2 };

    table_is(rows, 6, 4, 0);
    ok(read_split(NULL, 2, 0), "every entity once, in order");
    ok(asked("PartitionKey ge 'p1' and PartitionKey lt 'p3' and "
             "(PartitionKey gt 'p1' or RowKey gt 'r03')"),
       "the range after the page: the rest of p1 and the partitions before p3");
    ok(asked("PartitionKey ge 'p3' and PartitionKey lt 'p4'"), "the range of p3");
    ok(asked("PartitionKey ge 'p4'"), "the open-ended range from p4");
}

/* A first page inside a partition whose next page the token names (the
 * emulator's): its rows are cut a page's span apart, and the partitions
 * after it are one range. */
static void test_big_partition(void)
{
    static const int rows[] = { 20, 3, 3 };

    table_is(rows, 3, 4, 1);
    ok(read_split(NULL, 2, 0), "every entity once, in order");
    ok(asked("PartitionKey eq 'p1' and RowKey gt 'r03' and RowKey lt 'r08'"),
       "the rest of p1 up to the first cut");
    ok(asked("PartitionKey eq 'p1' and RowKey ge 'r08' and RowKey lt 'r12'"),
       "p1 from one cut to the next");
    ok(asked("PartitionKey eq 'p1' and RowKey ge 'r12'"), "p1 from the last cut on");
    ok(asked("PartitionKey gt 'p1'"), "the partitions after p1: one range");
}

/* A one-partition query: only RowKeys are cut, each range the query's
 * filter and'ed with its bounds. */
static void test_one_partition(void)
{
    static const int rows[] = { 3, 30, 3 };

    table_is(rows, 3, 5, 0);
    ok(read_split("PartitionKey eq 'p2'", 2, 1), "every entity of p2 once, in order");
    ok(asked("(PartitionKey eq 'p2') and RowKey gt 'r04' and RowKey lt 'r10'"),
       "the rest of the first page's span");
    ok(asked("(PartitionKey eq 'p2') and RowKey ge 'r10' and RowKey lt 'r15'"), "the next span");
}

/* Whatever the shape: partitions of 0 to 13 rows, pages of 1 to 7, 1 to 4
 * ways, tokens opaque or the emulator's, the whole table or a filter, and
 * pages worked on by the workers (a PREP slower than a fetch, its page
 * kept or replaced) or not. */
static void test_shapes(void)
{
    static const char *const filters[] = { NULL, "PartitionKey ge 'p3'",
                                           "RowKey lt 'r05' or PartitionKey eq 'p2'" };
    /* the workers' work on each page, keeping the page or replacing it */
    static const struct table_prep preps[] = { { prep_keys, prep_free, 0, 0 },
                                               { prep_keys, prep_free, 1, 0 } };
    int rows[8], bad = 0, runs = 0;
    unsigned seed = 7;

    for (int i = 0; i < 24; i++) {
        int parts = 1 + i % 8, page = 1 + i % 7, ways = 1 + i % 4;

        for (int p = 0; p < parts; p++) {
            seed = seed * 1103515245u + 12345u;
            rows[p] = (int)(seed >> 16) % 14;
        }
        table_is(rows, parts, page, i % 2);
        for (int f = 0; f < 3; f++, runs++)
            if (!read_split_prep(filters[f], ways, 0, i % 3 == 0 ? NULL : &preps[i % 3 - 1])) {
                printf("# shape %d (%d partitions, page %d, %d ways), filter %d\n", i, parts, page,
                       ways, f);
                bad++;
            }
    }
    is_int(bad, 0, "%d splits of varied tables: every entity once, in order", runs);
}

/* The same shapes on a service without key order (pages shuffled by a
 * seed, tokens opaque or not), read by a client told so: nothing is cut
 * (one range, following the service's continuation), every entity once,
 * in the service's order, whatever the ways and the PREP. */
static void test_unordered(void)
{
    static const char *const filters[] = { NULL, "PartitionKey ge 'p3'",
                                           "RowKey lt 'r05' or PartitionKey eq 'p2'" };
    static const struct table_prep prep = { prep_keys, prep_free, 1, 0 };
    int rows[8], bad = 0, runs = 0, cut = 0;
    unsigned seed = 11;

    for (int i = 0; i < 24; i++) {
        int parts = 1 + i % 8, page = 1 + i % 7, ways = 1 + i % 4;

        for (int p = 0; p < parts; p++) {
            seed = seed * 1103515245u + 12345u;
            rows[p] = (int)(seed >> 16) % 14;
        }
        for (int f = 0; f < 3; f++, runs++) {
            int ordered = 0;

            table_is(rows, parts, page, i % 2);
            svc_shuffle(seed + (unsigned)f + 1);
            if (!read_split_order(filters[f], ways, f == 1, i % 2 ? &prep : NULL, &ordered)) {
                printf("# shape %d (%d partitions, page %d, %d ways), filter %d\n", i, parts, page,
                       ways, f);
                bad++;
            }
            cut += !only_asked(filters[f] ? filters[f] : "");
        }
    }
    is_int(bad, 0, "%d reads of shuffled tables: every entity once, in the service's order", runs);
    is_int(cut, 0, "no range cut on a service without order");
}

/* A client that trusts the order of a service that answers in reverse key
 * order: its first page shows the disorder, so nothing is cut, every
 * entity comes once, and the client trusts the order no more. */
static void test_disorder_seen(void)
{
    static const int rows[] = { 6, 9, 2, 5 };
    int ordered = 1;

    table_is(rows, 4, 4, 1);
    svc_shuffle(0);
    ok(read_split_order(NULL, 3, 0, NULL, &ordered), "every entity once, in the service's order");
    ok(only_asked(""), "no range cut");
    is_int(ordered, 0, "the client trusts the service's order no more");
}

/* table_split_cuts(FIRST, LAST, HI, MAX) must give exactly WANT (a
 * space-separated list, "" for none). */
static void check_cuts(const char *first, const char *last, const char *hi, int max,
                       const char *want)
{
    char *cuts[8], got[256] = "";
    int n = table_split_cuts(first, last, hi, cuts, max);

    for (int i = 0; i < n; i++) {
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "", cuts[i]);
        free(cuts[i]);
    }
    is_str(got, want, "cuts after %s..%s%s%s", first, last, hi ? " before " : "", hi ? hi : "");
}

static void test_split_cuts(void)
{
    /* numbers: a page of r00000..r00999 spans 1000; the next page's keys
     * (r01000..r01999) stay before the first cut */
    check_cuts("r00000", "r00999", NULL, 4, "r02000 r03000 r04000 r05000");
    check_cuts("r00000", "r00999", "r03500", 4, "r02000 r03000");
    check_cuts("r00000", "r00999", "r02000", 4, "");
    /* partitions: a page inside one steps one partition; one that spans
     * 25 steps 25 */
    check_cuts("p00", "p00", NULL, 3, "p02 p03 p04");
    check_cuts("p000", "p024", NULL, 2, "p050 p075");
    /* past the digits' width: no cut rather than a longer key */
    check_cuts("k0", "k9", NULL, 3, "");
    check_cuts("k98", "k98", NULL, 3, "");
    /* other keys: the characters spanned where FIRST and LAST differ */
    check_cuts("alpha", "apple", NULL, 4, "at ax a|");
    check_cuts("same", "same", NULL, 2, "samf samg");
    /* nothing to step: the empty key, a non-ASCII last character */
    check_cuts("", "", NULL, 3, "");
    check_cuts("\xc3\xa9", "\xc3\xa9", NULL, 3, "");
    /* whatever the keys, the cuts increase, follow LAST and precede HI */
    {
        const char *keys[] = { "a", "a1", "b 9", "x'y~z", "r0009", "r0010", "zz", "~~", "0" };
        int bad = 0;

        for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
            for (size_t j = 0; j < sizeof(keys) / sizeof(*keys); j++) {
                const char *f = keys[i], *l = keys[j];
                char *cuts[8];
                int n;

                if (strcmp(f, l) > 0 || strcmp(l, "zz") >= 0)
                    continue; /* a page's keys are in order, before the bound */
                n = table_split_cuts(f, l, "zz", cuts, 8);
                for (int k = 0; k < n; k++) {
                    if (strcmp(cuts[k], k ? cuts[k - 1] : l) <= 0 || strcmp(cuts[k], "zz") >= 0)
                        bad++, printf("# %s..%s: cut %d is %s\n", f, l, k, cuts[k]);
                }
                while (n > 0)
                    free(cuts[--n]);
            }
        is_int(bad, 0, "every cut follows the one before and precedes the bound");
    }
}

int main(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 99;
    httpd_start(serve_query);
    snprintf(host, sizeof(host), "127.0.0.1:%d", httpd.port);
    svc_account.host = host;
    test_split_cuts();
    test_range_after();
    test_big_partition();
    test_one_partition();
    test_shapes();
    test_unordered();
    test_disorder_seen();
    httpd_stop();
    table_is(NULL, 0, 1, 0);
    curl_global_cleanup();
    return done_testing();
}

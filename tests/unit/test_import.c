/* test_import.c - imports (stream/import.c) against a fake Table service
 * (TAP): lines cut anywhere between writes, transactions of 100, an
 * entity named twice sent after its first, a bad line stopping the
 * stream after every line before it, a refused transaction's line, and
 * writes interrupted while they wait (short writes, nothing taken twice),
 * and a read-ahead past memory through the spool (importspool.c).
 * The server (httpd.h) answers every $batch with one 204 per operation,
 * or a 409 for the operation whose RowKey starts "conflict", and records each
 * transaction as "pk:rk,rk,...". */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "names/names.h"
#include "store/store.h"
#include "stream/stream_i.h"
#include "table/table.h"
#include "util/util.h"
#include "httpd.h"
#include "tap.h"

/* --- the fake service ------------------------------------------------------- */

#define SEEN_MAX 4096

static struct {
    char *batch[SEEN_MAX]; /* "pk:rk,rk,..." of each transaction, in arrival order */
    int n;
    int delay_ms;     /* each answer held this long */
    struct buf *body; /* when set: each entity sent, as sorted compact JSON, a line each */
} svc;                /* guarded by httpd.lock */

static void svc_reset(int delay_ms)
{
    pthread_mutex_lock(&httpd.lock);
    for (int i = 0; i < svc.n; i++)
        free(svc.batch[i]);
    svc.n = 0;
    svc.delay_ms = delay_ms;
    pthread_mutex_unlock(&httpd.lock);
}

/* The body of a $batch answer: one status a part, a 409 for part BAD. */
static size_t batch_answer(char *out, size_t size, int parts, int bad)
{
    struct buf b = BUF_INIT(HTTPD_OUT_MAX);
    size_t n;

    buf_adds(&b, "--batchresponse_x\r\nContent-Type: multipart/mixed; boundary=cs_x\r\n\r\n");
    for (int i = 0; i < parts && (bad < 0 || i <= bad); i++) {
        buf_adds(&b, "--cs_x\r\nContent-Type: application/http\r\n\r\n");
        if (i == bad)
            buf_addf(&b,
                     "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n\r\n"
                     "{\"odata.error\":{\"code\":\"EntityAlreadyExists\",\"message\":"
                     "{\"value\":\"%d:The specified entity already exists.\"}}}\r\n",
                     i);
        else
            buf_adds(&b, "HTTP/1.1 204 No Content\r\n\r\n");
    }
    buf_adds(&b, "--cs_x--\r\n--batchresponse_x--\r\n");
    n = b.err ? 0 : httpd_response(out, size, 202, NULL, b.ptr, 1);
    buf_free(&b);
    return n;
}

static atomic_int gate; /* while set, no request is answered */

/* Each $batch recorded and answered (its entities read from their JSON
 * bodies); anything else is a 404. */
static size_t serve(const char *head, int n, char *out, size_t size, int *keep)
{
    struct buf rec = BUF_INIT(1 << 20);
    const char *p = httpd.body;
    int parts = 0, bad = -1;

    (void)n;
    while (atomic_load(&gate))
        usleep(1000);
    *keep = 1;
    if (strncmp(head, "POST ", 5) != 0 || !strstr(head, "/$batch") || !p)
        return httpd_response(out, size, 404, NULL, "", 1);
    while ((p = strstr(p, "\r\n\r\n{"))) {
        json_error_t jerr;
        json_t *e = json_loadb(p + 4, strlen(p + 4), JSON_DISABLE_EOF_CHECK, &jerr);
        const char *rk = json_string_value(json_object_get(e, "RowKey"));

        if (svc.body) {
            char *text = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);

            buf_addf(svc.body, "%s\n", text ? text : "?");
            free(text);
        }
        if (parts == 0)
            buf_addf(&rec, "%s:", json_string_value(json_object_get(e, "PartitionKey")));
        buf_addf(&rec, "%s%s", parts ? "," : "", rk ? rk : "?");
        if (rk && strncmp(rk, "conflict", 8) == 0)
            bad = parts;
        parts++;
        json_decref(e);
        p += 5;
    }
    if (svc.n < SEEN_MAX && buf_add(&rec, "", 1) == 0)
        svc.batch[svc.n++] = buf_take(&rec, NULL);
    buf_free(&rec);
    if (svc.delay_ms)
        usleep((useconds_t)svc.delay_ms * 1000);
    return batch_answer(out, size, parts, bad);
}

/* The transactions recorded, joined by ' ', in arrival order (malloc'd). */
static char *seen(void)
{
    struct buf b = BUF_INIT(SIZE_MAX);

    pthread_mutex_lock(&httpd.lock);
    for (int i = 0; i < svc.n; i++)
        buf_addf(&b, "%s%s", i ? " " : "", svc.batch[i]);
    pthread_mutex_unlock(&httpd.lock);
    buf_add(&b, "", 1);
    return buf_take(&b, NULL);
}

/* How many times RK was sent, across all transactions. */
static int times_sent(const char *rk)
{
    char *all = seen(), *tok, *save = NULL;
    int count = 0;

    for (tok = strtok_r(all, " :,", &save); tok; tok = strtok_r(NULL, " :,", &save))
        count += strcmp(tok, rk) == 0;
    free(all);
    return count;
}

/* --- the store -------------------------------------------------------------- */

static char host[32];
static struct account svc_acct = {
    .name = "devstoreaccount1",
    .scheme = "http",
    .base_path = "/devstoreaccount1",
};
static const struct http_config hc = {
    .connect_timeout_ms = 2000,
    .request_timeout_ms = 10000,
    .max_retries = 0,
};
static atomic_int interrupt; /* what the store's cancelled hook says */

static int cancelled(void *ctx)
{
    (void)ctx;
    return atomic_load(&interrupt);
}

/* Requests that wait as long as a test holds their answer back. */
static const struct http_config patient_hc = {
    .connect_timeout_ms = 2000,
    .request_timeout_ms = 600000,
    .max_retries = 0,
};

/* A store of WAYS scan_parallel, its failures in *RING, its cache (and
 * so an import's read-ahead) CACHE bytes, its requests configured by HC. */
static struct store *new_store_hc(int ways, struct failring **ring, size_t cache,
                                  const struct http_config *cfg)
{
    struct store *s = calloc(1, sizeof(*s));

    if (!s || !(*ring = failring_new()))
        abort();
    s->log.level = LOG_LVL_QUIET;
    s->log.failures = *ring;
    s->cache_timeout = 60;
    s->negative_timeout = 1;
    s->scan_ways = ways;
    if (store_open(s, &svc_acct, cfg, cache) != 0)
        abort();
    store_set_hooks(s, cancelled, NULL, NULL);
    atomic_store(&interrupt, 0);
    return s;
}

static struct store *new_store_cache(int ways, struct failring **ring, size_t cache)
{
    return new_store_hc(ways, ring, cache, &hc);
}

static struct store *new_store(int ways, struct failring **ring)
{
    return new_store_cache(ways, ring, 1 << 20);
}

static void free_store(struct store *s, struct failring *ring)
{
    store_free(s);
    free(s);
    failring_free(ring);
}

/* An import of table "tbl" (a partition's when PK), INSERT as import_open. */
static struct import_stream *open_import(struct store *s, const char *pk, int insert)
{
    struct fspath fp = { .kind = FSP_STREAM, .table = "tbl", .pk = (char *)pk };
    struct import_stream *m = NULL;

    fp.pk_name = (char *)pk; /* a short key's name is itself here */
    if (import_open(s, &fp, pk ? "/tbl/p/.ndjson" : "/tbl/.ndjson", insert, &m) != 0)
        abort();
    return m;
}

/* Write TEXT to M at OFF in one import_write; what it returned. */
static int put(struct import_stream *m, const char *text, unsigned long long off)
{
    return import_write(m, text, strlen(text), off);
}

/* N lines of partition PK, RowKeys PREFIX and the line's index FROM..
 * in WIDTH digits. */
static char *lines(const char *pk, const char *prefix, int width, int from, int n)
{
    struct buf b = BUF_INIT(SIZE_MAX);

    for (int i = from; i < from + n; i++)
        buf_addf(&b, "{\"PartitionKey\":\"%s\",\"RowKey\":\"%s%0*d\",\"n\":%d}\n", pk, prefix,
                 width, i, i);
    buf_add(&b, "", 1);
    return buf_take(&b, NULL);
}

/* --- the tests -------------------------------------------------------------- */

static void test_lines_across_writes(void)
{
    struct failring *ring;
    struct store *s = new_store(2, &ring);
    struct import_stream *m = open_import(s, NULL, 0);
    const char *a = "{\"PartitionKey\":\"p\",\"Ro", *b = "wKey\":\"a\"}\n\n  \n{\"Partit",
               *c = "ionKey\":\"p\",\"RowKey\":\"b\"}";
    char *got;

    svc_reset(0);
    is_int(put(m, a, 0), (int)strlen(a), "a write ending inside a line takes it all");
    is_int(put(m, b, strlen(a)), (int)strlen(b), "the next one too");
    is_int(put(m, c, strlen(a) + strlen(b)), (int)strlen(c), "and one without a newline");
    is_int(put(m, "{}\n", 3), -ESPIPE, "a write elsewhere than the end is ESPIPE");
    got = seen();
    is_str(got, "", "nothing sent before the transaction is full or flushed");
    free(got);
    is_int(import_flush(m), 0, "the flush sends it");
    got = seen();
    is_str(got, "p:a,b", "one transaction: the lines split across writes, blank lines skipped");
    free(got);
    import_free(m);
    free_store(s, ring);
}

static void test_transactions_of_100(void)
{
    struct failring *ring;
    struct store *s = new_store(1, &ring);
    struct import_stream *m = open_import(s, NULL, 0);
    char *text = lines("p", "r", 3, 0, 250), *more = lines("q", "s", 3, 0, 5), *got;
    struct buf want = BUF_INIT(SIZE_MAX);
    int all = 1;

    svc_reset(0);
    is_int(put(m, text, 0), (int)strlen(text), "250 lines of one partition taken");
    is_int(put(m, more, strlen(text)), (int)strlen(more), "5 of another");
    is_int(import_flush(m), 0, "flushed");
    got = seen();
    for (int i = 0; i < 250; i++)
        buf_addf(&want, "%s%03d", i % 100 ? ",r" : i ? " p:r" : "p:r", i);
    buf_add(&want, "", 1);
    /* p's in line order, 100, 100 and 50 (q's, sent to least recently, may
     * come between them) */
    {
        char *p2 = strstr(got, " p:r100,"), *p3 = strstr(got, " p:r200,");

        ok(strncmp(got, want.ptr, (size_t)(strstr(want.ptr, " p:r100") - want.ptr)) == 0 && p2 &&
               strncmp(p2, strstr(want.ptr, " p:r100"), 100 * 5) == 0,
           "two of 100, in line order");
        ok(p3 && p3 > p2 && strstr(got, strrchr(want.ptr, ' ')) &&
               strstr(got, " q:s000,s001,s002,s003,s004"),
           "then 50 and 5 at the flush");
    }
    ok(strlen(got) == strlen(want.ptr) + strlen(" q:s000,s001,s002,s003,s004"), "nothing else");
    buf_free(&want);
    for (int i = 0; i < 250; i++) {
        char rk[8];

        snprintf(rk, sizeof(rk), "r%03d", i);
        all &= times_sent(rk) == 1;
    }
    ok(all, "each line sent once");
    free(got);
    free(text);
    free(more);
    import_free(m);
    free_store(s, ring);
}

static void test_named_twice(void)
{
    struct failring *ring;
    struct store *s = new_store(4, &ring);
    struct import_stream *m = open_import(s, NULL, 0);
    char *text = lines("p", "r", 3, 0, 150), *again = lines("p", "r", 3, 140, 1), *got;
    char *first, *second;

    svc_reset(20);
    put(m, text, 0);
    put(m, again, strlen(text));
    is_int(import_flush(m), 0, "flushed");
    got = seen();
    first = strstr(got, "r140");
    second = first ? strstr(first + 1, "r140") : NULL;
    ok(first && second && times_sent("r140") == 2, "an entity named twice is sent twice");
    ok(second && !strstr(second, "r149"), "the second time after every line before it");
    ok(first && second && memchr(first, ' ', (size_t)(second - first)), "in a later transaction");
    free(got);
    free(text);
    free(again);
    import_free(m);
    free_store(s, ring);
}

static void test_bad_line(void)
{
    struct failring *ring;
    struct store *s = new_store(2, &ring);
    struct import_stream *m = open_import(s, NULL, 0);
    char *text = lines("p", "r", 3, 0, 150), *after = lines("p", "z", 3, 0, 10);
    struct buf all = BUF_INIT(SIZE_MAX);
    char *json;
    int sent = 0;

    svc_reset(0);
    buf_adds(&all, text);
    buf_adds(&all, "{\"PartitionKey\":\"p\",\"RowKey\":\"x\",\"n\":\n");
    buf_adds(&all, after);
    is_int(import_write(m, all.ptr, all.len, 0), -EINVAL, "the write holding a bad line: EINVAL");
    for (int i = 0; i < 150; i++) {
        char rk[8];

        snprintf(rk, sizeof(rk), "r%03d", i);
        sent += times_sent(rk);
    }
    is_int(sent, 150, "every line before it was sent, before the write returned");
    is_int(times_sent("z000") + times_sent("x"), 0, "it and the lines after it were not");
    is_int(put(m, after, 0), -EINVAL, "a later write fails the same");
    is_int(import_flush(m), -EINVAL, "and the close");
    json = failring_json(ring, 4096);
    ok(json && strstr(json, "line 151: ") && strstr(json, "lines 1 to 150 applied, none after"),
       "user.aztfs.errors names line 151 and what was applied");
    free(json);
    buf_free(&all);
    free(text);
    free(after);
    import_free(m);
    free_store(s, ring);
}

static void test_refused_transaction(void)
{
    struct failring *ring;
    struct store *s = new_store(1, &ring);
    struct import_stream *m = open_import(s, "p", 1);
    char *text = lines("p", "r", 3, 0, 41), *rest = lines("p", "r", 3, 42, 200), *json;
    const char *bad = "{\"RowKey\":\"conflict\"}\n";

    svc_reset(0);
    put(m, text, 0);
    put(m, bad, strlen(text));
    put(m, rest, strlen(text) + strlen(bad));
    is_int(import_flush(m), -EEXIST, "a transaction refused with 409: the close is EEXIST");
    json = failring_json(ring, 4096);
    ok(json && strstr(json, "line 42 (RowKey 'conflict' of partition 'p')") &&
           strstr(json, "lines 1 to 100, 100 entities) not applied"),
       "the error names the refused line and its transaction");
    ok(json && strstr(json, "EntityAlreadyExists"), "and the service's code");
    is_int(put(m, "{}\n", strlen(text) + strlen(bad) + strlen(rest)), -EEXIST,
           "later writes fail the same");
    free(json);
    free(text);
    free(rest);
    import_free(m);
    free_store(s, ring);
}

static void test_interrupted_writes(void)
{
    struct failring *ring;
    struct store *s = new_store_cache(1, &ring, 16 * 1024); /* 16 KiB read ahead at most */
    struct import_stream *m = open_import(s, NULL, 1);
    char *text = lines("p", "r", 4, 0, 1000);
    size_t len = strlen(text), off = 0;
    int writes = 0, shorts = 0, all = 1;

    svc_reset(30);
    atomic_store(&interrupt, 1); /* every wait for room is interrupted at once */
    while (off < len && writes < 1000) {
        int n = import_write(m, text + off, len - off, off);

        writes++;
        if (n < 0) { /* nothing taken: try again once there is room */
            usleep(10000);
            continue;
        }
        shorts += (size_t)n < len - off;
        off += (size_t)n;
    }
    ok(off == len && shorts > 0, "the writes were cut short (%d of %d) and went on", shorts,
       writes);
    is_int(import_flush(m), 0, "the flush waits, interrupted or not, and succeeds");
    for (int i = 0; i < 1000; i++) {
        char rk[8];

        snprintf(rk, sizeof(rk), "r%04d", i);
        all &= times_sent(rk) == 1;
    }
    ok(all, "every line sent exactly once");
    free(text);
    import_free(m);
    free_store(s, ring);
}

/* Write TEXT to M at its end (*OFF, moved on); what import_write returned. */
static int put_at(struct import_stream *m, const char *text, unsigned long long *off)
{
    int n = import_write(m, text, strlen(text), *off);

    *off += n > 0 ? (unsigned long long)n : 0;
    return n;
}

/* Does user.aztfs.errors of RING hold WANT? */
static int errors_hold(struct failring *ring, const char *want)
{
    char *json = failring_json(ring, 65536);
    int found = json && strstr(json, want);

    if (!found)
        printf("# errors: %s\n", json ? json : "(none)");
    free(json);
    return found;
}

static void test_flush_mid_line(void)
{
    struct failring *ring;
    struct store *s = new_store(2, &ring);
    struct import_stream *m = open_import(s, NULL, 0);
    unsigned long long off = 0;
    char *got;

    svc_reset(0);
    /* a shell loop's line in pieces, a child's exit (FLUSH) or an fsync between them */
    put_at(m, "{\"PartitionKey\":\"p\",\"RowKey\":\"a\",\"at\":\"", &off);
    is_int(import_flush(m), 0, "a flush inside a line that is not yet JSON: 0");
    got = seen();
    is_str(got, "", "  and the line is kept, not taken");
    free(got);
    put_at(m, "1764", &off);
    is_int(import_flush(m), 0, "another flush, still inside it: 0");
    is_int(put_at(m, "000000\"}\n", &off), 9, "the rest of the line is taken");
    is_int(import_flush(m), 0, "the flush after its newline sends it");
    got = seen();
    is_str(got, "p:a", "  the line written in three pieces, once");
    free(got);

    /* a last line without a newline, already whole JSON: a flush takes it */
    put_at(m, "{\"PartitionKey\":\"p\",\"RowKey\":\"b\"}", &off);
    is_int(import_flush(m), 0, "a whole line without its newline: taken at the flush");
    got = seen();
    is_str(got, "p:a p:b", "  and sent");
    free(got);
    is_int(put_at(m, " \r\n", &off), 3, "blanks and its newline after it are fine");
    put_at(m, "{\"PartitionKey\":\"p\",\"RowKey\":\"c\"}", &off);
    is_int(import_flush(m), 0, "the next line taken the same way");
    is_int(put_at(m, " {\"PartitionKey\":\"p\",\"RowKey\":\"d\"}\n", &off), -EINVAL,
           "text after a line taken at a flush: EINVAL");
    ok(errors_hold(ring,
                   "line 3: text after its entity, which a close or fsync had taken "
                   "as the whole line") &&
           errors_hold(ring, "(a line holds one entity); lines 1 to 3 applied, none after"),
       "  named as that line's, with every line before it and itself applied");
    got = seen();
    is_str(got, "p:a p:b p:c", "  nothing after it sent");
    free(got);
    import_free(m);
    free_store(s, ring);
}

static void test_release_ends_the_line(void)
{
    struct failring *ring;
    struct store *s = new_store(2, &ring);
    struct import_stream *m = open_import(s, NULL, 0);
    unsigned long long off = 0;
    char *got;

    svc_reset(0);
    put_at(m,
           "{\"PartitionKey\":\"p\",\"RowKey\":\"a\"}\n{\"PartitionKey\":\"p\",\"RowKey\":\"b\",",
           &off);
    is_int(import_flush(m), 0, "a flush with a line not yet whole: the lines before it applied");
    is_int((int)failring_count(ring), 0, "  no failure");
    import_free(m); /* the last close: the line is the last one */
    got = seen();
    is_str(got, "p:a", "the release takes the unfinished line as the last: not sent");
    free(got);
    ok(errors_hold(ring, "line 2: invalid JSON") &&
           errors_hold(ring, "; lines 1 to 1 applied, none after"),
       "  its failure reaches user.aztfs.errors");

    m = open_import(s, NULL, 0);
    off = 0;
    svc_reset(0);
    put_at(m, "{\"PartitionKey\":\"p\",\"RowKey\":\"z\",\"n\":1", &off);
    put_at(m, "}", &off);
    import_free(m); /* no flush: the release takes it */
    got = seen();
    is_str(got, "p:z", "a last line completed by a later write, taken at the release");
    free(got);
    free_store(s, ring);
}

/* A line of partition P, RowKey RK (LEN bytes of C) and number N. */
static char *key_line(const char *p, char c, size_t len, int n)
{
    struct buf b = BUF_INIT(SIZE_MAX);
    char *rk = malloc(len + 1);

    if (!rk)
        abort();
    memset(rk, c, len);
    rk[len] = '\0';
    buf_addf(&b, "{\"PartitionKey\":\"%s\",\"RowKey\":\"%s\",\"n\":%d}\n", p, rk, n);
    buf_add(&b, "", 1);
    free(rk);
    return buf_take(&b, NULL);
}

static void test_limits_make_a_bad_line(void)
{
    struct failring *ring;
    struct store *s = new_store(4, &ring);
    struct import_stream *m = open_import(s, NULL, 0);
    char *before = lines("p", "r", 3, 0, 150), *after = lines("p", "r", 3, 151, 149);
    char *longkey = key_line("p", 'k', 1100, 150), *big;
    struct buf all = BUF_INIT(SIZE_MAX);
    unsigned long long off;
    int sent = 0;

    svc_reset(0);
    buf_adds(&all, before);
    buf_adds(&all, longkey);
    buf_adds(&all, after);
    is_int(import_write(m, all.ptr, all.len, 0), -EINVAL,
           "a line whose RowKey is 1,100 characters: EINVAL");
    for (int i = 0; i < 300; i++) {
        char rk[8];

        snprintf(rk, sizeof(rk), "r%03d", i);
        sent += times_sent(rk) * (i < 150 ? 1 : 1000);
    }
    is_int(sent, 150, "lines 1-150 sent, none of 151-300");
    ok(errors_hold(ring,
                   "line 151: a key the service refuses: the RowKey is 2200 bytes in "
                   "UTF-16 (1100 characters), more than the 1024 it takes; lines 1 to "
                   "150 applied, none after"),
       "  the whole reason in user.aztfs.errors");
    import_free(m);
    buf_free(&all);

    /* 512 characters fit; 513 do not; the entity as the service counts it */
    m = open_import(s, NULL, 0);
    svc_reset(0);
    free(longkey);
    longkey = key_line("p", 'k', 512, 0);
    is_int(put(m, longkey, 0), (int)strlen(longkey), "a RowKey of 512 characters (1 KiB) taken");
    off = strlen(longkey);
    free(longkey);
    longkey = key_line("p", 'k', 513, 1);
    is_int(put_at(m, longkey, &off), -EINVAL, "513: EINVAL");
    import_free(m);

    m = open_import(s, NULL, 0);
    big = malloc(20 * 30020 + 100);
    strcpy(big, "{\"PartitionKey\":\"p\",\"RowKey\":\"big\"");
    for (int i = 0; i < 20; i++) { /* 600 KB of text, 1.2 MB of UTF-16 */
        size_t at = strlen(big);

        at += (size_t)sprintf(big + at, ",\"s%02d\":\"", i);
        memset(big + at, 'x', 30000);
        strcpy(big + at + 30000, "\"");
    }
    strcat(big, "}\n");
    is_int(put(m, big, 0), -EINVAL, "an entity over 1 MiB as the service counts it: EINVAL");
    ok(errors_hold(ring, "line 1: the entity is 1200") &&
           errors_hold(ring,
                       "as the service counts it, more than the 1048576 it takes; no "
                       "line applied"),
       "  named, and no line applied");
    import_free(m);
    free(big);
    free(before);
    free(after);
    free(longkey);
    free_store(s, ring);
}

static void test_bad_first_line(void)
{
    struct failring *ring;
    struct store *s = new_store(1, &ring);
    struct import_stream *m = open_import(s, NULL, 0);

    is_int(put(m, "{\"RowKey\":\"a\"}\n", 0), -EINVAL, "a bad first line: EINVAL");
    ok(errors_hold(ring, "\"line 1: no PartitionKey; no line applied\""),
       "  'no line applied', the whole message");
    import_free(m);
    free_store(s, ring);
}

static void test_refusal_stops_other_partitions(void)
{
    struct failring *ring;
    struct store *s = new_store(1, &ring);
    struct import_stream *m = open_import(s, NULL, 1);
    char pk[90], rk[90], want[400], *q = lines("q", "s", 3, 0, 100),
                                    *r = lines("r", "t", 3, 0, 100);
    struct buf p = BUF_INIT(SIZE_MAX);
    unsigned long long off = 0;
    char *got;

    memset(pk, 'P', 85);
    pk[85] = '\0';
    snprintf(rk, sizeof(rk), "conflict%077d", 7);
    for (int i = 0; i < 100; i++)
        buf_addf(&p, "{\"PartitionKey\":\"%s\",\"RowKey\":\"%s%02d\"}\n", pk, i == 41 ? rk : "r",
                 i == 41 ? 0 : i);
    buf_add(&p, "", 1);
    svc_reset(100); /* one sender: the first transaction out, the others queued */
    put_at(m, p.ptr, &off);
    put_at(m, q, &off);
    put_at(m, r, &off);
    is_int(import_flush(m), -EEXIST, "a transaction refused: EEXIST");
    got = seen();
    ok(!strstr(got, "q:") && !strstr(got, "r:"),
       "the transactions of other partitions queued after it are not sent");
    free(got);
    snprintf(want, sizeof(want),
             "\"line 42 (RowKey '%.80s' of partition '%.80s'): refused by the service; its "
             "transaction (lines 1 to 100, 100 entities) not applied\"",
             rk, pk);
    ok(errors_hold(ring, want), "the whole message, keys cut at 80 bytes, in user.aztfs.errors");
    import_free(m);
    buf_free(&p);
    free(q);
    free(r);
    free_store(s, ring);
}

/* Lines of partitions "p0".."p9", 1,000 each in partition order, their
 * values of many kinds (what a spool must give back as it was given). */
static char *ordered_lines(void)
{
    struct buf b = BUF_INIT(SIZE_MAX);

    for (int p = 0; p < 10; p++)
        for (int i = 0; i < 1000; i++)
            buf_addf(&b,
                     "{\"PartitionKey\":\"p%d\",\"RowKey\":\"k%d-%04d\",\"n\":%d,"
                     "\"big\":\"%lld\",\"big@odata.type\":\"Edm.Int64\",\"x\":%.17g,"
                     "\"s\":\"caf\\u00e9 \\\"q\\\" \\u0001 \\ud83d\\ude00 %d\",\"b\":%s}\n",
                     p, p, i, i, 9007199254740993LL + i, 0.1 * i - 7e300 * (i == 3), i,
                     i % 2 ? "true" : "false");
    buf_add(&b, "", 1);
    return buf_take(&b, NULL);
}

/* Import TEXT through a store of 16 KiB and one sender (SPOOL_DIR: where
 * it reads ahead), with GATED no answer given until every line is taken
 * (the writer reads as far ahead as it can, however slow the run:
 * valgrind's; the requests wait as long, and none is sent twice); the
 * partitions of the first 20 transactions sent, how many differ; the
 * entities sent, sorted, in *BODY; whether every line was sent once in
 * *ONCE; the transactions spooled in *SPOOLED. */
static int import_ordered(const char *text, const char *spool_dir, int gated, struct buf *body,
                          int *once, unsigned long long *spooled)
{
    struct failring *ring;
    struct store *s = new_store_hc(1, &ring, 16 * 1024, &patient_hc);
    struct import_stream *m;
    char first[20][8], *got, *tok, *save = NULL;
    int n = 0, distinct = 0;

    s->spool_dir = spool_dir;
    m = open_import(s, NULL, 0);
    svc_reset(10);
    pthread_mutex_lock(&httpd.lock);
    svc.body = body;
    pthread_mutex_unlock(&httpd.lock);
    atomic_store(&gate, gated);
    is_int(put(m, text, 0), (int)strlen(text), "10,000 lines in partition order taken");
    atomic_store(&gate, 0);
    is_int(import_flush(m), 0, "and applied");
    pthread_mutex_lock(&httpd.lock);
    svc.body = NULL;
    pthread_mutex_unlock(&httpd.lock);
    got = seen();
    for (tok = strtok_r(got, " ", &save); tok && n < 20; tok = strtok_r(NULL, " ", &save)) {
        int seen_before = 0;

        snprintf(first[n], sizeof(first[n]), "%.*s", (int)strcspn(tok, ":"), tok);
        for (int i = 0; i < n; i++)
            seen_before |= strcmp(first[i], first[n]) == 0;
        distinct += !seen_before;
        n++;
    }
    free(got);
    *once = 1;
    for (int p = 0; p < 10; p += 3)
        for (int i = 0; i < 1000; i += 7) {
            char rk[16];

            snprintf(rk, sizeof(rk), "k%d-%04d", p, i);
            *once &= times_sent(rk) == 1;
        }
    pthread_mutex_lock(&m->lock);
    *spooled = m->spooled;
    pthread_mutex_unlock(&m->lock);
    import_free(m);
    free_store(s, ring);
    return distinct;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* B's lines sorted, joined again (B's text replaced). */
static void sort_lines(struct buf *b)
{
    char **line = NULL, *save = NULL, *all = buf_take(b, NULL);
    size_t n = 0;

    for (char *t = strtok_r(all, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
        char **more = realloc(line, (n + 1) * sizeof(*line));

        if (!more)
            abort();
        line = more;
        line[n++] = t;
    }
    qsort(line, n, sizeof(*line), by_text);
    for (size_t i = 0; i < n; i++)
        buf_addf(b, "%s\n", line[i]);
    free(line);
    free(all);
}

static void test_spool_reads_ahead(void)
{
    char dir[] = "/tmp/test_import_spool.XXXXXX", *text = ordered_lines();
    struct buf spooled_body = BUF_INIT(SIZE_MAX), memory_body = BUF_INIT(SIZE_MAX);
    unsigned long long spooled, none, broken;
    int once, once_memory, once_broken, spread, spread_memory;

    if (!mkdtemp(dir))
        abort();
    spread = import_ordered(text, dir, 1, &spooled_body, &once, &spooled);
    spread_memory = import_ordered(text, NULL, 0, &memory_body, &once_memory, &none);
    import_ordered(text, "/nonexistent/aztfs-spool", 0, NULL, &once_broken, &broken);
    ok(once_broken && broken == 0,
       "a spool that cannot be written: memory alone, every line sent once");
    ok(spooled >= 80 && none == 0,
       "past 16 KiB of memory, %llu of 100 transactions spooled "
       "(0 without a spool: %llu)",
       spooled, none);
    ok(spread >= 8, "the first 20 transactions sent spread over %d of 10 partitions", spread);
    ok(spread_memory <= 4, "  (with memory alone, over %d: 16 KiB is one partition's read-ahead)",
       spread_memory);
    ok(once && once_memory, "every line sent once, spooled or not");
    sort_lines(&spooled_body);
    sort_lines(&memory_body);
    ok(spooled_body.len > 10000 * 100 && spooled_body.err == 0, "every entity recorded (%zu bytes)",
       spooled_body.len);
    ok(spooled_body.len == memory_body.len &&
           memcmp(spooled_body.ptr, memory_body.ptr, spooled_body.len) == 0,
       "the entities sent through the spool are those sent from memory, byte for byte");
    rmdir(dir);
    buf_free(&spooled_body);
    buf_free(&memory_body);
    free(text);
}

int main(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 99;
    httpd.keep_body = 1;
    httpd_start(serve);
    snprintf(host, sizeof(host), "127.0.0.1:%d", httpd.port);
    svc_acct.host = host;
    test_lines_across_writes();
    test_transactions_of_100();
    test_named_twice();
    test_bad_line();
    test_refused_transaction();
    test_interrupted_writes();
    test_flush_mid_line();
    test_release_ends_the_line();
    test_limits_make_a_bad_line();
    test_bad_first_line();
    test_refusal_stops_other_partitions();
    test_spool_reads_ahead();
    httpd_stop();
    svc_reset(0);
    free(httpd.body);
    curl_global_cleanup();
    return done_testing();
}

/* test_journal.c - unit tests for the write-behind journal file: opening
 * and its lock, records read back, torn and damaged records, atomic
 * rewrite, group commit under concurrent appends. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "journal.h"
#include "log.h"
#include "tap.h"

static struct logger quiet = { .level = LOG_LVL_QUIET };

/* The temporary directory of this run (mkdtemp), removed at the end. */
static char base[] = "/tmp/aztfs-test-journal-XXXXXX";

/* Records handed to a journal_read callback, deep-copied into ARR. */
struct collect {
    json_t *arr;
    int calls;
    int stop_after;     /* > 0: return -42 at that call */
};

/* A journal_read callback: keep a copy of REC. */
static int collect_rec(void *ctx, const json_t *rec)
{
    struct collect *c = ctx;
    json_t *copy = json_deep_copy(rec);

    c->calls++;
    if (!copy || json_array_append_new(c->arr, copy) < 0)
        return -ENOMEM;
    if (c->stop_after > 0 && c->calls == c->stop_after)
        return -42;
    return 0;
}

/* Read J's records into a new array (*out); returns journal_read's value. */
static int read_all(struct journal *j, json_t **out, unsigned *bad)
{
    struct collect c = { json_array(), 0, 0 };
    int rc;

    *out = NULL;
    if (!c.arr)
        return -ENOMEM;
    rc = journal_read(j, collect_rec, &c, bad);
    *out = c.arr;
    return rc;
}

/* The size of the file PATH, or -1. */
static long long file_size(const char *path)
{
    struct stat sb;

    return stat(path, &sb) < 0 ? -1 : (long long)sb.st_size;
}

/* The mode bits of PATH, or -1. */
static int file_mode(const char *path)
{
    struct stat sb;

    return stat(path, &sb) < 0 ? -1 : (int)(sb.st_mode & 07777);
}

/* The whole file PATH, malloc'd and NUL-terminated, its length in *len;
 * NULL on failure. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *data = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (data = malloc((size_t)n + 1)) != NULL) {
        if (fread(data, 1, (size_t)n, f) != (size_t)n) {
            free(data);
            data = NULL;
        } else {
            data[n] = '\0';
            *len = (size_t)n;
        }
    }
    fclose(f);
    return data;
}

/* The bytes of records in PATH: up to the zeros the journal grows the
 * file by ahead of its records (or its size), or -1. */
static long long data_size(const char *path)
{
    size_t len = 0;
    char *data = slurp(path, &len);
    char *z = data ? memchr(data, '\0', len) : NULL;
    long long n = !data ? -1 : z ? (long long)(z - data) : (long long)len;

    free(data);
    return n;
}

/* Write LEN bytes of DATA where the records of PATH end (over the grown
 * zeros: what a torn write leaves). Returns 0 or -1. */
static int spill_at_end(const char *path, const char *data, size_t len)
{
    long long at = data_size(path);
    FILE *f = at < 0 ? NULL : fopen(path, "r+b");
    int rc = 0;

    if (!f)
        return -1;
    if (fseek(f, (long)at, SEEK_SET) != 0 || fwrite(data, 1, len, f) != len)
        rc = -1;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

/* Replace the file PATH by LEN bytes of DATA (plain stdio, not the
 * journal). Returns 0 or -1. */
static int spill(const char *path, const char *mode, const char *data, size_t len)
{
    FILE *f = fopen(path, mode);
    int rc = 0;

    if (!f)
        return -1;
    if (fwrite(data, 1, len, f) != len)
        rc = -1;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

/* A malloc'd "BASE/REST"; exits on failure (nothing else can go on). */
static char *path_of(const char *rest)
{
    char *p = NULL;

    if (asprintf(&p, "%s/%s", base, rest) < 0) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    return p;
}

/* Record number N (a small object; some non-ASCII text to be sure the
 * digest covers the UTF-8 bytes). */
static json_t *record(int n)
{
    return json_pack("{s:i, s:s, s:{s:b}}", "n", n, "name", "r\xc3\xa9sum\xc3\xa9 \"q\"",
                     "meta", "ok", n % 2);
}

static void test_open_and_lock(void)
{
    char *dir = path_of("a/b/c"), *a = path_of("a"), *ab = path_of("a/b");
    char *file = path_of("a/b/c/wb.journal"), *lockf = path_of("a/b/c/wb.journal.lock");
    struct journal *j = NULL, *j2 = (struct journal *)1;

    is_int(journal_open(dir, "wb.journal", &quiet, &j), 0, "open creates missing dirs");
    ok(j != NULL, "open gives a journal");
    is_int(file_mode(a), 0700, "first missing parent created 0700");
    is_int(file_mode(ab), 0700, "second missing parent created 0700");
    is_int(file_mode(dir), 0700, "journal dir created 0700");
    is_int(file_mode(file), 0600, "journal file created 0600");
    is_int(file_size(file), 0, "new journal file is empty");
    is_int(file_mode(lockf), 0600, "lock file created 0600");
    is_str(j ? journal_path(j) : NULL, file, "journal_path is DIR/NAME");
    is_int(j ? journal_size(j) : 1, 0, "size 0 after open");
    is_int(journal_open(dir, "wb.journal", &quiet, &j2), -EBUSY,
           "second open of the same journal while open: -EBUSY");
    ok(j2 == NULL, "failed open sets *out NULL");
    journal_close(j);
    j = NULL;
    is_int(journal_open(dir, "wb.journal", &quiet, &j), 0, "open again after close (lock released)");
    journal_close(j);
    journal_close(NULL);        /* must do nothing */
    free(dir);
    free(a);
    free(ab);
    free(file);
    free(lockf);
}

static void test_roundtrip(void)
{
    char *dir = path_of("rt");
    char *file = path_of("rt/j");
    struct journal *j = NULL;
    json_t *got = NULL, *want[3];
    uint64_t lsn[3] = { 0, 0, 0 };
    unsigned bad = 99;
    int appended = 0, equal = 1;

    for (int i = 0; i < 3; i++)
        want[i] = record(i);
    ok(want[0] && want[1] && want[2], "records built");
    is_int(journal_open(dir, "j", &quiet, &j), 0, "open");
    if (!j || !want[0] || !want[1] || !want[2])
        goto out;
    for (int i = 0; i < 3; i++)
        appended += journal_append(j, want[i], &lsn[i]) == 0;
    is_int(appended, 3, "3 appends succeed");
    ok(lsn[0] > 0 && lsn[0] < lsn[1] && lsn[1] < lsn[2], "LSNs increase");
    is_int(journal_sync(j, lsn[2]), 0, "sync to the last LSN");
    is_int(journal_sync(j, lsn[0]), 0, "sync to an LSN already durable");
    is_int(data_size(file), (long long)lsn[2], "file holds exactly the appended bytes");
    ok(file_size(file) >= data_size(file), "grown with zeros ahead of the records");
    is_int(journal_size(j), lsn[2], "journal_size counts the appended bytes");
    journal_close(j);
    j = NULL;
    is_int(journal_open(dir, "j", &quiet, &j), 0, "reopen");
    if (!j)
        goto out;
    is_int(journal_size(j), 0, "size counts from the open");
    is_int(read_all(j, &got, &bad), 0, "read back");
    is_int(bad, 0, "no bad record");
    is_int(got ? json_array_size(got) : 0, 3, "3 records read");
    for (int i = 0; got && i < 3; i++)
        equal &= json_equal(json_array_get(got, (size_t)i), want[i]);
    ok(got && equal, "records equal and in order");
out:
    json_decref(got);
    for (int i = 0; i < 3; i++)
        json_decref(want[i]);
    journal_close(j);
    free(dir);
    free(file);
}

/* Flip one bit of the JSON text of the second line of FILE. Returns 0 or -1. */
static int damage_second(const char *file)
{
    size_t len = 0;
    char *data = slurp(file, &len), *nl;
    int rc = -1;

    if (!data)
        return -1;
    nl = memchr(data, '\n', len);
    /* the second line's JSON starts 17 bytes after the first newline
     * (16 hex digits and a space): {"n":1,... ; flip the n into an o, so
     * the JSON stays valid and only the digest can tell */
    if (nl && (size_t)(nl - data) + 20 < len && nl[1 + 17 + 2] == 'n') {
        nl[1 + 17 + 2] ^= 0x01;
        rc = spill(file, "wb", data, len);
    }
    free(data);
    return rc;
}

/* A journal_rewrite builder: a new reference to the array CTX. */
static json_t *build_array(void *ctx)
{
    return json_incref((json_t *)ctx);
}

/* A journal_rewrite builder failing (out of memory). */
static json_t *build_null(void *ctx)
{
    return NULL;
}

static void test_torn_and_damaged(void)
{
    char *dir = path_of("rt"), *file = path_of("rt/j");
    static const char torn[] = "0123456789abcdef {\"n\":3,\"name\":\"cut";
    struct journal *j = NULL;
    json_t *got = NULL, *r0 = record(0), *r2 = record(2), *r4 = record(4);
    unsigned bad = 0;
    uint64_t lsn = 0;

    ok(r0 && r2 && r4, "records built");
    /* the file of test_roundtrip: 3 records; add a tail without newline */
    is_int(spill_at_end(file, torn, sizeof(torn) - 1), 0, "torn tail written with stdio");
    is_int(journal_open(dir, "j", &quiet, &j), 0, "open");
    if (!j || !r0 || !r2 || !r4)
        goto out;
    is_int(read_all(j, &got, &bad), 0, "read with torn tail");
    is_int(bad, 1, "torn tail counted as 1 bad record");
    is_int(got ? json_array_size(got) : 0, 3, "the 3 whole records returned");
    json_decref(got);
    got = NULL;

    is_int(damage_second(file), 0, "one byte of the middle record flipped");
    is_int(read_all(j, &got, &bad), 0, "read with a damaged middle record");
    is_int(bad, 2, "damaged record and torn tail counted");
    is_int(got ? json_array_size(got) : 0, 2, "the 2 good records returned");
    ok(got && json_equal(json_array_get(got, 0), r0) && json_equal(json_array_get(got, 1), r2),
       "records 0 and 2 returned, in order");

    /* what the mount does after a replay: rewrite with the good records;
     * an append after that is read back whole */
    is_int(journal_rewrite(j, build_array, got), 0,
           "rewrite with the good records");
    is_int(journal_append(j, r4, &lsn), 0, "append after the rewrite");
    is_int(journal_sync(j, lsn), 0, "sync after the rewrite");
    json_decref(got);
    got = NULL;
    is_int(read_all(j, &got, &bad), 0, "read after rewrite + append");
    is_int(bad, 0, "no bad record after the rewrite");
    ok(got && json_array_size(got) == 3 && json_equal(json_array_get(got, 0), r0) &&
       json_equal(json_array_get(got, 1), r2) && json_equal(json_array_get(got, 2), r4),
       "records 0, 2 and the new one, in order");
out:
    json_decref(got);
    json_decref(r0);
    json_decref(r2);
    json_decref(r4);
    journal_close(j);
    free(dir);
    free(file);
}

static void test_rewrite(void)
{
    char *dir = path_of("rw"), *file = path_of("rw/j"), *tmp = path_of("rw/j.new");
    struct journal *j = NULL;
    json_t *one = json_array(), *none = json_array(), *got = NULL;
    json_t *r1 = record(1), *r7 = record(7), *r8 = record(8);
    uint64_t lsn = 0;
    unsigned bad = 9;
    long long before;

    ok(one && none && r1 && r7 && r8 && json_array_append(one, r7) == 0, "arrays built");
    is_int(journal_open(dir, "j", &quiet, &j), 0, "open");
    if (!j || !one || !none || !r1 || !r7 || !r8)
        goto out;
    for (int i = 0; i < 5; i++)
        (void)journal_append(j, r1, &lsn);
    is_int(journal_sync(j, lsn), 0, "5 records appended and synced");
    ok(journal_size(j) > 0, "size before the rewrite");

    is_int(journal_rewrite(j, build_array, one), 0, "rewrite with 1 record");
    is_int(journal_size(j), 0, "size 0 right after the rewrite");
    is_int(read_all(j, &got, &bad), 0, "read after rewrite");
    is_int(bad, 0, "no bad record");
    ok(got && json_array_size(got) == 1 && json_equal(json_array_get(got, 0), r7),
       "file holds exactly the 1 record");
    ok(access(tmp, F_OK) < 0, "no temporary file left behind");
    is_int(file_mode(file), 0600, "rewritten file is 0600");
    json_decref(got);
    got = NULL;

    before = data_size(file);
    is_int(journal_append(j, r8, &lsn), 0, "append after rewrite");
    is_int(journal_sync(j, lsn), 0, "sync after rewrite");
    is_int(journal_size(j), data_size(file) - before, "size counts bytes since the rewrite");

    is_int(journal_rewrite(j, build_null, NULL), -ENOMEM, "builder failing: -ENOMEM");
    is_int(read_all(j, &got, &bad), 0, "read after failed rewrite");
    is_int(got ? json_array_size(got) : 0, 2, "failed rewrite left the file as it was");
    json_decref(got);
    got = NULL;

    is_int(journal_rewrite(j, build_array, none), 0, "rewrite with an empty array");
    is_int(file_size(file), 0, "file is empty");
    is_int(journal_size(j), 0, "size 0");
    is_int(read_all(j, &got, &bad), 0, "read empty journal");
    is_int(got ? json_array_size(got) : 1, 0, "no record");
    is_int(bad, 0, "no bad record");
    json_decref(got);
    got = NULL;
    is_int(journal_append(j, r8, &lsn), 0, "append to the emptied journal");
    is_int(journal_sync(j, lsn), 0, "sync");
    is_int(journal_size(j), data_size(file), "size is the records' size");
out:
    json_decref(got);
    json_decref(one);
    json_decref(none);
    json_decref(r1);
    json_decref(r7);
    json_decref(r8);
    journal_close(j);
    free(dir);
    free(file);
    free(tmp);
}

#define THREADS 4
#define PER_THREAD 200

struct writer {
    pthread_t tid;
    struct journal *j;
    int t;
    int failures;       /* append or sync not 0, or an LSN not increasing */
};

/* Append PER_THREAD records, each made durable before the next. */
static void *writer_main(void *arg)
{
    struct writer *w = arg;
    uint64_t prev = 0;

    for (int k = 0; k < PER_THREAD; k++) {
        json_t *rec = json_pack("{s:i, s:i}", "t", w->t, "k", k);
        uint64_t lsn = 0;

        if (!rec || journal_append(w->j, rec, &lsn) < 0 || lsn <= prev ||
            journal_sync(w->j, lsn) < 0)
            w->failures++;
        prev = lsn;
        json_decref(rec);
    }
    return NULL;
}

static void test_concurrency(void)
{
    char *dir = path_of("conc");
    struct journal *j = NULL;
    struct writer w[THREADS];
    static int seen[THREADS][PER_THREAD];
    json_t *got = NULL, *rec;
    unsigned bad = 9;
    int started = 0, failures = 0, once = 1, wrong = 0;
    size_t i;

    is_int(journal_open(dir, "j", &quiet, &j), 0, "open");
    if (!j)
        goto out;
    for (int t = 0; t < THREADS; t++) {
        w[t] = (struct writer){ .j = j, .t = t };
        if (pthread_create(&w[t].tid, NULL, writer_main, &w[t]) != 0)
            break;
        started++;
    }
    is_int(started, THREADS, "writer threads started");
    for (int t = 0; t < started; t++) {
        pthread_join(w[t].tid, NULL);
        failures += w[t].failures;
    }
    is_int(failures, 0, "every append and sync succeeded, LSNs increasing per thread");
    journal_close(j);
    j = NULL;
    is_int(journal_open(dir, "j", &quiet, &j), 0, "reopen");
    if (!j)
        goto out;
    is_int(read_all(j, &got, &bad), 0, "read back");
    is_int(bad, 0, "no bad record");
    is_int(got ? json_array_size(got) : 0, THREADS * PER_THREAD, "all records read back");
    json_array_foreach(got, i, rec) {
        json_int_t t = json_integer_value(json_object_get(rec, "t"));
        json_int_t k = json_integer_value(json_object_get(rec, "k"));

        if (t < 0 || t >= THREADS || k < 0 || k >= PER_THREAD)
            wrong++;
        else
            seen[t][k]++;
    }
    for (int t = 0; t < THREADS; t++)
        for (int k = 0; k < PER_THREAD; k++)
            once &= seen[t][k] == 1;
    is_int(wrong, 0, "every record is one the threads wrote");
    ok(once, "each record exactly once");
out:
    json_decref(got);
    journal_close(j);
    free(dir);
}

static void test_stop(void)
{
    char *dir = path_of("rw");
    struct journal *j = NULL;
    struct collect c = { json_array(), 0, 2 };
    json_t *rec = record(5);
    uint64_t lsn = 0;
    unsigned bad = 9;
    int appended = 0;

    ok(c.arr && rec, "built");
    is_int(journal_open(dir, "stop", &quiet, &j), 0, "open");
    if (!j || !c.arr || !rec)
        goto out;
    for (int i = 0; i < 4; i++)
        appended += journal_append(j, rec, &lsn) == 0;
    is_int(appended, 4, "4 records appended");
    is_int(journal_sync(j, lsn), 0, "sync");
    is_int(journal_read(j, collect_rec, &c, &bad), -42, "callback's negative value returned");
    is_int(c.calls, 2, "reading stopped at the callback's error");
    is_int(bad, 0, "no bad record");
    c.calls = 0;
    c.stop_after = 0;
    is_int(journal_read(j, collect_rec, &c, NULL), 0, "read with bad == NULL");
    is_int(c.calls, 4, "all 4 records without a stop");
out:
    json_decref(c.arr);
    json_decref(rec);
    journal_close(j);
    free(dir);
}

int main(void)
{
    if (!mkdtemp(base)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    test_open_and_lock();
    test_roundtrip();
    test_torn_and_damaged();
    test_rewrite();
    test_concurrency();
    test_stop();
    ok(tap_rmtree(base), "temporary directory removed");
    return done_testing();
}

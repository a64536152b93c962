/* test_journal.c - unit tests for the write-behind journal file (journal.h):
 * opening, its key and lock, where it may live, records read back, appends
 * of arrays, atomic rewrite, group commit under concurrent appends, the
 * journal or its lock removed while open, a failed write. Damaged files: see
 * test_journal_damage.c. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "journal/journal.h"
#include "util/util.h"
#include "tap.h"
#include "journal_util.h"

static struct logger quiet = { .level = LOG_LVL_QUIET };

static void test_open_and_lock(void)
{
    char *dir = jt_path("a/b/c"), *a = jt_path("a"), *ab = jt_path("a/b");
    char *file = jt_path("a/b/c/wb.journal"), *lockf = jt_path("a/b/c/wb.journal.lock");
    char *keyf = jt_path("a/b/c/wb.journal.key");
    unsigned char key[JT_KEY_LEN];
    struct journal *j = NULL, *j2 = (struct journal *)1;

    is_int(journal_open(dir, "wb.journal", 0, &quiet, &j), 0, "open creates missing dirs");
    ok(j != NULL, "open gives a journal");
    is_int(jt_mode(a), 0700, "first missing parent created 0700");
    is_int(jt_mode(ab), 0700, "second missing parent created 0700");
    is_int(jt_mode(dir), 0700, "journal dir created 0700");
    is_int(jt_mode(file), 0600, "journal file created 0600");
    is_int(jt_size(file), 0, "new journal file is empty");
    is_int(jt_mode(lockf), 0600, "lock file created 0600");
    is_int(jt_mode(keyf), 0600, "key file created 0600");
    ok(jt_key(dir, "wb.journal", key) == 0, "key file: 64 lowercase hex digits, a newline");
    is_str(j ? journal_path(j) : NULL, file, "journal_path is DIR/NAME");
    is_int(j ? journal_size(j) : 1, 0, "size 0 after open");
    is_int(journal_open(dir, "wb.journal", 0, &quiet, &j2), -EBUSY,
           "second open of the same journal while open: -EBUSY");
    ok(j2 == NULL, "failed open sets *out NULL");
    journal_close(j);
    j = NULL;
    is_int(journal_open(dir, "wb.journal", 0, &quiet, &j), 0,
           "open again after close (lock released)");
    journal_close(j);
    journal_close(NULL); /* must do nothing */
    free(dir);
    free(a);
    free(ab);
    free(file);
    free(lockf);
    free(keyf);
}

static void test_roundtrip(void)
{
    char *dir = jt_path("rt"), *file = jt_path("rt/j");
    struct journal_damage d = { 9, 9, 9 };
    struct journal *j = NULL;
    json_t *got = NULL, *want = json_array();
    uint64_t lsn[3] = { 0, 0, 0 };
    size_t len = 0;
    long long size;
    char *data;
    int appended = 0;

    for (int i = 0; want && i < 3; i++)
        json_array_append_new(want, jt_record(i));
    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "open");
    if (!j || !want)
        goto out;
    for (int i = 0; i < 3; i++)
        appended += journal_append(j, json_array_get(want, (size_t)i), &lsn[i]) == 0;
    is_int(appended, 3, "3 appends succeed");
    ok(lsn[0] > 0 && lsn[0] < lsn[1] && lsn[1] < lsn[2], "LSNs increase");
    is_int(journal_sync(j, lsn[2]), 0, "sync to the last LSN");
    is_int(journal_sync(j, lsn[0]), 0, "sync to an LSN already durable");
    data = jt_records_of(file, &len);
    is_int(data ? (long long)len : -1, (long long)lsn[2], "file holds exactly the appended bytes");
    free(data);
    size = jt_size(file);
    ok(size >= 64 * 1024 && size <= 4 * 1024 * 1024 + 64 * 1024 && size % (64 * 1024) == 0,
       "grown ahead with zeros by a step of 64 KiB .. 4 MiB (%lld bytes)", size);
    ok(journal_room(j) >= (uint64_t)size, "journal_room counts the file's size at least");
    is_int(journal_size(j), lsn[2], "journal_size counts the appended bytes");
    journal_close(j);
    j = NULL;
    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "reopen");
    if (!j)
        goto out;
    is_int(journal_size(j), 0, "size counts from the open");
    is_int(jt_read(j, &got, &d), 0, "read back");
    ok(d.torn == 0 && d.damaged == 0 && d.foreign == 0, "nothing torn, damaged or foreign");
    ok(got && json_equal(got, want), "the 3 records read back equal and in order");
out:
    json_decref(got);
    json_decref(want);
    journal_close(j);
    free(dir);
    free(file);
}

/* A journal_rewrite builder: NULL (out of memory). */
static json_t *build_null(void *ctx)
{
    return NULL;
}

/* A journal_rewrite builder: not an array. */
static json_t *build_object(void *ctx)
{
    return json_object();
}

static void test_rewrite(void)
{
    char *dir = jt_path("rw"), *file = jt_path("rw/j");
    struct journal *j = NULL;
    json_t *one = json_array(), *none = json_array(), *got = NULL;
    json_t *r1 = jt_record(1), *r7 = jt_record(7), *r8 = jt_record(8);
    uint64_t lsn = 0;
    size_t before = 0, after = 0;

    ok(one && none && r1 && r7 && r8 && json_array_append(one, r7) == 0, "arrays built");
    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "open");
    if (!j || !one || !none || !r1 || !r7 || !r8)
        goto out;
    for (int i = 0; i < 5; i++)
        (void)journal_append(j, r1, &lsn);
    is_int(journal_sync(j, lsn), 0, "5 records appended and synced");
    is_int(journal_rewrite(j, jt_build_array, one), 0, "rewrite with 1 record");
    is_int(journal_size(j), 0, "size 0 right after the rewrite");
    is_int(jt_read(j, &got, NULL), 0, "read after rewrite");
    ok(got && json_equal(got, one), "file holds exactly the 1 record");
    is_int(jt_count_names(dir, "j.tmp-", 0), 0, "no temporary file left behind");
    is_int(jt_mode(file), 0600, "rewritten file is 0600");
    json_decref(got);
    got = NULL;

    free(jt_records_of(file, &before));
    is_int(journal_append(j, r8, &lsn), 0, "append after rewrite");
    is_int(journal_sync(j, lsn), 0, "sync after rewrite");
    free(jt_records_of(file, &after));
    is_int(journal_size(j), after - before, "size counts the bytes appended since the rewrite");

    is_int(journal_rewrite(j, build_null, NULL), -ENOMEM, "builder failing: -ENOMEM");
    is_int(journal_rewrite(j, build_object, NULL), -EINVAL, "builder giving no array: -EINVAL");
    is_int(jt_read(j, &got, NULL), 0, "read after the failed rewrites");
    is_int(got ? json_array_size(got) : 0, 2, "failed rewrites left the file as it was");
    is_int(jt_count_names(dir, "j.tmp-", 0), 0, "and no temporary file");
    json_decref(got);
    got = NULL;

    is_int(journal_rewrite(j, jt_build_array, none), 0, "rewrite with an empty array");
    is_int(jt_size(file), 0, "file is empty");
    is_int(journal_size(j), 0, "size 0");
    is_int(jt_read(j, &got, NULL), 0, "read empty journal");
    is_int(got ? json_array_size(got) : 1, 0, "no record");
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
}

/* An append made while BUILD runs (journal.h: it waits, and goes into the
 * new file after what BUILD returned). */
struct race {
    struct journal *j;
    json_t *rec, *built; /* appended by the racer; returned by BUILD */
    pthread_t tid;
    int started, waited, rc;
    atomic_int state; /* 1: about to append; 2: the append returned */
    atomic_long lwp;  /* the racer's thread id */
    uint64_t lsn;
};

static void *racer_main(void *arg)
{
    struct race *r = arg;

    atomic_store(&r->lwp, (long)syscall(SYS_gettid));
    atomic_store(&r->state, 1);
    r->rc = journal_append(r->j, r->rec, &r->lsn);
    atomic_store(&r->state, 2);
    return NULL;
}

/* Is thread LWP of this process waiting in a futex (a mutex)? */
static int in_futex(long lwp)
{
    char path[64];
    long nr = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/task/%ld/syscall", lwp);
    if (!(f = fopen(path, "r")))
        return 0;
    if (fscanf(f, "%ld", &nr) != 1)
        nr = -1;
    fclose(f);
    return nr == SYS_futex;
}

/* A journal_rewrite builder: start the racer, and poll (1 ms, at most 10 s)
 * until it waits in a futex (r->waited) or its append returned. */
static json_t *build_racing(void *ctx)
{
    struct race *r = ctx;
    struct timespec ms = { 0, 1000000 };

    if (pthread_create(&r->tid, NULL, racer_main, r) != 0)
        return NULL;
    r->started = 1;
    for (int i = 0; i < 10000 && atomic_load(&r->state) != 2 && !r->waited; i++) {
        r->waited = atomic_load(&r->state) == 1 && in_futex(atomic_load(&r->lwp));
        if (!r->waited)
            nanosleep(&ms, NULL);
    }
    return json_incref(r->built);
}

static void test_rewrite_waits(void)
{
    char *dir = jt_path("race");
    struct race r = { .rec = jt_record(8), .built = json_array() };
    struct journal *j = NULL;
    json_t *r1 = jt_record(1), *got = NULL;
    uint64_t lsn = 0;

    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "open");
    if (!j || !r.rec || !r.built || !r1 || json_array_append_new(r.built, jt_record(7)) < 0)
        goto out;
    r.j = j;
    ok(journal_append(j, r1, &lsn) == 0 && journal_sync(j, lsn) == 0, "a record appended");
    is_int(journal_rewrite(j, build_racing, &r), 0, "rewrite while another thread appends");
    if (r.started)
        pthread_join(r.tid, NULL);
    ok(r.waited, "the append made while BUILD runs waits for the rewrite");
    is_int(r.rc, 0, "and then succeeds");
    ok(journal_sync(j, r.lsn) == 0 && json_array_append(r.built, r.rec) == 0, "synced");
    is_int(jt_read(j, &got, NULL), 0, "read");
    ok(got && json_equal(got, r.built), "what BUILD returned, then the waiting append");
    is_int(journal_size(j), r.lsn - lsn, "journal_size counts the append after the rewrite");
out:
    json_decref(got);
    json_decref(r.rec);
    json_decref(r.built);
    json_decref(r1);
    journal_close(j);
    free(dir);
}

#define THREADS 4
#define PER_THREAD 200

struct writer {
    pthread_t tid;
    struct journal *j;
    int t;
    int failures; /* append or sync not 0, or an LSN not increasing */
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
    char *dir = jt_path("conc");
    static int seen[THREADS][PER_THREAD];
    struct journal_damage d = { 9, 9, 9 };
    struct journal *j = NULL;
    struct writer w[THREADS];
    json_t *got = NULL, *rec;
    int started = 0, failures = 0, once = 1, wrong = 0;
    size_t i;

    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "open");
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
    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "reopen");
    if (!j)
        goto out;
    is_int(jt_read(j, &got, &d), 0, "read back");
    ok(d.torn == 0 && d.damaged == 0 && d.foreign == 0, "no damage");
    is_int(got ? json_array_size(got) : 0, THREADS * PER_THREAD, "all records read back");
    json_array_foreach (got, i, rec) {
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
    char *dir = jt_path("rw");
    struct jt_collect c = { json_array(), 0, 2 };
    struct journal_damage d = { 9, 9, 9 };
    struct journal *j = NULL;
    json_t *rec = jt_record(5);
    uint64_t lsn = 0;
    int appended = 0;

    is_int(journal_open(dir, "stop", 0, &quiet, &j), 0, "open");
    if (!j || !c.arr || !rec)
        goto out;
    for (int i = 0; i < 4; i++)
        appended += journal_append(j, rec, &lsn) == 0;
    is_int(appended, 4, "4 records appended");
    is_int(journal_sync(j, lsn), 0, "sync");
    is_int(journal_read(j, jt_collect_rec, &c, &d), -42, "callback's negative value returned");
    is_int(c.calls, 2, "reading stopped at the callback's error");
    ok(d.torn == 0 && d.damaged == 0 && d.foreign == 0, "no damage");
    c.calls = 0;
    c.stop_after = 0;
    is_int(journal_read(j, jt_collect_rec, &c, NULL), 0, "read with DMG NULL");
    is_int(c.calls, 4, "all 4 records without a stop");
out:
    json_decref(c.arr);
    json_decref(rec);
    journal_close(j);
    free(dir);
}

/* Try to append REC to J: it must be refused with WANT, nothing appended. */
static void refused(struct journal *j, const char *file, json_t *rec, int want, const char *what)
{
    uint64_t size = journal_size(j), lsn = 77;
    size_t before = 0, after = 0;

    free(jt_records_of(file, &before));
    is_int(journal_append(j, rec, &lsn), want, "append of %s: %d", what, want);
    free(jt_records_of(file, &after));
    ok(journal_size(j) == size && after == before && lsn == 77, "nothing appended");
    json_decref(rec);
}

static void test_append_array(void)
{
    char *dir = jt_path("arr"), *file = jt_path("arr/j"), *big = malloc(9u << 20);
    json_t *three = json_array(), *got = NULL;
    struct journal *j = NULL;
    uint64_t lsn = 0, lsn2 = UINT64_MAX;

    for (int i = 0; three && i < 3; i++)
        json_array_append_new(three, jt_record(i));
    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "open");
    if (!j || !three || !big)
        goto out;
    is_int(journal_append(j, three, &lsn), 0, "append of an array of 3 objects");
    is_int(journal_size(j), lsn, "*LSN is after all three");
    refused(j, file, json_pack("[o,i,o]", jt_record(3), 5, jt_record(4)), -EINVAL,
            "an array with a number in it");
    refused(j, file, json_pack("[o,[o]]", jt_record(3), jt_record(4)), -EINVAL,
            "an array with an array in it");
    refused(j, file, json_integer(5), -EINVAL, "a number");
    refused(j, file, json_string("{}"), -EINVAL, "a string");
    memset(big, 'x', 9u << 20);
    big[(9u << 20) - 1] = '\0';
    refused(j, file, json_pack("{s:s}", "big", big), -EFBIG, "a record over 8 MiB");
    refused(j, file, json_pack("[o,{s:s}]", jt_record(3), "big", big), -EFBIG,
            "an array with a record over 8 MiB in it");
    is_int(journal_append(j, three, &lsn), 0, "the array of 3 appended again");
    json_array_clear(three);
    is_int(journal_append(j, three, &lsn2), 0, "append of an empty array: 0");
    is_int(lsn2, lsn, "*LSN of an empty array is the position after what was appended");
    is_int(journal_sync(j, lsn), 0, "sync");
    journal_close(j);
    j = NULL;
    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "reopen");
    is_int(j ? jt_read(j, &got, NULL) : -1, 0, "read");
    ok(got && json_array_size(got) == 6 &&
           json_integer_value(json_object_get(json_array_get(got, 5), "n")) == 2,
       "the two arrays of 3, nothing of the refused ones");
out:
    json_decref(got);
    json_decref(three);
    journal_close(j);
    free(big);
    free(dir);
    free(file);
}

/* Open the journal "j" in SUB (created 0700) with ALLOW_SHARED; closed
 * again. Returns journal_open's value. */
static int try_open(const char *sub, int allow_shared)
{
    char *dir = jt_path(sub);
    struct journal *j = NULL;
    int rc = journal_open(dir, "j", allow_shared, &quiet, &j);

    journal_close(j);
    free(dir);
    return rc;
}

/* A symlink at NAME (a file of the journal "j" in a new directory SUB) to
 * TARGET is refused, and TARGET is left as it was (or not made). */
static void symlink_refused(const char *sub, const char *name, const char *target)
{
    char *dir = jt_path(sub), *at = NULL, *before, *after;
    size_t blen = 0, alen = 0;
    int rc;

    before = jt_slurp(target, &blen);
    ok(mkdir(dir, 0700) == 0 && asprintf(&at, "%s/%s", dir, name) > 0 && symlink(target, at) == 0,
       "a symlink at %s to %s", name, before ? "a file" : "nothing (dangling)");
    rc = try_open(sub, 0);
    ok(rc == -ELOOP || rc == -EACCES, "journal_open refuses a symlink at %s (%d)", name, rc);
    after = jt_slurp(target, &alen);
    ok(before ?
           after && alen == blen && memcmp(before, after, blen) == 0 && jt_mode(target) == 0644 :
           !after && errno == ENOENT,
       "its target %s", before ? "is untouched" : "is not made");
    free(before);
    free(after);
    free(at);
    free(dir);
}

static void test_place(void)
{
    static const char *const names[] = { "j", "j.key", "j.lock" };
    char *target = jt_path("target"), *none = jt_path("nothing-here"), *key = jt_path("km/j.key");
    char *shared = jt_path("shared"), *file = jt_path("km/j"), *other = jt_path("km-other");
    static const char precious[] = "precious\n";

    ok(jt_spill(target, "wb", precious, strlen(precious)) == 0 && chmod(target, 0644) == 0,
       "a target file");
    for (int i = 0; i < 3; i++) {
        char sub[32], sub2[32];

        snprintf(sub, sizeof(sub), "sym%d", i);
        snprintf(sub2, sizeof(sub2), "dangling%d", i);
        symlink_refused(sub, names[i], target);
        symlink_refused(sub2, names[i], none);
    }
    ok(mkdir(shared, 0700) == 0 && chmod(shared, 0770) == 0, "a group-writable directory");
    is_int(try_open("shared", 0), -EACCES, "refused: -EACCES");
    is_int(try_open("shared", 1), 0, "accepted with allow_shared");
    ok(chmod(shared, 0707) == 0, "an other-writable directory");
    is_int(try_open("shared", 0), -EACCES, "refused: -EACCES");

    is_int(try_open("km", 0), 0, "a journal made");
    is_int(chmod(key, 0644) == 0 ? try_open("km", 0) : 1, -EACCES, "key file 0644 refused");
    is_int(chmod(key, 0640) == 0 ? try_open("km", 0) : 1, -EACCES, "key file 0640 refused");
    is_int(chmod(key, 0400) == 0 ? try_open("km", 0) : 1, 0, "key file 0400 accepted");
    chmod(key, 0600);
    is_int(jt_spill(key, "wb", "0123456789abcdef\n", 17) == 0 ? try_open("km", 0) : 1, -EINVAL,
           "key file of 16 hex digits refused: -EINVAL");
    is_int(jt_spill(key, "wb", "", 0) == 0 ? try_open("km", 0) : 1, -EINVAL,
           "empty key file refused: -EINVAL");
    {
        char bad[67];

        memset(bad, 'g', 64);
        bad[64] = '\n';
        is_int(jt_spill(key, "wb", bad, 65) == 0 ? try_open("km", 0) : 1, -EINVAL,
               "key file of 64 non-hex characters refused: -EINVAL");
        memset(bad, 'a', 63);
        bad[63] = '\n';
        is_int(jt_spill(key, "wb", bad, 64) == 0 ? try_open("km", 0) : 1, -EINVAL,
               "key file of 63 hex digits and a newline refused: -EINVAL");
        memset(bad, 'a', 65);
        bad[65] = '\n';
        is_int(jt_spill(key, "wb", bad, 66) == 0 ? try_open("km", 0) : 1, -EINVAL,
               "key file of 65 hex digits and a newline refused: -EINVAL");
    }
    is_int(link(file, other) == 0 ? try_open("km", 0) : 1, -EMLINK,
           "a journal file with a second name elsewhere refused: -EMLINK");
    unlink(other);
    free(target);
    free(none);
    free(key);
    free(shared);
    free(file);
    free(other);
}

/* The journal's file removed, or replaced, while it is open: syncs fail
 * (-ESTALE) until a rewrite puts the live records back at its name. */
static void test_removed(void)
{
    char *dir = jt_path("rm"), *file = jt_path("rm/j"), *fake = jt_path("rm/fake");
    struct journal *j = NULL;
    json_t *live = json_array(), *got = NULL, *r3 = NULL;
    uint64_t lsn = 0;
    int n = 0;

    for (int i = 0; live && i < 4; i++)
        json_array_append_new(live, jt_record(i));
    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "open");
    if (!j || !live)
        goto out;
    n += journal_append(j, json_array_get(live, 0), &lsn) == 0 && journal_sync(j, lsn) == 0;
    ok(n == 1 && unlink(file) == 0, "a record synced; the journal file removed");
    is_int(journal_append(j, json_array_get(live, 1), &lsn), 0, "append");
    is_int(journal_sync(j, lsn), -ESTALE, "sync: -ESTALE (removed)");
    is_int(journal_sync(j, lsn), -ESTALE, "sync again: still -ESTALE");
    is_int(journal_rewrite(j, jt_build_array, live), 0, "rewrite with the live records");
    is_int(jt_mode(file), 0600, "the file is back at the journal's name");
    is_int(journal_sync(j, lsn), 0, "sync: 0");
    ok(jt_spill(fake, "wb", "x\n", 2) == 0 && rename(fake, file) == 0,
       "another file renamed over the journal's name");
    is_int(journal_append(j, json_array_get(live, 2), &lsn), 0, "append");
    is_int(journal_sync(j, lsn), -ESTALE, "sync: -ESTALE (replaced)");
    r3 = json_incref(json_array_get(live, 3));
    json_array_remove(live, 3);
    is_int(journal_rewrite(j, jt_build_array, live), 0, "rewrite heals it");
    is_int(journal_append(j, r3, &lsn), 0, "append");
    is_int(journal_sync(j, lsn), 0, "sync: 0");
    journal_close(j);
    j = NULL;
    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "reopen");
    is_int(j ? jt_read(j, &got, NULL) : -1, 0, "read");
    ok(got && json_array_append(live, r3) == 0 && json_equal(got, live),
       "the live records and the one appended after the rewrite");
out:
    json_decref(r3);
    json_decref(got);
    json_decref(live);
    journal_close(j);
    free(dir);
    free(file);
    free(fake);
}

/* A write that fails (here: past RLIMIT_FSIZE, so growing the file fails
 * with EFBIG) breaks the journal: the append says -EIO, and every sync
 * fails with -EIO, even for later appends that worked, until a rewrite
 * makes what is live durable again. */
static void test_broken(void)
{
    char *dir = jt_path("eio"), *big = malloc(100000);
    struct rlimit was, lim;
    struct journal *j = NULL;
    json_t *live = json_array(), *bigrec = NULL, *got = NULL;
    uint64_t lsn = 0, lsn2 = 0;
    int rc = 1;

    for (int i = 0; live && i < 2; i++)
        json_array_append_new(live, jt_record(i));
    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "open");
    if (!j || !live || !big || getrlimit(RLIMIT_FSIZE, &was) < 0)
        goto out;
    memset(big, 'x', 99999);
    big[99999] = '\0';
    bigrec = json_pack("{s:s}", "big", big);
    ok(journal_append(j, json_array_get(live, 0), &lsn) == 0 && journal_sync(j, lsn) == 0,
       "a record appended and synced");
    signal(SIGXFSZ, SIG_IGN);
    lim = was;
    lim.rlim_cur = 65536; /* the big record is written across it */
    if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
        rc = journal_append(j, bigrec, &lsn2);
        setrlimit(RLIMIT_FSIZE, &was);
    }
    is_int(rc, -EIO, "an append whose write fails: -EIO");
    is_int(journal_append(j, json_array_get(live, 1), &lsn), 0, "the next append works");
    is_int(journal_sync(j, lsn), -EIO, "but its sync fails: -EIO");
    is_int(journal_sync(j, lsn), -EIO, "and again: -EIO");
    is_int(journal_rewrite(j, jt_build_array, live), 0, "a rewrite with the live records");
    is_int(journal_append(j, bigrec, &lsn), 0, "append");
    is_int(journal_sync(j, lsn), 0, "sync: 0 again");
    json_array_append(live, bigrec);
    if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
        rc = journal_rewrite(j, jt_build_array, live);
        setrlimit(RLIMIT_FSIZE, &was);
    }
    is_int(rc, -EFBIG, "a rewrite whose write fails: -EFBIG");
    is_int(jt_count_names(dir, "j.tmp-", 0), 0, "its temporary file removed");
    is_int(jt_read(j, &got, NULL), 0, "read");
    ok(got && json_equal(got, live),
       "the file as it was: the live records and the one after "
       "the rewrite");
out:
    json_decref(got);
    json_decref(bigrec);
    json_decref(live);
    journal_close(j);
    free(big);
    free(dir);
}

/* The lock file removed while the journal is open: the next sync takes it
 * again, so another open still gets -EBUSY; when another open took a new
 * lock first, the sync says -EBUSY. */
static void test_lock_removed(void)
{
    char *dir = jt_path("lk"), *lockf = jt_path("lk/j.lock");
    struct journal *j = NULL, *j2 = NULL;
    json_t *r0 = jt_record(0);
    uint64_t lsn = 0;

    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "open");
    if (!j || !r0)
        goto out;
    ok(unlink(lockf) == 0, "the lock file removed");
    is_int(journal_append(j, r0, &lsn), 0, "append");
    is_int(journal_sync(j, lsn), 0, "sync: 0");
    is_int(jt_mode(lockf), 0600, "the lock file is made again");
    is_int(journal_open(dir, "j", 0, &quiet, &j2), -EBUSY, "another open: -EBUSY");
    journal_close(j2);
    j2 = NULL;
    ok(unlink(lockf) == 0, "the lock file removed again");
    is_int(journal_open(dir, "j", 0, &quiet, &j2), 0, "another open takes a new lock");
    is_int(journal_append(j, r0, &lsn), 0, "append");
    is_int(journal_sync(j, lsn), -EBUSY, "sync: -EBUSY (another holds the new lock)");
    journal_close(j2);
    j2 = NULL;
    is_int(journal_sync(j, lsn), 0, "the other closed: sync takes the lock, 0");
    is_int(journal_open(dir, "j", 0, &quiet, &j2), -EBUSY, "another open: -EBUSY");
out:
    journal_close(j2);
    journal_close(j);
    json_decref(r0);
    free(dir);
    free(lockf);
}

int main(void)
{
    if (!mkdtemp(jt_base)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    test_open_and_lock();
    test_roundtrip();
    test_rewrite();
    test_rewrite_waits();
    test_concurrency();
    test_stop();
    test_append_array();
    test_place();
    test_removed();
    test_broken();
    test_lock_removed();
    ok(tap_rmtree(jt_base), "temporary directory removed");
    return done_testing();
}

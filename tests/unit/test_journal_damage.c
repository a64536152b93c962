/* test_journal_damage.c - unit tests for reading a damaged journal back
 * (journal.h, journal_read): one byte damaged at every offset, the file cut
 * at every offset, zeros at its end and in its middle, records forged with
 * another key, the unkeyed format of journals written before keys, and the
 * hard link that keeps a damaged file. Each case writes the file's bytes
 * with stdio and reads them with journal_read through an open journal, so
 * what FN is handed, the counts, the failure ring and the kept link are all
 * checked together. */
#include <errno.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "util/util.h"
#include "journal/journal.h"
#include "tap.h"
#include "journal_util.h"

#define NREC 5

/* A journal of NREC records, open (read, never appended to, as at a
 * mount): its file's bytes and where each record starts. */
struct fixture {
    char *dir, *file;
    struct logger lg;
    struct journal *j;
    json_t *recs;  /* the NREC records, in order */
    char *content; /* the file's bytes, zeros grown ahead left out */
    size_t len;
    size_t start[NREC + 1]; /* record i is content[start[i] .. start[i + 1]) */
};

/* What a reading of damaged bytes must give. */
struct expect {
    json_t *recs; /* handed to FN, in order (borrowed) */
    unsigned torn, damaged, foreign;
};

/* Make fixture F in the directory SUB: NREC records appended through the
 * journal (one array: one append), which is then closed and opened again.
 * Returns 0 or -1. */
static int fixture_make(struct fixture *f, const char *sub, struct failring *ring)
{
    unsigned char key[JT_KEY_LEN];
    char *lines[NREC] = { NULL };
    uint64_t lsn = 0;
    size_t at = 0;
    int rc = -1, same = 1;

    memset(f, 0, sizeof(*f));
    f->lg = (struct logger){ .level = LOG_LVL_QUIET, .failures = ring };
    f->dir = jt_path(sub);
    if (asprintf(&f->file, "%s/j", f->dir) < 0 || !(f->recs = json_array()))
        return -1;
    for (int i = 0; i < NREC; i++)
        json_array_append_new(f->recs, jt_record(i));
    if (journal_open(f->dir, "j", 0, &f->lg, &f->j) < 0 ||
        journal_append(f->j, f->recs, &lsn) < 0 || journal_sync(f->j, lsn) < 0)
        return -1;
    journal_close(f->j);
    f->j = NULL;
    if (journal_open(f->dir, "j", 0, &f->lg, &f->j) < 0 || jt_key(f->dir, "j", key) < 0 ||
        !(f->content = jt_records_of(f->file, &f->len)))
        return -1;
    for (int i = 0; i < NREC; i++) {
        size_t n;

        if (!(lines[i] = jt_line(json_array_get(f->recs, (size_t)i), key)))
            goto out;
        n = strlen(lines[i]);
        f->start[i] = at;
        same &= at + n <= f->len && memcmp(f->content + at, lines[i], n) == 0;
        at += n;
    }
    f->start[NREC] = at;
    ok(same && at == f->len,
       "the file holds each record as \"HMAC-SHA256(key, JSON) in 32 "
       "hex, space, JSON, newline\" (%zu bytes)",
       f->len);
    rc = same && at == f->len ? 0 : -1;
out:
    for (int i = 0; i < NREC; i++)
        free(lines[i]);
    return rc;
}

static void fixture_free(struct fixture *f)
{
    journal_close(f->j);
    json_decref(f->recs);
    free(f->content);
    free(f->dir);
    free(f->file);
}

/* The n of each record of ARR, as text in OUT ("0,1,3"). */
static void ns_of(const json_t *arr, char *out, size_t outlen)
{
    size_t i, at = 0;
    json_t *r;

    out[0] = '\0';
    json_array_foreach (arr, i, r)
        if (at < outlen)
            at += (size_t)snprintf(out + at, outlen - at, "%s%lld", i ? "," : "",
                                   (long long)json_integer_value(json_object_get(r, "n")));
}

/* Put LEN bytes of DATA and ZEROS zeros in F's file, read it with
 * journal_read and check against E: the records handed, the counts, a
 * NAME.damaged-* link exactly when damaged or foreign stretches were found
 * (then removed), one failure in the ring for each of those stretches.
 * Returns 1, or 0 with WHY. */
static int check_read(struct fixture *f, const char *data, size_t len, size_t zeros,
                      const struct expect *e, char *why, size_t whylen)
{
    char *z = calloc(1, zeros + 1), got_ns[64], want_ns[64];
    struct journal_damage d = { 9, 9, 9 };
    unsigned long before = failring_count(f->lg.failures), added;
    json_t *got = NULL;
    int rc, links, fine;

    if (!z || jt_spill(f->file, "wb", data, len) < 0 || jt_spill(f->file, "ab", z, zeros) < 0) {
        free(z);
        snprintf(why, whylen, "cannot write the file");
        return 0;
    }
    free(z);
    rc = jt_read(f->j, &got, &d);
    links = jt_count_names(f->dir, "j.damaged-", 1);
    added = failring_count(f->lg.failures) - before;
    fine = rc == 0 && got && json_equal(got, e->recs) && d.torn == e->torn &&
        d.damaged == e->damaged && d.foreign == e->foreign && links == (e->damaged || e->foreign) &&
        added == e->damaged + e->foreign;
    if (!fine) {
        ns_of(got, got_ns, sizeof(got_ns));
        ns_of(e->recs, want_ns, sizeof(want_ns));
        snprintf(why, whylen,
                 "rc %d, records [%s] want [%s], torn/damaged/foreign %u/%u/%u "
                 "want %u/%u/%u, %d link(s), %lu in the ring",
                 rc, got_ns, want_ns, d.torn, d.damaged, d.foreign, e->torn, e->damaged, e->foreign,
                 links, added);
    }
    json_decref(got);
    return fine;
}

/* check_read as one test point named NAME (the difference said when not). */
static void expect_read(struct fixture *f, const char *data, size_t len, size_t zeros,
                        const struct expect *e, const char *name)
{
    char why[1024];
    int fine = data && check_read(f, data, len, zeros, e, why, sizeof(why));

    ok(fine, "%s", name);
    if (!fine)
        printf("#   %s\n", data ? why : "out of memory");
}

/* The records of F but those of MISSING (a bit each), as a new array. */
static json_t *recs_but(const struct fixture *f, unsigned missing)
{
    json_t *a = json_array();

    for (int i = 0; a && i < NREC; i++)
        if (!(missing & (1u << i)))
            json_array_append(a, json_array_get(f->recs, (size_t)i));
    return a;
}

/* Does D (AVAIL bytes) start with a line of a record's form: HEX (32, or
 * 16: the unkeyed format) lowercase hex digits, a space, a JSON object, a
 * newline (whatever its MAC)? */
static int has_record_form(const char *d, size_t avail, size_t hex)
{
    const char *nl = memchr(d, '\n', avail);
    json_t *o;
    int yes;

    /* strspn stops at the newline at the latest */
    if (!nl || (size_t)(nl - d) < hex + 2 || strspn(d, "0123456789abcdef") != hex || d[hex] != ' ')
        return 0;
    o = json_loadb(d + hex + 1, (size_t)(nl - d) - hex - 1, 0, NULL);
    yes = json_is_object(o);
    json_decref(o);
    return yes;
}

/* The record of F that holds byte P. */
static int record_holding(const struct fixture *f, size_t p)
{
    int i = 0;

    while (i + 1 < NREC && f->start[i + 1] <= p)
        i++;
    return i;
}

/* One byte at every offset of F's records set by HOW (0: to zero, 1: XOR
 * 0x55, 2: to a newline). What is required: the damage costs exactly the
 * record that holds the byte (a record's newline is its own: the next
 * record is looked for at every position, so it is found), the others are
 * handed in order; that record counts as one stretch: foreign when its line
 * still has a record's form (a byte of the MAC changed into another hex
 * digit, or of the JSON leaving it valid: a MAC cannot tell that from a
 * record made with another key), else torn when it is the last record,
 * damaged otherwise. One case may count one more, foreign, stretch: a
 * newline put after the 15th digit of the MAC leaves a line of the unkeyed
 * format (16 digits, a space, the JSON) at a line start, as a line appended
 * by a mount before keys would be. The zeros grown ahead follow the
 * records. */
static void test_every_byte(struct fixture *f, int how)
{
    static const char *const names[] = { "set to zero", "XOR 0x55", "set to a newline" };
    char *copy = malloc(f->len), why[1024];
    size_t bad = 0;

    for (size_t p = 0; copy && p < f->len; p++) {
        int i = record_holding(f, p), fine;
        struct expect e = { recs_but(f, 1u << i), 0, 0, 0 };

        memcpy(copy, f->content, f->len);
        copy[p] = how == 0 ? '\0' : how == 1 ? (char)(copy[p] ^ 0x55) : '\n';
        if (copy[p] == f->content[p]) {
            json_decref(e.recs);
            e.recs = recs_but(f, 0);
        } else if (has_record_form(copy + f->start[i], f->len - f->start[i], 32)) {
            e.foreign = 1;
        } else if (i == NREC - 1) {
            e.torn = 1;
        } else {
            e.damaged = 1;
        }
        fine = check_read(f, copy, f->len, 64, &e, why, sizeof(why));
        if (!fine && copy[p] == '\n' && has_record_form(copy + p + 1, f->len - p - 1, 16)) {
            e.foreign++;
            fine = check_read(f, copy, f->len, 64, &e, why, sizeof(why));
        }
        if (!fine && ++bad <= 6)
            printf("# byte %zu (record %d, at %zu of it) %s: %s\n", p, i, p - f->start[i],
                   names[how], why);
        json_decref(e.recs);
    }
    ok(copy && bad == 0,
       "one byte %s, at every one of the %zu offsets: exactly the other "
       "records, one stretch counted (%zu offsets wrong)",
       names[how], f->len, bad);
    free(copy);
}

/* The file cut at every offset L (a crash during a write: truncated, or
 * with the zeros grown ahead after the cut when ZEROED): exactly the whole
 * records before L, the rest one torn stretch, nothing damaged, no link. */
static void test_every_cut(struct fixture *f, int zeroed)
{
    size_t bad = 0;
    char why[1024];

    for (size_t l = 0; l <= f->len; l++) {
        unsigned missing = 0;
        int boundary = 0;
        struct expect e;

        for (int i = 0; i < NREC; i++) {
            missing |= f->start[i + 1] > l ? 1u << i : 0;
            boundary |= f->start[i] == l;
        }
        e = (struct expect){ recs_but(f, missing), !boundary && l < f->len, 0, 0 };
        if (!check_read(f, f->content, l, zeroed ? f->len - l + 100 : 0, &e, why, sizeof(why)) &&
            ++bad <= 6)
            printf("# cut at %zu: %s\n", l, why);
        json_decref(e.recs);
    }
    ok(bad == 0,
       "the file cut at every one of %zu offsets%s: the whole records before the "
       "cut, one torn stretch, no damage (%zu wrong)",
       f->len + 1, zeroed ? " (zeros after the cut)" : "", bad);
}

/* Zeros at the end of any length are space grown ahead; zeros over a
 * stretch in the middle (a page never written) are damage, and the records
 * after them are read. */
static void test_zeros(struct fixture *f)
{
    static const size_t tails[] = { 1, 2, 4095, 4096, 65536, 3 * 65536 + 7 };
    /* from record RA's byte OA to record RB's byte OB; MISSING: lost records */
    static const struct {
        int ra;
        size_t oa;
        int rb;
        size_t ob;
        unsigned missing;
    } mid[] = {
        { 1, 0, 3, 0, 0x06 },   /* records 1 and 2 whole */
        { 1, 40, 3, 40, 0x0e }, /* from inside 1's JSON to inside 3's */
        { 0, 0, 1, 0, 0x01 },   /* the first record */
        { 2, 33, 2, 34, 0x04 }, /* one byte: the '{' */
        { 1, 50, 4, 33, 0x1e }, /* into the last record: all after it is torn */
    };
    char *copy = malloc(f->len), name[160];

    for (size_t t = 0; t < sizeof(tails) / sizeof(tails[0]); t++) {
        struct expect e = { recs_but(f, 0), 0, 0, 0 };

        snprintf(name, sizeof(name), "%zu zeros at the end ignored: every record, no damage",
                 tails[t]);
        expect_read(f, f->content, f->len, tails[t], &e, name);
        json_decref(e.recs);
    }
    for (size_t m = 0; copy && m < sizeof(mid) / sizeof(mid[0]); m++) {
        size_t a = f->start[mid[m].ra] + mid[m].oa, b = f->start[mid[m].rb] + mid[m].ob;
        int last = (mid[m].missing >> (NREC - 1)) & 1;
        struct expect e = { recs_but(f, mid[m].missing), last, !last, 0 };

        memcpy(copy, f->content, f->len);
        memset(copy + a, 0, b - a);
        snprintf(name, sizeof(name),
                 "zeros over bytes %zu..%zu: the records around them read,"
                 " one %s stretch",
                 a, b, last ? "torn" : "damaged");
        expect_read(f, copy, f->len, 64, &e, name);
        json_decref(e.recs);
    }
    free(copy);
}

/* F's records with LINE put before record AT (AT == NREC: at the end), in
 * a new buffer (*len). */
static char *with_line(const struct fixture *f, const char *line, int at, size_t *len)
{
    size_t n = line ? strlen(line) : 0, cut = f->start[at];
    char *d = line ? malloc(f->len + n) : NULL;

    if (d) {
        memcpy(d, f->content, cut);
        memcpy(d + cut, line, n);
        memcpy(d + cut + n, f->content + cut, f->len - cut);
        *len = f->len + n;
    }
    return d;
}

/* The name in DIR that starts with "j.damaged-" into OUT ("" if none). */
static void kept_name(const char *dir, char *out, size_t outlen)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    out[0] = '\0';
    while (d && (e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "j.damaged-", 10) == 0)
            snprintf(out, outlen, "%s", e->d_name);
    if (d)
        closedir(d);
}

/* After damage, the file is kept as NAME.damaged-YYYYMMDDTHHMMSSZ: a copy
 * of it (a hard link would give the journal two links, which its next open
 * refuses). DATA (LEN bytes) is damage the reading finds. */
static void test_kept_copy(struct fixture *f, const char *data, size_t len)
{
    char kept[300], *k = NULL;
    struct stat a, b;
    json_t *got = NULL;

    ok(data && jt_spill(f->file, "wb", data, len) == 0 && jt_read(f->j, &got, NULL) == 0,
       "damage written and read");
    kept_name(f->dir, kept, sizeof(kept));
    ok(strlen(kept) == 10 + 16 && strspn(kept + 10, "0123456789") == 8 && kept[18] == 'T' &&
           strspn(kept + 19, "0123456789") == 6 && kept[25] == 'Z',
       "kept under the name j.damaged-YYYYMMDDTHHMMSSZ (%s)", kept);
    ok(kept[0] && asprintf(&k, "%s/%s", f->dir, kept) > 0 && stat(k, &b) == 0 &&
           stat(f->file, &a) == 0 && a.st_ino != b.st_ino && a.st_nlink == 1 && b.st_nlink == 1 &&
           (b.st_mode & 0777) == 0600 && jt_same_bytes(k, f->file),
       "the kept name is a 0600 copy of the journal file, which keeps one link");
    free(k);
    jt_count_names(f->dir, "j.damaged-", 1);
    json_decref(got);
}

/* A record in the journal's format but made with another key is counted
 * foreign and never handed to FN, wherever it stands; the file is kept and
 * the record is in the failure ring (check_read). The very same record
 * made with the journal's key is read. */
static void test_forged(struct fixture *f)
{
    unsigned char key[JT_KEY_LEN], other[JT_KEY_LEN];
    json_t *r9 = jt_record(9), *want = recs_but(f, 0);
    char *forged = NULL, *good = NULL, *d, name[160];
    size_t len = 0;

    if (jt_key(f->dir, "j", key) < 0 || !r9 || !want)
        goto out;
    memcpy(other, key, sizeof(key));
    other[0] ^= 1;
    forged = jt_line(r9, other);
    good = jt_line(r9, key);
    for (int at = 0; at <= NREC; at += 2) {
        struct expect e = { want, 0, 0, 1 };

        d = with_line(f, forged, at, &len);
        snprintf(name, sizeof(name),
                 "a record made with another key before record %d: "
                 "foreign, never handed",
                 at);
        expect_read(f, d, len, 64, &e, name);
        free(d);
    }
    d = with_line(f, forged, 1, &len);
    test_kept_copy(f, d, len);
    free(d);
    d = with_line(f, good, 2, &len);
    if (json_array_insert(want, 2, r9) == 0) {
        struct expect e = { want, 0, 0, 0 };

        expect_read(f, d, len, 0, &e,
                    "the same record made with the journal's key is read, "
                    "in its place");
    }
    free(d);
out:
    free(forged);
    free(good);
    json_decref(r9);
    json_decref(want);
}

/* The mount stops (a crash, a failed rewrite) after a reading that kept the
 * damaged file and before the rewrite that replaces it: the journal must
 * open again, and its records be read again. */
static void test_reopen_kept(struct fixture *f)
{
    unsigned char other[JT_KEY_LEN] = { 1 };
    char *forged = jt_line(json_array_get(f->recs, 0), other), *d;
    struct journal_damage dmg = { 0 };
    json_t *got = NULL;
    size_t len = 0;
    int rc;

    d = with_line(f, forged, 2, &len);
    ok(d && jt_spill(f->file, "wb", d, len) == 0 && jt_read(f->j, &got, &dmg) == 0 &&
           dmg.foreign == 1 && jt_count_names(f->dir, "j.damaged-", 0) == 1,
       "a foreign record read: the file kept as j.damaged-*");
    json_decref(got);
    got = NULL;
    journal_close(f->j);
    f->j = NULL;
    rc = journal_open(f->dir, "j", 0, &f->lg, &f->j);
    is_int(rc, 0, "the journal opens again before any rewrite (the kept link is its own)");
    if (rc < 0) {
        jt_count_names(f->dir, "j.damaged-", 1);
        rc = journal_open(f->dir, "j", 0, &f->lg, &f->j);
    }
    ok(rc == 0 && jt_read(f->j, &got, &dmg) == 0 && got && json_array_size(got) == NREC &&
           dmg.foreign == 1,
       "and its records are read again");
    jt_count_names(f->dir, "j.damaged-", 1);
    json_decref(got);
    free(forged);
    free(d);
}

/* What a mount does at a restart after a crash: the journal holds a
 * damaged record and a torn end; the good records are read, the journal
 * rewritten with them, and an append after that is read back whole. */
static void test_torn_then_rewrite(void)
{
    static const char torn[] = "0123456789abcdef0123456789abcdef {\"n\":3,\"name\":\"cut";
    char *dir = jt_path("rt"), *file = jt_path("rt/j"), *data = NULL;
    struct logger quiet = { .level = LOG_LVL_QUIET };
    struct journal_damage d = { 0 };
    struct journal *j = NULL;
    json_t *got = NULL, *r4 = jt_record(4), *three = json_array();
    uint64_t lsn = 0;
    size_t len = 0;
    char *second;

    /* 3 records: the second one's JSON made invalid, a tail without a
     * newline added after them */
    for (int i = 0; three && i < 3; i++)
        json_array_append_new(three, jt_record(i));
    ok(three && journal_open(dir, "j", 0, &quiet, &j) == 0 && journal_append(j, three, &lsn) == 0 &&
           journal_sync(j, lsn) == 0,
       "3 records");
    journal_close(j);
    j = NULL;
    data = jt_records_of(file, &len);
    second = data ? memchr(data, '\n', len) : NULL;
    ok(second && second[1 + 33] == '{', "the second record found");
    if (!second || !r4)
        goto out;
    second[1 + 33] = '[';
    ok(jt_spill(file, "wb", data, len) == 0 && jt_spill(file, "ab", torn, strlen(torn)) == 0,
       "damage and a torn tail written with stdio");
    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "open");
    if (!j)
        goto out;
    is_int(jt_read(j, &got, &d), 0, "read");
    ok(d.torn == 1 && d.damaged == 1 && d.foreign == 0, "1 torn, 1 damaged (%u, %u, %u)", d.torn,
       d.damaged, d.foreign);
    ok(got && json_array_size(got) == 2 &&
           json_integer_value(json_object_get(json_array_get(got, 0), "n")) == 0 &&
           json_integer_value(json_object_get(json_array_get(got, 1), "n")) == 2,
       "records 0 and 2 handed, in order");
    jt_count_names(dir, "j.damaged-", 1);
    is_int(journal_rewrite(j, jt_build_array, got), 0, "rewrite with the good records");
    is_int(journal_append(j, r4, &lsn), 0, "append after the rewrite");
    is_int(journal_sync(j, lsn), 0, "sync after the rewrite");
    if (got)
        json_array_append(got, r4);
    journal_close(j);
    j = NULL;
    is_int(journal_open(dir, "j", 0, &quiet, &j), 0, "reopen");
    json_decref(got);
    got = NULL;
    is_int(j ? jt_read(j, &got, &d) : -1, 0, "read after rewrite + append");
    ok(d.torn == 0 && d.damaged == 0 && d.foreign == 0, "no damage after the rewrite");
    is_int(got ? json_array_size(got) : 0, 3, "records 0, 2 and the new one");
out:
    free(data);
    json_decref(three);
    json_decref(got);
    json_decref(r4);
    journal_close(j);
    free(dir);
    free(file);
}

/* Journals written before keys: lines "16 hex of SHA-256, space, JSON".
 * Read when the key did not exist at the open (the journal was written
 * before keys: the key is made then), refused (foreign) once a key exists.
 * A line of that format whose digest is wrong is foreign even then. */
static void test_legacy(struct failring *ring)
{
    struct logger lg = { .level = LOG_LVL_QUIET, .failures = ring };
    char *dir = jt_path("legacy"), *file = jt_path("legacy/j"), *key = jt_path("legacy/j.key");
    unsigned char k[JT_KEY_LEN];
    struct journal_damage d = { 9, 9, 9 };
    struct journal *j = NULL;
    json_t *want = json_array(), *got = NULL, *r4;
    char *line;
    int written = 0;

    is_int(journal_open(dir, "j", 0, &lg, &j), 0, "open a new journal (its key made)");
    journal_close(j);
    j = NULL;
    is_int(jt_mode(key), 0600, "the key file is 0600");
    for (int i = 0; want && i < 3; i++) {
        json_array_append_new(want, jt_record(i));
        line = jt_line(json_array_get(want, (size_t)i), NULL);
        written += line && jt_spill(file, i ? "ab" : "wb", line, strlen(line)) == 0;
        free(line);
    }
    is_int(written, 3, "3 lines of the unkeyed format written");
    is_int(unlink(key), 0, "the key removed: a journal written before keys");
    is_int(journal_open(dir, "j", 0, &lg, &j), 0, "open: the key is made again");
    if (!j || !want)
        goto out;
    ok(jt_key(dir, "j", k) == 0, "a new key file of 64 hex digits");
    json_array_append_new(want, jt_record(3));
    line = jt_line(json_array_get(want, 3), k);
    ok(line && jt_spill(file, "ab", line, strlen(line)) == 0, "a record with the new key added");
    free(line);
    is_int(jt_read(j, &got, &d), 0, "read");
    ok(got && json_equal(got, want), "the unkeyed records and the keyed one are read, in order");
    ok(d.torn == 0 && d.damaged == 0 && d.foreign == 0, "nothing counted");
    is_int(jt_count_names(dir, "j.damaged-", 1), 0, "no damaged copy kept");
    json_decref(got);
    r4 = jt_record(4);
    line = jt_line(r4, NULL);
    json_decref(r4);
    if (line)
        line[0] = line[0] == '0' ? '1' : '0';
    ok(line && jt_spill(file, "ab", line, strlen(line)) == 0, "an unkeyed line, digest wrong");
    free(line);
    is_int(jt_read(j, &got, &d), 0, "read");
    ok(got && json_equal(got, want) && d.foreign == 1 && d.damaged == 0 && d.torn == 0,
       "its digest does not match: foreign, not handed (foreign %u)", d.foreign);
    is_int(jt_count_names(dir, "j.damaged-", 1), 1, "the file kept as j.damaged-*");
    json_decref(got);
    journal_close(j);
    j = NULL;
    is_int(journal_open(dir, "j", 0, &lg, &j), 0, "open again: the key exists now");
    if (!j)
        goto out;
    is_int(jt_read(j, &got, &d), 0, "read");
    ok(got && json_array_size(got) == 1 &&
           json_equal(json_array_get(got, 0), json_array_get(want, 3)),
       "only the keyed record is handed");
    ok(d.foreign == 4 && d.damaged == 0 && d.torn == 0,
       "the 4 unkeyed lines are foreign (foreign %u damaged %u torn %u)", d.foreign, d.damaged,
       d.torn);
    json_decref(got);
out:
    journal_close(j);
    json_decref(want);
    free(dir);
    free(file);
    free(key);
}

/* A journal of keyed records whose key file is gone: refused at open
 * (nothing in it can be checked), its records untouched; the key put back,
 * it opens and reads. */
static void test_key_gone(void)
{
    char *dir = jt_path("nokey"), *key = jt_path("nokey/j.key"), *saved = jt_path("saved.key");
    struct logger lg = { .level = LOG_LVL_QUIET };
    struct journal *j = NULL;
    json_t *r = jt_record(1), *got = NULL;
    uint64_t lsn = 0;

    is_int(journal_open(dir, "j", 0, &lg, &j), 0, "open");
    ok(j && journal_append(j, r, &lsn) == 0 && journal_sync(j, lsn) == 0, "a keyed record");
    journal_close(j);
    j = NULL;
    is_int(rename(key, saved), 0, "the key moved away");
    is_int(journal_open(dir, "j", 0, &lg, &j), -ENOKEY, "open refused: the key is gone");
    ok(access(key, F_OK) != 0, "no new key made");
    is_int(rename(saved, key), 0, "the key put back");
    is_int(journal_open(dir, "j", 0, &lg, &j), 0, "open with the key");
    ok(j && jt_read(j, &got, NULL) == 0 && json_array_size(got) == 1 &&
           json_equal(json_array_get(got, 0), r),
       "the record is read");
    json_decref(got);
    json_decref(r);
    journal_close(j);
    free(dir);
    free(key);
    free(saved);
}

int main(void)
{
    struct failring *ring = failring_new();
    struct fixture f;

    if (!mkdtemp(jt_base) || !ring) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    if (fixture_make(&f, "dmg", ring) < 0) {
        printf("Bail out! cannot make the journal of %d records\n", NREC);
        return 1;
    }
    for (int how = 0; how < 3; how++)
        test_every_byte(&f, how);
    test_every_cut(&f, 0);
    test_every_cut(&f, 1);
    test_zeros(&f);
    test_forged(&f);
    test_reopen_kept(&f);
    fixture_free(&f);
    test_legacy(ring);
    test_torn_then_rewrite();
    test_key_gone();
    failring_free(ring);
    ok(tap_rmtree(jt_base), "temporary directory removed");
    return done_testing();
}

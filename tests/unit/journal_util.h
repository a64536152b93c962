/* journal_util.h - helpers of the journal unit tests (test_journal.c,
 * test_journal_damage.c): a scratch directory, files written and read with
 * plain stdio (not the journal), the journal's key and its record format
 * made again with OpenSSL (so the tests check the format journal.h states,
 * not journal/record.c against itself), and records read back. */
#ifndef AZTFS_TEST_JOURNAL_UTIL_H
#define AZTFS_TEST_JOURNAL_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "journal/journal.h"

#define JT_KEY_LEN 32

/* The temporary directory of this run (mkdtemp in main), removed at the end. */
static char jt_base[] = "/tmp/aztfs-test-journal-XXXXXX";

/* A malloc'd "BASE/REST"; exits on failure (nothing else can go on). */
static inline char *jt_path(const char *rest)
{
    char *p = NULL;

    if (asprintf(&p, "%s/%s", jt_base, rest) < 0) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    return p;
}

/* The size of the file PATH, or -1. */
static inline long long jt_size(const char *path)
{
    struct stat sb;

    return stat(path, &sb) < 0 ? -1 : (long long)sb.st_size;
}

/* The mode bits of PATH (not following a symlink), or -1. */
static inline int jt_mode(const char *path)
{
    struct stat sb;

    return lstat(path, &sb) < 0 ? -1 : (int)(sb.st_mode & 07777);
}

/* The whole file PATH, malloc'd and NUL-terminated, its length in *len;
 * NULL on failure. */
static inline char *jt_slurp(const char *path, size_t *len)
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

/* Do files A and B hold the same bytes? */
static inline int jt_same_bytes(const char *a, const char *b)
{
    size_t la = 0, lb = 0;
    char *da = jt_slurp(a, &la), *db = jt_slurp(b, &lb);
    int same = da && db && la == lb && memcmp(da, db, la) == 0;

    free(da);
    free(db);
    return same;
}

/* The bytes of PATH before the zeros grown at its end, malloc'd (*len). */
static inline char *jt_records_of(const char *path, size_t *len)
{
    char *d = jt_slurp(path, len);

    while (d && *len > 0 && d[*len - 1] == '\0')
        (*len)--;
    return d;
}

/* Write LEN bytes of DATA to PATH with MODE ("wb": the same file, its
 * contents replaced; "ab": added at its end). Returns 0 or -1. */
static inline int jt_spill(const char *path, const char *mode, const void *data, size_t len)
{
    FILE *f = fopen(path, mode);
    int rc = 0;

    if (!f)
        return -1;
    if (len > 0 && fwrite(data, 1, len, f) != len)
        rc = -1;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

/* Record number N (a small object; some non-ASCII text to be sure the MAC
 * covers the UTF-8 bytes). */
static inline json_t *jt_record(int n)
{
    return json_pack("{s:i, s:s, s:{s:b}}", "n", n, "name", "r\xc3\xa9sum\xc3\xa9 \"q\"", "meta",
                     "ok", n % 2);
}

/* The key of the journal NAME in DIR (NAME.key: 64 lowercase hex digits and
 * a newline) into KEY. Returns 0, or -1 when the file is not that. */
static inline int jt_key(const char *dir, const char *name, unsigned char *key)
{
    char *p = NULL, *hex = NULL;
    size_t len = 0;
    int rc = -1;

    if (asprintf(&p, "%s/%s.key", dir, name) < 0)
        return -1;
    hex = jt_slurp(p, &len);
    if (hex && len == 2 * JT_KEY_LEN + 1 && hex[2 * JT_KEY_LEN] == '\n' &&
        strspn(hex, "0123456789abcdef") == 2 * JT_KEY_LEN) {
        for (int i = 0; i < JT_KEY_LEN; i++)
            sscanf(hex + 2 * i, "%2hhx", &key[i]);
        rc = 0;
    }
    free(hex);
    free(p);
    return rc;
}

/* REC as one line of the journal's format, malloc'd: with KEY, the first 16
 * bytes of HMAC-SHA256(KEY, JSON) in 32 lowercase hex; with KEY NULL, the
 * unkeyed format before keys (the first 8 bytes of SHA-256(JSON) in 16
 * hex). Then a space, the compact JSON, a newline. NULL on failure. */
static inline char *jt_line(const json_t *rec, const unsigned char *key)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0, n = key ? 16 : 8;
    char *text = json_dumps(rec, JSON_COMPACT), *line = NULL, hex[33];

    if (!text)
        return NULL;
    if (key)
        HMAC(EVP_sha256(), key, JT_KEY_LEN, (unsigned char *)text, strlen(text), md, &md_len);
    else
        SHA256((unsigned char *)text, strlen(text), md);
    for (unsigned int i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    if (asprintf(&line, "%s %s\n", hex, text) < 0)
        line = NULL;
    free(text);
    return line;
}

/* Records handed to a journal_read callback, deep-copied into ARR. */
struct jt_collect {
    json_t *arr;
    int calls;
    int stop_after; /* > 0: return -42 at that call */
};

/* A journal_read callback: keep a copy of REC. */
static inline int jt_collect_rec(void *ctx, const json_t *rec)
{
    struct jt_collect *c = ctx;
    json_t *copy = json_deep_copy(rec);

    c->calls++;
    if (!copy || json_array_append_new(c->arr, copy) < 0)
        return -ENOMEM;
    if (c->stop_after > 0 && c->calls == c->stop_after)
        return -42;
    return 0;
}

/* Read J's records into a new array (*out, NULL on failure); returns
 * journal_read's value. */
static inline int jt_read(struct journal *j, json_t **out, struct journal_damage *d)
{
    struct jt_collect c = { json_array(), 0, 0 };
    int rc;

    *out = NULL;
    if (!c.arr)
        return -ENOMEM;
    rc = journal_read(j, jt_collect_rec, &c, d);
    *out = c.arr;
    return rc;
}

/* A journal_rewrite builder: a new reference to the array CTX. */
static inline json_t *jt_build_array(void *ctx)
{
    return json_incref((json_t *)ctx);
}

/* How many names in DIR start with PREFIX; with UNLINK, they are removed. */
static inline int jt_count_names(const char *dir, const char *prefix, int unlink_them)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            n++;
            if (unlink_them)
                unlinkat(dirfd(d), e->d_name, 0);
        }
    if (d)
        closedir(d);
    return n;
}

#endif

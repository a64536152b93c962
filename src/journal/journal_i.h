/* journal_i.h - the inside of the journal, shared by journal/journal.c (the file:
 * opening, appending, flushing, rewriting), journal/key.c (its key) and
 * journal/record.c (the record format) only. */
#ifndef AZTFS_JOURNAL_JOURNAL_I_H
#define AZTFS_JOURNAL_JOURNAL_I_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <pthread.h>
#include <jansson.h>

#include "util/util.h"

struct buf;

#define JOURNAL_KEY_LEN 32 /* bytes of the journal's HMAC key */
#define JREC_MAC_HEX 32    /* a record's MAC: HMAC-SHA256, first 16 bytes, in hex */
#define JREC_OLD_HEX 16    /* the unkeyed format before: SHA-256, 8 bytes */

/* Append REC (a JSON object, else -EINVAL) as one record line to B, its
 * MAC made with KEY (JOURNAL_KEY_LEN bytes). Returns 0, -EFBIG (longer than
 * a record may be), -ENOMEM or -EIO. */
int jrec_format(struct buf *b, const json_t *rec, const unsigned char *key);

/* What a stretch of a journal file holds. */
enum jspan_kind {
    JS_RECORD,  /* a whole record, its MAC made with the key */
    JS_LEGACY,  /* a whole record of the unkeyed format */
    JS_FOREIGN, /* a well-formed line, at a line start, whose MAC is not
                 * the key's: damaged in its MAC, or not written by this
                 * journal's mounts */
    JS_DAMAGED, /* no record, with whole records after it */
    JS_TORN,    /* no record, after the last whole one: a write cut short */
};

struct jspan {
    size_t off, len; /* bytes of the file */
    enum jspan_kind kind;
    json_t *rec; /* JS_RECORD, JS_LEGACY: the record (owned) */
};

/* The spans of a file, in order. */
struct jscan {
    struct jspan *spans;
    size_t n, cap;
};

/* Split the LEN bytes of D (a journal file; zeros at its end are space
 * grown ahead and ignored) into spans: records, and the damage between
 * them. After damage, the next record is looked for at every position
 * (the damage may have hit a newline), so intact records after damage are
 * found; there only a record whose MAC matches counts. A record's JSON
 * must open with '{"' (or be "{}"), which no JSON string holds raw, so few
 * positions are candidates whatever the entities hold. LEGACY: records of
 * the unkeyed format are taken too (a journal written before keys); else
 * such a line is foreign. Returns 0 with *S (jrec_scan_free), or -ENOMEM. */
int jrec_scan(const char *d, size_t len, const unsigned char *key, int legacy, struct jscan *s);

void jrec_scan_free(struct jscan *s);

/* The "path" a damaged stretch D (LEN bytes) still names, if any: for the
 * log line that says what may be lost. malloc'd, or NULL. */
char *jrec_salvage_path(const char *d, size_t len);

/* ---- journal.c: the journal (its fields, for key.c) ---- */

/* LG, DIR, the names and KEY are set by journal_open and read-only after
 * it; the rest changes with MU held (journal_open and journal_read run
 * before anyone else uses the journal). */
struct journal {
    pthread_mutex_t mu;
    pthread_cond_t synced_cv; /* a flush ended; waited on with mu */
    struct logger *lg;
    struct safe_dir dir; /* checked; every file is opened relative to it */
    char *name, *lock_name, *key_name, *path;
    unsigned char key[JOURNAL_KEY_LEN];
    int legacy;      /* the key was made at the open, and nothing written
                      * since: the file is of the unkeyed format (or empty);
                      * guarded by mu */
    int fd;          /* the journal file; guarded by mu (the flush reads it
                      * unlocked while SYNCING: a rewrite waits for that) */
    int lock_fd;     /* its lock file, flock'ed; guarded by mu */
    int broken;      /* a flush failed: syncs fail until a rewrite; guarded
                      * by mu */
    int syncing;     /* a flush runs (its caller holds no lock); guarded by
                      * mu */
    uint64_t end;    /* bytes appended, counted from the open; guarded by mu */
    uint64_t synced; /* everything before this is on disk; guarded by mu */
    uint64_t base;   /* END at the last rewrite; guarded by mu */
    off_t pos;       /* where the next record goes in the file; guarded by mu */
    off_t alloc;     /* the file's size: zeros from POS on; guarded by mu */
};

/* ---- key.c: the journal's key ---- */

/* Read J's key from NAME.key in its directory, or make one when there is
 * none (j->legacy set: a journal without a key is of the unkeyed format);
 * a journal whose records are keyed and whose key is gone is refused with
 * -ENOKEY. Returns 0 or -errno (logged). */
int journal_load_key(struct journal *j);

#endif

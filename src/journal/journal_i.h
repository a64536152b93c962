/* journal_i.h - the inside of the journal, shared by journal/journal.c (the file:
 * opening, appending, flushing, rewriting) and journal/record.c (the record
 * format) only. */
#ifndef AZTFS_JOURNAL_JOURNAL_I_H
#define AZTFS_JOURNAL_JOURNAL_I_H

#include <stddef.h>
#include <jansson.h>

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

#endif

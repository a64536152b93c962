/* journal/record.c - the journal's records on disk (journal_i.h): each
 * one line "MAC JSON\n" whose MAC is keyed by the journal's key, and the
 * records of a file's bytes found again after damage. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "util/util.h"
#include "journal/journal_i.h"

/* A record's text is at most this long (an entity is at most 1 MiB on the
 * wire; its JSON escaping can double that). */
#define RECORD_MAX (8u * 1024 * 1024)

/* The digest of LEN bytes of TEXT as HEX_LEN hex digits in OUT: the HMAC-
 * SHA256 of KEY (the journal's format), or with KEY NULL the unkeyed
 * SHA-256 of the format before it. Returns 0, or -EIO. */
static int digest_hex(const unsigned char *key, const char *text, size_t len, char *out,
                      size_t hex_len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;

    if (key) {
        if (!HMAC(EVP_sha256(), key, JOURNAL_KEY_LEN, (const unsigned char *)text, len, md,
                  &md_len))
            return -EIO;
    } else {
        SHA256((const unsigned char *)text, len, md);
    }
    for (size_t i = 0; i < hex_len / 2; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* See journal/journal_i.h. */
int jrec_format(struct buf *b, const json_t *rec, const unsigned char *key)
{
    char hex[JREC_MAC_HEX + 1];
    char *text;
    size_t len;
    int rc;

    if (!json_is_object(rec))
        return -EINVAL; /* the reader takes objects only */
    if (!(text = json_dumps(rec, JSON_COMPACT)))
        return -ENOMEM;
    len = strlen(text);
    if (len > RECORD_MAX) {
        rc = -EFBIG;
    } else if ((rc = digest_hex(key, text, len, hex, JREC_MAC_HEX)) == 0) {
        buf_addf(b, "%s %s\n", hex, text);
        rc = b->err ? -ENOMEM : 0;
    }
    free(text);
    return rc;
}

/* How many lowercase hex digits start D (at most MAX+1 looked at). */
static size_t hex_run(const char *d, size_t avail, size_t max)
{
    size_t n = 0;

    while (n < avail && n <= max && ((d[n] >= '0' && d[n] <= '9') || (d[n] >= 'a' && d[n] <= 'f')))
        n++;
    return n;
}

/* Does a record's JSON text start at JS (AVAIL bytes)? An object opens
 * with '{"', or is "{}" alone on its line. A raw '{"' never stands inside a
 * JSON string (its quote would be escaped), so in an intact line "MAC {\""
 * is found only where a record starts: the search after damage meets few
 * candidates, whatever the entities hold. */
static int json_starts(const char *js, size_t avail)
{
    return avail >= 3 && js[0] == '{' && (js[1] == '"' || (js[1] == '}' && js[2] == '\n'));
}

/* Is there a whole record at D[0..AVAIL)? Returns its length through its
 * newline with *kind and *rec (a new reference for JS_RECORD and
 * JS_LEGACY), or 0 when none starts there. LEGACY: records of the unkeyed
 * format are taken too (a journal written before keys); else they are
 * foreign. LINE_START: D starts a line; elsewhere (a search after damage)
 * only a record whose MAC matches is one: a well-formed line whose MAC
 * does not (JS_FOREIGN) counts only where a line starts (after damage to
 * a MAC's first digits, its last ones are no record of any kind). */
static size_t record_at(const char *d, size_t avail, const unsigned char *key, int legacy,
                        int line_start, enum jspan_kind *kind, json_t **rec)
{
    size_t h = hex_run(d, avail, JREC_MAC_HEX), jl;
    char want[JREC_MAC_HEX + 1];
    const char *js, *nl;
    json_t *j;
    int same;

    *rec = NULL;
    if ((h != JREC_MAC_HEX && h != JREC_OLD_HEX) || h + 1 >= avail || d[h] != ' ' ||
        !json_starts(d + h + 1, avail - h - 1))
        return 0;
    js = d + h + 1;
    if (!(nl = memchr(js, '\n', avail - h - 1)))
        return 0;
    jl = (size_t)(nl - js);
    if (digest_hex(h == JREC_MAC_HEX ? key : NULL, js, jl, want, h) < 0)
        return 0;
    /* a record of the unkeyed format counts only in a journal of it */
    same = memcmp(want, d, h) == 0 && (h == JREC_MAC_HEX || legacy);
    if (!same && !line_start)
        return 0;
    if (!(j = json_loadb(js, jl, 0, NULL)) || !json_is_object(j)) {
        json_decref(j);
        return 0; /* not a record: damage */
    }
    if (same) {
        *kind = h == JREC_MAC_HEX ? JS_RECORD : JS_LEGACY;
        *rec = j;
    } else {
        *kind = JS_FOREIGN; /* well formed, but its MAC is not this key's */
        json_decref(j);
    }
    return (size_t)(nl - d) + 1;
}

/* Append span (OFF, LEN, KIND, REC stolen) to S. 0 or -ENOMEM. */
static int span_push(struct jscan *s, size_t off, size_t len, enum jspan_kind kind, json_t *rec)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        struct jspan *n = realloc(s->spans, cap * sizeof(*n));

        if (!n) {
            json_decref(rec);
            return -ENOMEM;
        }
        s->spans = n;
        s->cap = cap;
    }
    s->spans[s->n++] = (struct jspan){ off, len, kind, rec };
    return 0;
}

/* Where the next record after damage at OFF starts (a position holding
 * "HEX " that record_at takes), or LEN. Any position is tried, not only
 * line starts: the damage may have hit a newline. */
static size_t resync(const char *d, size_t len, size_t off, const unsigned char *key, int legacy)
{
    for (size_t q = off + 1; q < len; q++) {
        enum jspan_kind k;
        json_t *r;
        size_t n;

        if (!((d[q] >= '0' && d[q] <= '9') || (d[q] >= 'a' && d[q] <= 'f')))
            continue;
        if ((n = record_at(d + q, len - q, key, legacy, d[q - 1] == '\n', &k, &r)) > 0) {
            json_decref(r);
            return q;
        }
    }
    return len;
}

/* See journal/journal_i.h. */
int jrec_scan(const char *d, size_t len, const unsigned char *key, int legacy, struct jscan *s)
{
    size_t off = 0, last_rec_end = 0;
    int rc = 0;

    memset(s, 0, sizeof(*s));
    while (len > 0 && d[len - 1] == '\0')
        len--; /* the space grown ahead of the records */
    while (off < len && rc == 0) {
        enum jspan_kind k = JS_DAMAGED;
        json_t *rec = NULL;
        size_t n;

        if ((n = record_at(d + off, len - off, key, legacy, off == 0 || d[off - 1] == '\n', &k,
                           &rec)) == 0)
            n = resync(d, len, off, key, legacy) - off;
        else if (k != JS_FOREIGN)
            last_rec_end = off + n;
        rc = span_push(s, off, n, k, rec);
        off += n;
    }
    /* damage after the last whole record is a write cut short */
    for (size_t i = 0; rc == 0 && i < s->n; i++)
        if (s->spans[i].kind == JS_DAMAGED && s->spans[i].off >= last_rec_end)
            s->spans[i].kind = JS_TORN;
    if (rc < 0)
        jrec_scan_free(s);
    return rc;
}

/* See journal/journal_i.h. */
void jrec_scan_free(struct jscan *s)
{
    for (size_t i = 0; i < s->n; i++)
        json_decref(s->spans[i].rec);
    free(s->spans);
    memset(s, 0, sizeof(*s));
}

/* See journal/journal_i.h. */
char *jrec_salvage_path(const char *d, size_t len)
{
    static const char key[] = "\"path\":\"";
    const char *p = NULL;
    size_t k = sizeof(key) - 1, n = 0;

    for (size_t i = 0; i + k <= len; i++)
        if (memcmp(d + i, key, k) == 0) {
            p = d + i + k;
            break;
        }
    if (!p)
        return NULL;
    while (p + n < d + len && p[n] != '"' && p[n] != '\\' && n < 4096) {
        if ((unsigned char)p[n] < 0x20)
            return NULL; /* damaged inside the path: it cannot be trusted */
        n++;
    }
    return p + n < d + len && p[n] == '"' && n > 0 ? strndup(p, n) : NULL;
}

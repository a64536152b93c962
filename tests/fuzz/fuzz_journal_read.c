/* fuzz_journal_read.c - libFuzzer target: jrec_scan (journal/record.c), the
 * reader of a journal file's bytes, with a fixed key, the unkeyed format
 * taken and not. The input is scanned as it is and again with every line
 * of a record's form made to verify (its MAC, or its unkeyed digest,
 * recomputed), so that whole records of any JSON are reached. Aborts
 * unless:
 *  - the spans cover the input without its trailing zeros exactly, in
 *    order, without overlap or empty spans;
 *  - a JS_RECORD (JS_LEGACY) is one line "32 (16) hex, space, JSON object,
 *    newline" whose MAC (digest) recomputed over its JSON bytes matches,
 *    its record the JSON's (JS_LEGACY only when the unkeyed format is
 *    taken); a JS_FOREIGN is such a line whose MAC does not match;
 *  - no record that verifies starts anywhere inside damage (JS_DAMAGED,
 *    JS_TORN): the reading goes on at the first one after it (not only at
 *    line starts), and two stretches of damage never follow each other;
 *  - JS_TORN is the damage after the last whole record, JS_DAMAGED the
 *    damage before it;
 *  - taking the unkeyed format or not finds the same keyed records;
 *  - jrec_salvage_path of damage is NULL or a path without '"', '\\' or
 *    newline. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "journal/journal_i.h"
#include "fuzz_check.h"

static const unsigned char key[JOURNAL_KEY_LEN] = "aztfs fuzz_journal_read key 32 b";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The digest of the LEN bytes of TEXT in HEX_LEN lowercase hex digits
 * (OUT, HEX_LEN + 1 bytes): the keyed MAC for 32 digits, the unkeyed
 * SHA-256 for 16. */
static void digest(const char *text, size_t len, size_t hex_len, char *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;

    if (hex_len == JREC_MAC_HEX)
        HMAC(EVP_sha256(), key, sizeof(key), (const unsigned char *)text, len, md, &md_len);
    else
        SHA256((const unsigned char *)text, len, md);
    for (size_t i = 0; i < hex_len / 2; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* The lowercase hex digits that start D (AVAIL bytes). */
static size_t hex_len(const char *d, size_t avail)
{
    size_t n = 0;

    while (n < avail && ((d[n] >= '0' && d[n] <= '9') || (d[n] >= 'a' && d[n] <= 'f')))
        n++;
    return n;
}

/* Does a line of a record's form start at D (AVAIL bytes): exactly 32 or
 * 16 hex digits, a space, a JSON object as jrec_format writes it (compact:
 * '{"' opens it, or it is "{}"), a newline? Its length through the newline
 * (*h: its digits; *rec: the object, a new reference, when REC is not
 * NULL), or 0. */
static size_t form_at(const char *d, size_t avail, size_t *h, json_t **rec)
{
    const char *nl;
    json_t *o;

    *h = hex_len(d, avail);
    if ((*h != JREC_MAC_HEX && *h != JREC_OLD_HEX) || *h + 4 > avail || d[*h] != ' ' ||
        d[*h + 1] != '{' || (d[*h + 2] != '"' && (d[*h + 2] != '}' || d[*h + 3] != '\n')) ||
        !(nl = memchr(d + *h + 1, '\n', avail - *h - 1)))
        return 0;
    o = json_loadb(d + *h + 1, (size_t)(nl - d) - *h - 1, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return 0;
    }
    if (rec)
        *rec = o;
    else
        json_decref(o);
    return (size_t)(nl - d) + 1;
}

/* Does a record this journal takes start at D (AVAIL bytes): a line of a
 * record's form whose MAC matches, or (LEGACY) whose unkeyed digest does? */
static int verifies_at(const char *d, size_t avail, int legacy)
{
    char want[JREC_MAC_HEX + 1];
    size_t h, n = form_at(d, avail, &h, NULL);

    if (n == 0 || (h == JREC_OLD_HEX && !legacy))
        return 0;
    digest(d + h + 1, n - h - 2, h, want);
    return memcmp(want, d, h) == 0;
}

/* Check span SP of D (END bytes without its trailing zeros) against the
 * invariants above. LEGACY as scanned. */
static void check_span(const char *d, size_t end, const struct jspan *sp, int legacy)
{
    const char *s = d + sp->off;
    char want[JREC_MAC_HEX + 1];
    json_t *o = NULL;
    size_t h, n;
    int match;

    if (sp->kind == JS_DAMAGED || sp->kind == JS_TORN) {
        char *path = jrec_salvage_path(s, sp->len);

        FUZZ_CHECK(sp->rec == NULL, "damage at %zu has a record", sp->off);
        for (size_t q = sp->off; q < sp->off + sp->len; q++)
            FUZZ_CHECK(!verifies_at(d + q, end - q, legacy),
                       "a record that verifies at %zu inside damage at %zu", q, sp->off);
        FUZZ_CHECK(!path || (path[0] && !strpbrk(path, "\"\\\n") && strlen(path) <= 4096),
                   "salvaged path '%s'", path);
        free(path);
        return;
    }
    n = form_at(s, sp->len, &h, &o);
    FUZZ_CHECK(n == sp->len,
               "span at %zu (kind %d, %zu bytes) is not one line of a record's "
               "form (%zu)",
               sp->off, (int)sp->kind, sp->len, n);
    digest(s + h + 1, sp->len - h - 2, h, want);
    match = memcmp(want, s, h) == 0;
    if (sp->kind == JS_FOREIGN) {
        FUZZ_CHECK(sp->rec == NULL, "foreign record at %zu kept", sp->off);
        FUZZ_CHECK(!match || (h == JREC_OLD_HEX && !legacy), "foreign record at %zu verifies",
                   sp->off);
    } else {
        FUZZ_CHECK(match, "record at %zu does not verify", sp->off);
        FUZZ_CHECK(sp->kind == (h == JREC_MAC_HEX ? JS_RECORD : JS_LEGACY) &&
                       (sp->kind == JS_RECORD || legacy),
                   "record at %zu: kind %d, %zu digits, "
                   "legacy %d",
                   sp->off, (int)sp->kind, h, legacy);
        FUZZ_CHECK(sp->rec && json_equal(sp->rec, o), "record at %zu is not its JSON", sp->off);
    }
    json_decref(o);
}

/* Scan the LEN bytes of D with LEGACY into *S and check it. Returns 0, or
 * -ENOMEM (nothing checked). */
static int scan_checked(const char *d, size_t len, int legacy, struct jscan *s)
{
    size_t end = len, at = 0, last_rec = 0;
    int rc = jrec_scan(d, len, key, legacy, s);

    if (rc < 0) {
        FUZZ_CHECK(rc == -ENOMEM && s->n == 0 && !s->spans, "jrec_scan: %d", rc);
        return rc;
    }
    while (end > 0 && d[end - 1] == '\0')
        end--;
    for (size_t i = 0; i < s->n; i++) {
        const struct jspan *sp = &s->spans[i];

        FUZZ_CHECK(sp->off == at && sp->len > 0 && sp->off + sp->len <= end,
                   "span %zu: [%zu, +%zu) after %zu, end %zu", i, sp->off, sp->len, at, end);
        check_span(d, end, sp, legacy);
        if (sp->kind == JS_RECORD || sp->kind == JS_LEGACY)
            last_rec = sp->off + sp->len;
        if (i > 0 && (sp->kind == JS_DAMAGED || sp->kind == JS_TORN))
            FUZZ_CHECK(s->spans[i - 1].kind != JS_DAMAGED && s->spans[i - 1].kind != JS_TORN,
                       "two stretches of damage at %zu", sp->off);
        at = sp->off + sp->len;
    }
    FUZZ_CHECK(at == end, "the spans end at %zu, the input at %zu", at, end);
    for (size_t i = 0; i < s->n; i++)
        FUZZ_CHECK(s->spans[i].kind != (s->spans[i].off >= last_rec ? JS_DAMAGED : JS_TORN),
                   "damage at %zu is kind %d, the last record ends at %zu", s->spans[i].off,
                   (int)s->spans[i].kind, last_rec);
    return 0;
}

/* The spans of kind JS_RECORD of S, from the I-th on: the index of the
 * next one, or S->n. */
static size_t next_record(const struct jscan *s, size_t i)
{
    while (i < s->n && s->spans[i].kind != JS_RECORD)
        i++;
    return i;
}

/* Scan D both ways and compare: the same records (JS_RECORD spans) are
 * found whether the unkeyed format is taken or not. */
static void scan_both(const char *d, size_t len)
{
    struct jscan a, b;

    if (scan_checked(d, len, 0, &a) < 0)
        return;
    if (scan_checked(d, len, 1, &b) == 0) {
        size_t i = next_record(&a, 0), k = next_record(&b, 0);

        for (; i < a.n && k < b.n; i = next_record(&a, i + 1), k = next_record(&b, k + 1))
            FUZZ_CHECK(a.spans[i].off == b.spans[k].off && a.spans[i].len == b.spans[k].len,
                       "a record at %zu without the unkeyed format, at %zu with", a.spans[i].off,
                       b.spans[k].off);
        FUZZ_CHECK(i == a.n && k == b.n, "more records %s the unkeyed format",
                   i < a.n ? "without" : "with");
        jrec_scan_free(&b);
    }
    jrec_scan_free(&a);
}

/* D (LEN bytes, a copy) with every line of a record's form given the MAC
 * (32 digits) or the unkeyed digest (16) of its JSON bytes. */
static void sign_lines(char *d, size_t len)
{
    size_t at = 0;

    while (at < len) {
        char *nl = memchr(d + at, '\n', len - at);
        size_t line = nl ? (size_t)(nl - (d + at)) : len - at, h = hex_len(d + at, line);
        char hex[JREC_MAC_HEX + 1];

        if (nl && (h == JREC_MAC_HEX || h == JREC_OLD_HEX) && line > h && d[at + h] == ' ') {
            digest(d + at + h + 1, line - h - 1, h, hex);
            memcpy(d + at, hex, h);
        }
        at += line + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size ? size : 1);

    scan_both((const char *)data, size);
    if (copy) {
        memcpy(copy, data, size);
        sign_lines(copy, size);
        scan_both(copy, size);
        free(copy);
    }
    return 0;
}

/* fuzz_render_text.c - libFuzzer target: entity_render_line_text and
 * entity_render_text (entity/textline.c), an export's and a listing's
 * rendering of an entity from its text, against json_loadb then
 * entity_render_line or entity_render_digest, which they stand in for.
 * Whatever the input, both must append the same line (make the same file
 * text, digest and system properties), or both fail with the same code,
 * property and reason; aborts otherwise. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "entity/entity.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* entity_render_text of TEXT against WIRE (its tree; NULL: not JSON)
 * rendered by entity_render_digest: abort when they part. */
static void file_agree(const char *text, size_t size, const json_t *wire)
{
    unsigned char da[ENTITY_DIGEST_LEN] = { 0 }, db[ENTITY_DIGEST_LEN] = { 0 };
    struct entity_error ea, eb;
    struct entity_keys k;
    char *fa = NULL, *fb = NULL;
    size_t la = 0, lb = 0;
    int ra, rb = -EINVAL, ha = 0, hb = 0, same;

    memset(&eb, 0, sizeof(eb));
    ra = entity_render_text(text, size, &fa, &la, da, &ha, &k, &ea);
    if (wire)
        rb = entity_render_digest(wire, &fb, &lb, db, &hb, &eb);
    same = ra == rb && la == lb && (!la || memcmp(fa, fb, la) == 0) && ha == hb &&
        memcmp(da, db, sizeof(da)) == 0 && (!wire || strcmp(ea.text, eb.text) == 0) &&
        same_str(k.pk, wire ? entity_wire_sys(wire, ENTITY_PK) : NULL) &&
        same_str(k.rk, wire ? entity_wire_sys(wire, ENTITY_RK) : NULL) &&
        same_str(k.ts, wire ? entity_wire_sys(wire, ENTITY_TIMESTAMP) : NULL) &&
        same_str(k.etag, wire ? entity_wire_sys(wire, ENTITY_ETAG) : NULL);
    if (!same) {
        fprintf(stderr, "fuzz_render_text: file: text %d '%s' / tree %d '%s'\n", ra, ea.text, rb,
                eb.text);
        abort();
    }
    free(fa);
    free(fb);
    free(k.block);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct buf a = BUF_INIT(1 << 24), b = BUF_INIT(1 << 24);
    struct entity_error ea, eb;
    json_error_t jerr;
    json_t *wire = json_loadb(text, size, 0, &jerr);
    int ra, rb;

    memset(&eb, 0, sizeof(eb));
    ra = entity_render_line_text(text, size, &a, &ea);
    if (wire) {
        rb = entity_render_line(wire, &b, &eb);
    } else {
        rb = -EINVAL;
        snprintf(eb.text, sizeof(eb.text), "the entity is not JSON: %s", jerr.text);
    }
    if (ra != rb || a.len != b.len || (a.len && memcmp(a.ptr, b.ptr, a.len) != 0) ||
        strcmp(ea.text, eb.text) != 0 || strcmp(ea.property, eb.property) != 0) {
        fprintf(stderr, "fuzz_render_text: text %d '%s' / tree %d '%s'\n", ra, ea.text, rb,
                eb.text);
        abort();
    }
    file_agree(text, size, wire);
    json_decref(wire);
    buf_free(&a);
    buf_free(&b);
    return 0;
}

/* fuzz_render_text.c - libFuzzer target: entity_render_line_text
 * (entity/textline.c), an export's rendering of an entity from its text,
 * against json_loadb then entity_render_line, which it stands in for.
 * Whatever the input, both must append the same line, or both fail with
 * the same code, property and reason; aborts otherwise. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "entity/entity.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    json_decref(wire);
    buf_free(&a);
    buf_free(&b);
    return 0;
}

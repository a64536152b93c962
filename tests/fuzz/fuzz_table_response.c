/* fuzz_table_response.c - libFuzzer target for a whole Query Entities page.
 * The page and batch parsers in src/table.c are static and need a network
 * round trip, so this walks a page the way the listing code sees it:
 * json_loadb(body, 0) (table.c's flags), then its "value" array, and renders
 * every element, with the render/parse/render round trip of fuzz_common.h on
 * each entity that renders. Must not crash or leak whatever the page holds. */
#include <stdint.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *page = json_loadb((const char *)data, size, 0, NULL), *value, *e;
    size_t i;

    if (!page)
        return 0;
    value = json_object_get(page, "value");
    if (json_is_array(value)) {
        json_array_foreach(value, i, e)
            fuzz_render_roundtrip(e);
    } else if (value) {
        /* Not an array: render must refuse it or treat it as one entity. */
        fuzz_render_roundtrip(value);
    }
    /* odata.metadata and friends are ignored; the page itself is not an
     * entity but must not crash the renderer either. */
    fuzz_render_roundtrip(page);
    json_decref(page);
    return 0;
}

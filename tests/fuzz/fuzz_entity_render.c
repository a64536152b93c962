/* fuzz_entity_render.c - libFuzzer target: arbitrary bytes -> json_loadb (as
 * table/crud.c loads service responses) -> entity_render; when rendering succeeds,
 * entity_parse of the text must succeed and re-render to the same bytes
 * (see fuzz_common.h). */
#include <stdint.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *wire = json_loadb((const char *)data, size, 0, NULL);

    if (!wire)
        return 0;
    fuzz_render_roundtrip(wire);
    json_decref(wire);
    return 0;
}

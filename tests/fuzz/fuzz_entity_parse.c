/* fuzz_entity_parse.c - libFuzzer target: arbitrary text -> entity_parse.
 * Must not crash or leak. On success the wire object must be an object
 * without PartitionKey/RowKey/Timestamp, every annotation must name a present
 * property, and rendering it (keys added back) must succeed; on failure the
 * outputs must be cleared and the error must be a documented one. */
#include <stdint.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *wire = (json_t *)1, *v;
    char *pk = (char *)1, *rk = (char *)1, *text = NULL;
    struct entity_error err;
    const char *key;
    size_t len;
    int rc;

    rc = entity_parse((const char *)data, size, &wire, &pk, &rk, &err);
    if (rc < 0) {
        FUZZ_CHECK(rc == -EINVAL || rc == -EFBIG || rc == -ENOMEM, "rc %d", rc);
        FUZZ_CHECK(wire == NULL && pk == NULL && rk == NULL, "outputs not cleared");
        FUZZ_CHECK(memchr(err.text, '\0', sizeof(err.text)) != NULL &&
                       memchr(err.property, '\0', sizeof(err.property)) != NULL,
                   "error strings not terminated");
        return 0;
    }
    FUZZ_CHECK(json_is_object(wire), "wire is not an object");
    FUZZ_CHECK(!json_object_get(wire, "PartitionKey") && !json_object_get(wire, "RowKey") &&
                   !json_object_get(wire, "Timestamp"),
               "system property kept");
    FUZZ_CHECK(json_object_size(wire) <= 2 * ENTITY_MAX_PROPERTIES, "too many members");
    json_object_foreach (wire, key, v) {
        const char *at = strstr(key, "@odata.type");

        FUZZ_CHECK(strncmp(key, "odata.", 6) != 0, "odata member kept: %s", key);
        if (at) {
            char *prop = strndup(key, (size_t)(at - key));

            FUZZ_CHECK(prop && json_object_get(wire, prop) != NULL,
                       "annotation %s without its property", key);
            free(prop);
        } else {
            FUZZ_CHECK(!json_is_object(v) && !json_is_array(v) && !json_is_null(v),
                       "property %s has a nested/null value", key);
        }
    }
    /* What entity_parse accepts must be renderable (what a write sends is
     * what a later read shows). */
    {
        json_t *copy = json_deep_copy(wire);

        if (copy && json_object_set_new(copy, "PartitionKey", json_string(pk ? pk : "p")) == 0 &&
            json_object_set_new(copy, "RowKey", json_string(rk ? rk : "r")) == 0) {
            rc = entity_render(copy, &text, &len, &err);
            FUZZ_CHECK(rc == 0 || rc == -ENOMEM,
                       "accepted entity does not render (rc %d, property '%s': %s)", rc,
                       err.property, err.text);
            free(text);
        }
        json_decref(copy);
    }
    free(pk);
    free(rk);
    json_decref(wire);
    return 0;
}

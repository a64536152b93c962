/* test_check.c - src/entity/check.c: Edm type names and an entity's limits (the service's). */
#include <errno.h>
#include <string.h>

#include "entity/entity.h"
#include "entity_util.h"
#include "tap.h"

static void test_type_names(void)
{
    enum edm_type t = EDM_STRING;

    is_str(edm_type_name(EDM_INT64), "Edm.Int64", "edm_type_name(Int64)");
    is_str(edm_type_name(EDM_BINARY), "Edm.Binary", "edm_type_name(Binary)");
    ok(edm_type_parse("Edm.Guid", &t) == 0 && t == EDM_GUID, "edm_type_parse(Edm.Guid)");
    is_int(edm_type_parse("edm.guid", &t), -EINVAL, "edm_type_parse is case-sensitive");
    is_int(edm_type_parse("Edm.Single", &t), -EINVAL, "edm_type_parse rejects unknown types");
}

/* entity_check_limits: keys, the service's count of an entity's size, and
 * a mount's own limits (another service's) taken from the struct. */
static void test_limits(void)
{
    const char *text = "{\"a\":\"xyz\",\"b\":5,\"c@odata.type\":\"Edm.Int64\",\"c\":\"1\","
                       "\"d\":true,\"g@odata.type\":\"Edm.Guid\",\"g\":"
                       "\"00000000-0000-4000-8000-000000000000\",\"bin@odata.type\":"
                       "\"Edm.Binary\",\"bin\":\"AAE=\",\"z\":null}";
    struct entity_limits lim = entity_limits_storage;
    struct entity_error err;
    char key[600];
    int rc;
    json_t *w = parse_text(text, &rc, &err);

    is_int(rc, 0, "limits: the entity parses");
    is_int(entity_check_limits(&lim, w, "p", "r", &err), 0, "limits: within Storage's");
    /* 4 + keys 2 x 2 + a 8+2+3x2+4 + b 8+2+4 + c 8+2+8 + d 8+2+1 + g 8+2+16 + bin 8+6+2+4 */
    lim.entity_bytes = 117;
    is_int(entity_check_limits(&lim, w, "p", "r", &err), 0, "limits: 117 bytes as counted");
    lim.entity_bytes = 116;
    is_int(entity_check_limits(&lim, w, "p", "r", &err), -EFBIG, "limits: one byte more: EFBIG");
    ok(strstr(err.text, "the entity is 117 bytes as the service counts it") != NULL,
       "  the reason: %s", err.text);
    lim = entity_limits_storage;
    memset(key, 'k', 512);
    key[512] = '\0';
    is_int(entity_check_limits(&lim, w, key, "r", &err), 0, "limits: a 512-character key (1 KiB)");
    strcpy(key + 510, "\xC3\xA9"); /* 511 characters, one of 2 bytes in UTF-8: 1022 in UTF-16 */
    is_int(entity_check_limits(&lim, w, "p", key, &err), 0, "limits: keys counted in UTF-16");
    strcpy(key + 510, "kk\xF0\x9F\x98\x80"); /* an emoji: 2 UTF-16 units */
    is_int(entity_check_limits(&lim, w, "p", key, &err), -EINVAL,
           "limits: 514 UTF-16 units: EINVAL");
    ok(strstr(err.text, "the RowKey is 1028 bytes in UTF-16") && !strcmp(err.property, "RowKey"),
       "  the reason: %s", err.text);
    is_int(entity_check_limits(&lim, w, "a#b", "r", &err), -EINVAL, "limits: '#' in a key");
    ok(strstr(err.text, "a key the service refuses") != NULL, "  the reason: %s", err.text);
    lim.key_bytes = 255; /* Cosmos DB's RowKey, say */
    memset(key, 'k', 128);
    key[128] = '\0';
    is_int(entity_check_limits(&lim, w, "p", key, &err), -EINVAL, "limits: the struct's own");
    lim = entity_limits_storage;
    lim.string_bytes = 4;
    is_int(entity_check_limits(&lim, w, "p", "r", &err), -EFBIG, "limits: a String over its");
    lim = entity_limits_storage;
    lim.properties = 5;
    is_int(entity_check_limits(&lim, w, "p", "r", &err), -EINVAL, "limits: 6 properties over 5");
    json_decref(w);
}

int main(void)
{
    test_type_names();
    test_limits();
    return done_testing();
}

/* fuzz_batch_response.c - libFuzzer target for the $batch response parsers
 * (table_batch_outcome, table_batch_etag).
 * The multipart body of an entity group transaction answer is scanned for
 * the first failed operation and its JSON error. Must not crash, read past
 * the input, or leak, and must always leave the status text terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "table/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = malloc(size + 1);
    struct az_status st;
    int rc;

    if (!body)
        return 0;
    memcpy(body, data, size);
    body[size] = '\0';
    memset(&st, 0, sizeof(st));
    rc = table_batch_outcome(body, &st);
    if (rc == 0 && st.http_status != 0)
        abort(); /* success must not report a status */
    if (strlen(st.code) >= sizeof(st.code) || strlen(st.message) >= sizeof(st.message))
        abort();
    for (size_t i = 0; i < 3; i++) { /* the ETags of the first operations */
        char *etag = NULL;

        if (table_batch_etag(body, i, &etag) == 0 && etag && strlen(etag) > size)
            abort(); /* an ETag is a piece of the body */
        free(etag);
    }
    free(body);
    return 0;
}

/* fuzz_table_response.c - libFuzzer target for a Query response: header lines and page body.
 * The input is a raw response head (header lines, one per line) and, after
 * the first empty line, the body. Header lines go through http_header_line
 * with the table layer's capture list (what keeps ETag, Retry-After, the
 * error code and the continuation tokens), the body through
 * table_parse_page (the parser every listing uses), and every entity of the
 * page through the render/parse/render round trip of fuzz_common.h.
 * Must not crash or leak whatever the response holds. */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "http/http.h"
#include "table/table.h"
#include "table/table_i.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_page(void *ctx, json_t *value)
{
    size_t i;
    json_t *e;

    (void)ctx;
    json_array_foreach (value, i, e)
        fuzz_render_roundtrip(e);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size, *body = p;
    struct http_response resp;
    struct az_status st;

    memset(&resp, 0, sizeof(resp));
    memset(&st, 0, sizeof(st));
    /* header lines up to the first empty line; no head at all when the
     * input starts with '{' (a bare page, as in the seed corpus) */
    while (body < end && *body != '{') {
        const char *nl = memchr(body, '\n', (size_t)(end - body));
        size_t n = nl ? (size_t)(nl - body) + 1 : (size_t)(end - body);

        if (n <= 2 && (body[0] == '\n' || body[0] == '\r')) {
            body += n;
            break;
        }
        http_header_line(&resp, table_capture, body, n);
        body += n;
    }
    table_parse_page(body, (size_t)(end - body), on_page, NULL, &st);
    http_response_clear(&resp);
    return 0;
}

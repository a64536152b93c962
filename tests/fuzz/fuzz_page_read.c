/* fuzz_page_read.c - libFuzzer target: page_read (table/pageread.c), the
 * listing's reader of a Query Entities page, against json_loadb, which it
 * stands in for. Whatever the input, both must give the same tree (members
 * in the same order) or both fail with the same message; aborts otherwise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/table_i.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t e1, e2;
    json_t *a = page_read((const char *)data, size, &e1);
    json_t *b = json_loadb((const char *)data, size, 0, &e2);
    char *da = a ? json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    char *db = b ? json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

    if (!a != !b || (!a && strcmp(e1.text, e2.text) != 0) ||
        (a && (!json_equal(a, b) || !da || !db || strcmp(da, db) != 0))) {
        fprintf(stderr, "fuzz_page_read: page_read and json_loadb part (%s / %s)\n",
                a ? "read" : e1.text, b ? "read" : e2.text);
        abort();
    }
    free(da);
    free(db);
    json_decref(a);
    json_decref(b);
    return 0;
}

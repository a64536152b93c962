/* fuzz_common.h - checks shared by the entity fuzz targets (tests/fuzz). */
#ifndef AZTFS_FUZZ_COMMON_H
#define AZTFS_FUZZ_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "entity/entity.h"
#include "util/util.h"
#include "fuzz_check.h"

/* Render WIRE (an entity as the service could send it). When that succeeds,
 * the canonical text must parse back (entity_parse), and the parsed wire
 * object with PartitionKey/RowKey (from entity_parse's key outputs) and the
 * original Timestamp added back must render to the very same bytes.
 *
 * entity_parse is stricter than entity_render (it enforces the limits the
 * service enforces on writes: property names, 252 properties, 64 KiB
 * strings, value syntax of Int64/Guid/DateTime/Binary). A rendered text that
 * entity_parse refuses is therefore accepted here only when the input breaks
 * one of those service rules; see fuzz_parse_refusal_ok(). */
static int fuzz_parse_refusal_ok(int rc, const struct entity_error *err)
{
    /* -EFBIG: over a size limit (1 MiB entity, 64 KiB String/Binary). */
    if (rc == -EFBIG)
        return 1;
    /* -EINVAL naming a property: that property's name or value breaks a
     * service rule the renderer does not check (the service never sends
     * such a value). -EINVAL without a property ("more than 252
     * properties") likewise. A refusal of the whole text as invalid JSON
     * is never acceptable: the renderer must write valid JSON. */
    if (rc == -EINVAL && strncmp(err->text, "invalid JSON", 12) != 0)
        return 1;
    return 0;
}

/* WIRE rendered as one NDJSON line (entity_render_line) is its file text
 * TEXT (LEN bytes) laid out on one line: the same JSON, one '\n' at its
 * end and none before, and exactly the file's layout whitespace less (of
 * M members: "{\n" and "\n}\n" one byte each, the first member's indent
 * two, each later ",\n  " three, each ": " one: LEN - 4M - 1 bytes). */
static void fuzz_render_line(const json_t *wire, const char *text, size_t len)
{
    struct buf line = BUF_INIT(64 * 1024 * 1024);
    json_t *a = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL), *b = NULL;
    struct entity_error err;
    int rc = entity_render_line(wire, &line, &err);

    FUZZ_CHECK(rc == 0 || rc == -ENOMEM, "entity_render_line rc %d where entity_render took it",
               rc);
    if (rc == 0 && a) {
        size_t m = json_object_size(a);

        FUZZ_CHECK(line.len >= 2 && line.ptr[line.len - 1] == '\n' &&
                       memchr(line.ptr, '\n', line.len - 1) == NULL,
                   "the line has a newline before its end:\n%s", line.ptr);
        FUZZ_CHECK(line.len + 4 * m + 1 == len, "line of %zu bytes for a text of %zu, %zu members",
                   line.len, len, m);
        b = json_loadb(line.ptr, line.len, JSON_REJECT_DUPLICATES, NULL);
        FUZZ_CHECK(b && json_equal(a, b), "the line is not the text's JSON:\n%s\n%s", text,
                   line.ptr);
    }
    json_decref(a);
    json_decref(b);
    buf_free(&line);
}

static void fuzz_render_roundtrip(const json_t *wire)
{
    char *text = NULL, *text2 = NULL, *pk = NULL, *rk = NULL;
    size_t len = 0, len2 = 0;
    json_t *back = NULL, *ts;
    struct entity_error err;
    int rc;

    rc = entity_render(wire, &text, &len, &err);
    if (rc < 0) {
        FUZZ_CHECK(rc == -EINVAL || rc == -ENOMEM, "entity_render rc %d", rc);
        FUZZ_CHECK(text == NULL, "output left on failure");
        return;
    }
    FUZZ_CHECK(text != NULL && strlen(text) == len,
               "render output length %zu vs strlen %zu (embedded NUL?)", len,
               text ? strlen(text) : 0);
    FUZZ_CHECK(len >= 3 && text[0] == '{' && text[len - 1] == '\n' && text[len - 2] == '}',
               "render output is not one object with a trailing newline:\n%s", text);

    fuzz_render_line(wire, text, len);

    /* Deterministic: rendering again gives the same bytes. */
    rc = entity_render(wire, &text2, &len2, NULL);
    FUZZ_CHECK(rc == 0 && len2 == len && memcmp(text, text2, len) == 0, "second render differs");
    free(text2);
    text2 = NULL;

    rc = entity_parse(text, len, &back, &pk, &rk, &err);
    if (rc < 0) {
        FUZZ_CHECK(rc != -ENOMEM ? fuzz_parse_refusal_ok(rc, &err) : 1,
                   "rendered text does not parse back (rc %d, line %d, property '%s': %s):\n%s", rc,
                   err.line, err.property, err.text, text);
        goto out;
    }
    FUZZ_CHECK(pk && rk, "entity_parse lost the keys");
    FUZZ_CHECK(strcmp(pk, json_string_value(json_object_get(wire, "PartitionKey"))) == 0 &&
                   strcmp(rk, json_string_value(json_object_get(wire, "RowKey"))) == 0,
               "PartitionKey/RowKey changed in the round trip");
    FUZZ_CHECK(json_object_get(back, "Timestamp") == NULL &&
                   json_object_get(back, "PartitionKey") == NULL,
               "parse kept a system property");
    if (json_object_set_new(back, "PartitionKey", json_string(pk)) != 0 ||
        json_object_set_new(back, "RowKey", json_string(rk)) != 0)
        goto out; /* ENOMEM */
    ts = json_object_get(wire, "Timestamp");
    if (json_is_string(ts) && json_object_set_new(back, "Timestamp", json_deep_copy(ts)) != 0)
        goto out;
    rc = entity_render(back, &text2, &len2, &err);
    if (rc == -ENOMEM)
        goto out;
    FUZZ_CHECK(rc == 0, "parsed entity does not render (rc %d, property '%s': %s):\n%s", rc,
               err.property, err.text, text);
    FUZZ_CHECK(len2 == len && memcmp(text, text2, len) == 0,
               "render -> parse -> render is not the identity:\n--- first\n%s--- second\n%s", text,
               text2);
out:
    free(text2);
    free(pk);
    free(rk);
    json_decref(back);
    free(text);
}

#endif

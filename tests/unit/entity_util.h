/* entity_util.h - helpers of the entity unit tests (test_parse.c,
 * test_render.c, test_number.c, test_edmtime.c, test_check.c): wire JSON
 * text rendered to file text, one value rendered and its line cut out,
 * file text parsed, a parse expected to fail, and the render -> parse ->
 * render round trip. */
#ifndef AZTFS_TEST_ENTITY_UTIL_H
#define AZTFS_TEST_ENTITY_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "entity/entity.h"
#include "tap.h"

/* Render the wire JSON text WIRE_TEXT; returns the malloc'd file text or NULL. */
static inline char *render_text(const char *wire_text, int *rc_out, struct entity_error *err)
{
    json_error_t jerr;
    json_t *w = json_loads(wire_text, JSON_ALLOW_NUL, &jerr);
    char *out = NULL;
    size_t len = 0;
    int rc;

    if (!w) {
        printf("# bad test JSON: %s\n", jerr.text);
        *rc_out = -999;
        return NULL;
    }
    rc = entity_render(w, &out, &len, err);
    if (rc == 0 && strlen(out) != len)
        rc = -998; /* length mismatch (no NUL in file text expected here) */
    *rc_out = rc;
    json_decref(w);
    return out;
}

/* Parse TEXT; returns the wire object (caller decrefs) or NULL; *rc_out set. */
static inline json_t *parse_text(const char *text, int *rc_out, struct entity_error *err)
{
    json_t *w = NULL;

    *rc_out = entity_parse(text, strlen(text), &w, NULL, NULL, err);
    return w;
}

/* Render {"PartitionKey":"p","RowKey":"r","v":VALUE[,"v@odata.type":TYPE]}
 * and return the line(s) after RowKey, without indentation, joined by '|'. */
static inline char *render_value(const char *value_json, const char *type)
{
    char wire[512], *text, *start, *end, *out, *o;
    struct entity_error err;
    int rc;

    if (type)
        snprintf(wire, sizeof(wire),
                 "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":%s,"
                 "\"v@odata.type\":\"%s\"}",
                 value_json, type);
    else
        snprintf(wire, sizeof(wire), "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":%s}",
                 value_json);
    text = render_text(wire, &rc, &err);
    if (rc != 0) {
        printf("# render failed (%d): %s\n", rc, rc == -999 ? "" : err.text);
        free(text);
        return NULL;
    }
    start = strstr(text, "\"RowKey\": \"r\",\n");
    if (!start) {
        free(text);
        return NULL;
    }
    start += strlen("\"RowKey\": \"r\",\n");
    end = strstr(start, "\n}\n");
    out = o = malloc(strlen(start) + 1);
    for (const char *s = start; s < end; s++) {
        if (*s == ',' && s[1] == '\n')
            continue;
        if (*s == '\n')
            *o++ = '|';
        else if (!(s[0] == ' ' && (s == start || s[-1] == '\n' || s[-1] == ' ')))
            *o++ = *s;
    }
    *o = '\0';
    free(text);
    return out;
}

/* Expect TEXT to fail with RC; optionally check the line and a substring of the reason. */
static inline void parse_fails(const char *text, int want_rc, int want_line, const char *want_text,
                               const char *label)
{
    struct entity_error err;
    int rc;
    json_t *w = parse_text(text, &rc, &err);

    is_int(rc, want_rc, "parse rejects: %s", label);
    ok(w == NULL, "  no object (%s, line %d)", err.text, err.line);
    if (want_line >= 0)
        is_int(err.line, want_line, "  error line for %s", label);
    if (want_text)
        ok(strstr(err.text, want_text) != NULL, "  reason mentions '%s'", want_text);
    json_decref(w);
}

/* Render WIRE, parse the text, put the keys and Timestamp back, render
 * again: the two texts must be identical. Returns 1 on success. */
static inline int roundtrips(json_t *wire, struct entity_error *err)
{
    char *t1 = NULL, *t2 = NULL;
    size_t l1, l2;
    json_t *back = NULL;
    int rc;

    rc = entity_render(wire, &t1, &l1, err);
    if (rc == 0)
        rc = entity_parse(t1, l1, &back, NULL, NULL, err);
    if (rc == 0) {
        json_object_set(back, "PartitionKey", json_object_get(wire, "PartitionKey"));
        json_object_set(back, "RowKey", json_object_get(wire, "RowKey"));
        if (json_object_get(wire, "Timestamp"))
            json_object_set(back, "Timestamp", json_object_get(wire, "Timestamp"));
        rc = entity_render(back, &t2, &l2, err);
    }
    if (rc == 0 && (l1 != l2 || memcmp(t1, t2, l1) != 0)) {
        printf("# first:  %s# second: %s", t1, t2);
        rc = -1;
    }
    free(t1);
    free(t2);
    json_decref(back);
    return rc == 0;
}

#endif

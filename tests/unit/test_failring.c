/* test_failring.c - unit tests for the ring of recent failures and env_scrub (TAP). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/util.h"
#include "tap.h"

static json_t *parsed(struct failring *r, size_t max)
{
    char *text = failring_json(r, max);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;

    free(text);
    return j;
}

static void test_empty_and_fields(void)
{
    struct failring *r = failring_new();
    struct failure f = {
        "save", "/t/p/a.json", ESTALE, 412, "UpdateConditionNotSatisfied", "changed since read"
    };
    json_t *j, *e;

    j = parsed(r, 65536);
    is_int(json_integer_value(json_object_get(j, "failures")), 0, "empty: 0 failures");
    is_int(json_array_size(json_object_get(j, "recent")), 0, "empty: no entries");
    json_decref(j);
    failring_add(r, &f);
    f = (struct failure){ "list", "/t", EIO, 0, NULL, NULL };
    failring_add(r, &f);
    j = parsed(r, 65536);
    e = json_array_get(json_object_get(j, "recent"), 0);
    is_str(json_string_value(json_object_get(e, "op")), "save", "op");
    is_str(json_string_value(json_object_get(e, "path")), "/t/p/a.json", "path");
    is_int(json_integer_value(json_object_get(e, "errno")), ESTALE, "errno");
    is_str(json_string_value(json_object_get(e, "error")), "ESTALE", "errno's name");
    is_int(json_integer_value(json_object_get(e, "http_status")), 412, "http_status");
    is_str(json_string_value(json_object_get(e, "code")), "UpdateConditionNotSatisfied", "code");
    ok(strlen(json_string_value(json_object_get(e, "time"))) == 20, "time, UTC to the second");
    e = json_array_get(json_object_get(j, "recent"), 1);
    ok(!json_object_get(e, "http_status") && !json_object_get(e, "code"),
       "no http_status or code without an answer");
    is_str(json_string_value(json_object_get(e, "message")), strerror(EIO),
           "message defaults to strerror");
    is_int(failring_count(r), 2, "count");
    json_decref(j);
    failring_add(NULL, &f); /* no ring: nothing happens */
    failring_free(r);
}

static void test_bounded(void)
{
    struct failring *r = failring_new();
    char path[32], *text;
    json_t *j, *recent;

    for (int i = 0; i < FAILRING_SIZE + 8; i++) {
        snprintf(path, sizeof(path), "/t/p/%d.json", i);
        failring_add(r, &(struct failure){ "save", path, EINVAL, 0, NULL, "bad" });
    }
    j = parsed(r, 65536);
    recent = json_object_get(j, "recent");
    is_int(json_integer_value(json_object_get(j, "failures")), FAILRING_SIZE + 8, "all counted");
    is_int(json_array_size(recent), FAILRING_SIZE, "only the last FAILRING_SIZE kept");
    is_str(json_string_value(json_object_get(json_array_get(recent, 0), "path")), "/t/p/8.json",
           "oldest kept first");
    json_decref(j);
    text = failring_json(r, 600);
    ok(text && strlen(text) <= 600, "max_bytes: the oldest are left out to fit");
    j = text ? json_loads(text, 0, NULL) : NULL;
    recent = json_object_get(j, "recent");
    ok(json_array_size(recent) > 0 && json_array_size(recent) < FAILRING_SIZE, "some, not all");
    is_str(json_string_value(
               json_object_get(json_array_get(recent, json_array_size(recent) - 1), "path")),
           "/t/p/39.json", "the newest kept");
    json_decref(j);
    free(text);
    ok(failring_json(r, 5) == NULL, "not even the empty list fits: NULL");
    failring_free(r);
}

static void test_escaped(void)
{
    struct failring *r = failring_new();
    char longpath[2000];
    json_t *j, *e;

    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[sizeof(longpath) - 1] = '\0';
    failring_add(r, &(struct failure){ "save", "/t/p/\xff\n.json", EINVAL, 0, NULL, "x" });
    failring_add(r, &(struct failure){ "save", longpath, EINVAL, 0, NULL, "x" });
    j = parsed(r, 65536);
    e = json_array_get(json_object_get(j, "recent"), 0);
    is_str(json_string_value(json_object_get(e, "path")), "/t/p/\\xff\\x0a.json",
           "path escaped as log lines are (valid UTF-8 for JSON)");
    e = json_array_get(json_object_get(j, "recent"), 1);
    ok(strlen(json_string_value(json_object_get(e, "path"))) < 512, "long path cut");
    json_decref(j);
    failring_free(r);
}

/* env_scrub: the variable is gone from environ, and its string wiped. */
static void test_env_scrub(void)
{
    char *v;

    setenv("AZTFS_TEST_SECRET", "s3cret", 1);
    setenv("AZTFS_TEST_OTHER", "kept", 1);
    v = getenv("AZTFS_TEST_SECRET");
    env_scrub("AZTFS_TEST_SECRET");
    ok(getenv("AZTFS_TEST_SECRET") == NULL, "env_scrub: unset");
    ok(v && v[0] == '\0', "env_scrub: the value wiped where it was");
    is_str(getenv("AZTFS_TEST_OTHER"), "kept", "env_scrub: others kept");
    env_scrub("AZTFS_TEST_NOT_SET");
    ok(1, "env_scrub of a variable not set");
}

int main(void)
{
    test_empty_and_fields();
    test_bounded();
    test_escaped();
    test_env_scrub();
    return done_testing();
}

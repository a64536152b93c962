/* test_profile.c - the service profile (table/profile.c): which service a
 * host or a setting names, each service's limits and rules, and what the
 * protocol sends differently for Cosmos DB for Table (a Merge as POST +
 * X-HTTP-Method, in $batch too; a $batch whose part says 429 sent again),
 * against the tiny server of httpd.h (TAP). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "auth/auth.h"
#include "table/table.h"
#include "table/table_i.h"
#include "tap.h"
#include "httpd.h"

static const struct table_profile *pick(const char *host, const char *service)
{
    const struct table_profile *p = NULL;

    return table_profile_pick(host, service, &p) == 0 ? p : NULL;
}

/* The host tells, and the setting (-o service=, Service=) wins over it. */
static void test_pick(void)
{
    const struct table_profile *p;
    struct account a = { 0 };
    char err[128];

    ok((p = pick("acct.table.core.windows.net", NULL)) && p->service == TABLE_STORAGE,
       "*.table.core.windows.net: storage");
    ok((p = pick("acct.table.cosmos.azure.com:443", NULL)) && p->service == TABLE_COSMOS,
       "*.table.cosmos.azure.com:443: cosmos (port aside)");
    ok((p = pick("ACCT.TABLE.COSMOSDB.AZURE.COM", NULL)) && p->service == TABLE_COSMOS,
       "the older *.table.cosmosdb.azure.com, any case: cosmos");
    ok((p = pick("cosmos.azure.com.example.org", NULL)) && p->service == TABLE_STORAGE,
       "a host that only holds the name: storage");
    ok((p = pick("127.0.0.1:10002", NULL)) && p->service == TABLE_STORAGE, "Azurite: storage");
    ok((p = pick("127.0.0.1:10002", "cosmos")) && p->service == TABLE_COSMOS,
       "service=cosmos over a host that does not tell");
    ok((p = pick("acct.table.cosmos.azure.com", "Storage")) && p->service == TABLE_STORAGE,
       "service=Storage wins over the host");
    ok(pick("127.0.0.1", "mongo") == NULL, "an unknown service: refused");
    ok((p = pick("acct.table.core.windows.net", NULL)) && p->sorted &&
           strcmp(p->scope, "https://storage.azure.com/.default") == 0 && !p->merge_tunneled,
       "storage: sorted, the storage scope, MERGE as a verb");
    ok((p = pick("a.table.cosmos.azure.com", NULL)) && !table_profile_sorted(p) &&
           strcmp(p->scope, "https://cosmos.azure.com/.default") == 0 && p->merge_tunneled &&
           p->throttle_status == 429,
       "cosmos: unsorted, the cosmos scope, MERGE tunneled, 429");

    is_int(connstr_parse("UseDevelopmentStorage=true;Service=cosmos", &a, err, sizeof(err)), 0,
           "a connection string may say Service=");
    ok((p = pick(a.host, a.service)) && p->service == TABLE_COSMOS, "Service=cosmos: cosmos");
    account_free(&a);
}

/* TABLE_ENTITY_FITS's answer for keys PK, RK and properties PROPS (a JSON
 * object text), with its reason in WHY. */
static int fits(const struct table_profile *p, const char *pk, const char *rk, const char *props,
                char *why)
{
    json_t *w = json_loads(props, 0, NULL);
    int rc = table_entity_fits(p, pk, rk, w, strlen(props), why, 200);

    json_decref(w);
    return rc;
}

static void test_limits(void)
{
    const struct table_profile *st = pick("a.table.core.windows.net", NULL);
    const struct table_profile *co = pick("a.table.cosmos.azure.com", NULL);
    char why[200] = "", rk256[257], k1025[1026], *big;
    json_t *w = json_object();
    size_t n = 0;

    memset(rk256, 'r', 256);
    rk256[256] = '\0';
    memset(k1025, 'k', 1025);
    k1025[1025] = '\0';
    is_int(fits(st, "", "", "{}", why), 0, "storage takes empty keys");
    is_int(fits(co, "p", "", "{}", why), -EINVAL, "cosmos refuses an empty RowKey");
    ok(strstr(why, "empty RowKey") != NULL, "named: %s", why);
    is_int(fits(co, "", "r", "{}", why), -EINVAL, "cosmos refuses an empty PartitionKey");
    is_int(fits(st, "p", rk256, "{}", why), 0, "storage takes a RowKey of 256 bytes");
    is_int(fits(co, "p", rk256, "{}", why), -EINVAL, "cosmos refuses a RowKey of 256 bytes");
    ok(strstr(why, "256 bytes, over the 255") != NULL, "named: %s", why);
    rk256[255] = '\0';
    is_int(fits(co, "p", rk256, "{}", why), 0, "cosmos takes one of 255");
    is_int(fits(st, "p", k1025, "{}", why), 0,
           "storage leaves a key's size to entity_check_limits (UTF-16 units)");
    {
        struct entity_error err;
        json_t *e = json_object();

        is_int(entity_check_limits(table_profile_entity_limits(st), e, "p", k1025, &err), -EINVAL,
               "which refuses a RowKey of 1025 characters on storage");
        is_int(entity_check_limits(table_profile_entity_limits(co), e, "p", k1025, &err), 0,
               "and leaves it to the bytes on cosmos");
        json_decref(e);
    }
    is_int(fits(co, k1025, "r", "{}", why), -EINVAL, "and both a PartitionKey of 1025");
    is_int(fits(st, "p", "r", "{\"id\":1,\"ResourceId\":\"x\"}", why), 0,
           "storage takes any property name");
    is_int(fits(co, "p", "r", "{\"A\":1,\"id\":1}", why), -EINVAL, "cosmos refuses 'id'");
    ok(strstr(why, "'id' is reserved") != NULL, "named: %s", why);
    is_int(fits(co, "p", "r", "{\"ResourceId\":\"x\"}", why), -EINVAL, "and 'ResourceId'");
    is_int(fits(co, "p", "r", "{\"Identity\":\"x\",\"etags\":1}", why), 0,
           "but not names that only begin so");

    /* 768,000 characters of strings, 1.5 MiB as the service counts them
     * (UTF-16): over storage's 1 MiB, within cosmos's 2 MB */
    while (n < 24) {
        char name[8];

        snprintf(name, sizeof(name), "P%02zu", n++);
        big = malloc(32001);
        memset(big, 'x', 32000);
        big[32000] = '\0';
        json_object_set_new(w, name, json_string(big));
        free(big);
    }
    {
        struct entity_error err;

        is_int(entity_check_limits(table_profile_entity_limits(st), w, "p", "r", &err), -EFBIG,
               "storage refuses an entity of 1.5 MiB (entity_check_limits)");
        ok(strstr(err.text, "1048576") != NULL, "named: %s", err.text);
        is_int(entity_check_limits(table_profile_entity_limits(co), w, "p", "r", &err), 0,
               "cosmos's limits take it");
    }
    is_int(table_entity_fits(co, "p", "r", w, 24 * 32000, why, sizeof(why)), 0, "cosmos takes it");
    json_decref(w);

    ok(table_name_problem(st, "orders2") == NULL && table_name_problem(co, "orders2") == NULL,
       "a plain name: both");
    ok(table_name_problem(st, "a-b") != NULL && table_name_problem(co, "a-b") == NULL,
       "'a-b': cosmos only");
    ok(table_name_problem(co, "a/b") != NULL && table_name_problem(co, "a?") != NULL &&
           table_name_problem(co, "a ") != NULL && table_name_problem(co, "") != NULL,
       "cosmos refuses '/', '?', a trailing space, the empty name");

    ok(table_filter_problem(st, "Timestamp ge datetime'2026-01-01T00:00:00Z'") == NULL,
       "storage filters on Timestamp");
    ok(table_filter_problem(co, "Timestamp ge datetime'2026-01-01T00:00:00Z'") != NULL,
       "cosmos: a filter on Timestamp is refused, saying why");
    ok(table_filter_problem(co, "(A eq 1) and (Timestamp gt datetime'2026-01-01T00:00:00Z')"),
       "wherever it stands");
    ok(table_filter_problem(co, "Name eq 'Timestamp' or MyTimestamp gt 1") == NULL,
       "a literal or a longer name is no Timestamp");
}

/* --- what is sent ----------------------------------------------------------- */

static struct logger quiet = { .level = LOG_LVL_QUIET };
static struct http_stats stats;
static char host[32];
static char heads[4][2048]; /* the heads of the last requests (httpd.lock) */
static char body[8192];     /* the body of the last one */
static int throttle;        /* $batch: answer the first this many with a 429 part */

/* A $batch answer of one changeset part of STATUS into OUT. */
static size_t batch_reply(char *out, size_t size, int status)
{
    char part[1024];

    snprintf(part, sizeof(part),
             "--batchresponse_x\r\nContent-Type: multipart/mixed; boundary=changesetresponse_y"
             "\r\n\r\n--changesetresponse_y\r\nContent-Type: application/http\r\n"
             "Content-Transfer-Encoding: binary\r\n\r\nHTTP/1.1 %d %s\r\n"
             "Content-Type: application/json\r\n%s\r\n%s\r\n--changesetresponse_y--\r\n"
             "--batchresponse_x--\r\n",
             status, status == 204 ? "No Content" : "Too Many Requests",
             status == 204 ? "ETag: W/\"datetime'2026-11-28T10%3A00%3A00.1234567Z'\"\r\n" : "",
             status == 204 ? "" :
                             "{\"odata.error\":{\"code\":\"TooManyRequests\",\"message\":{"
                             "\"value\":\"0:Request rate is large\"}}}");
    return httpd_response(out, size, 202,
                          "Content-Type: multipart/mixed; boundary=batchresponse_x\r\n", part, 0);
}

static size_t serve(const char *head, int n, char *out, size_t size, int *keep)
{
    (void)keep;
    snprintf(heads[(n - 1) % 4], sizeof(heads[0]), "%s", head);
    snprintf(body, sizeof(body), "%s", httpd.body ? httpd.body : "");
    if (strstr(head, "/$batch"))
        return batch_reply(out, size, n <= throttle ? 429 : 204);
    return httpd_response(out, size, 204,
                          "ETag: W/\"datetime'2026-11-28T10%3A00%3A00.1234567Z'\"\r\n", "", 0);
}

/* A client of the test server as SERVICE. */
static struct table_client *client(struct account *a, const char *service)
{
    static const struct http_config hc = { .connect_timeout_ms = 500,
                                           .request_timeout_ms = 2000,
                                           .max_retries = 3,
                                           .retry_base_ms = 2,
                                           .retry_max_ms = 4,
                                           .retry_deadline_ms = 2000 };
    struct table_client *tc = NULL;

    *a = (struct account){ .name = "devstoreaccount1",
                           .scheme = "http",
                           .host = host,
                           .base_path = "/devstoreaccount1",
                           .service = (char *)service };
    if (table_client_new(&tc, a, &hc, &quiet, &stats) != 0)
        abort();
    return tc;
}

/* A Merge: the MERGE verb to Storage; POST with X-HTTP-Method: MERGE to
 * Cosmos DB (which answers the verb with 405), as the SDKs send it. */
static void test_merge_form(void)
{
    struct account a;
    struct table_client *tc = client(&a, "storage");
    json_t *e = json_pack("{s:i}", "A", 1);
    struct az_status st;
    char *etag = NULL;
    struct table_batch_op op = { TB_MERGE, "r", e, "*", &etag };

    is_int(table_write_entity(tc, "t", "p", "r", e, TW_MERGE, "*", NULL, &st), 0,
           "storage: merged");
    ok(strncmp(heads[0], "MERGE /devstoreaccount1/t(PartitionKey='p',RowKey='r') ", 55) == 0 &&
           !strcasestr(heads[0], "X-HTTP-Method"),
       "storage: the MERGE verb");
    table_client_free(tc);

    tc = client(&a, "cosmos");
    httpd_reset();
    is_int(table_write_entity(tc, "t", "p", "r", e, TW_MERGE, "*", NULL, &st), 0, "cosmos: merged");
    ok(strncmp(heads[0], "POST /devstoreaccount1/t(PartitionKey='p',RowKey='r') ", 54) == 0,
       "cosmos: POST to the entity");
    ok(strcasestr(heads[0], "\r\nX-HTTP-Method: MERGE\r\n") && strcasestr(heads[0], "If-Match: *"),
       "with X-HTTP-Method: MERGE and If-Match");
    is_int(table_write_entity(tc, "t", "p", "r", e, TW_REPLACE, "*", NULL, &st), 0, "a replace");
    ok(strncmp(heads[1], "PUT ", 4) == 0 && !strcasestr(heads[1], "X-HTTP-Method"),
       "cosmos: a replace is still a PUT");

    is_int(table_batch(tc, "t", "p", &op, 1, &st), 0, "cosmos: a batch merge");
    ok(strstr(body, "POST http://") && strstr(body, "RowKey='r') HTTP/1.1\r\n") &&
           strstr(body, "\r\nX-HTTP-Method: MERGE\r\n") && !strstr(body, "MERGE http://"),
       "its part: POST with X-HTTP-Method: MERGE");
    ok(etag && strstr(etag, "1234567Z"), "its ETag taken (%s)", etag ? etag : "none");
    free(etag);
    etag = NULL;
    table_client_free(tc);

    tc = client(&a, "storage");
    is_int(table_batch(tc, "t", "p", &op, 1, &st), 0, "storage: a batch merge");
    ok(strstr(body, "MERGE http://") && !strstr(body, "X-HTTP-Method"), "its part: the verb");
    free(etag);
    etag = NULL;
    table_client_free(tc);
    json_decref(e);
}

/* A transaction's operations are bounded by the service's batch size,
 * Cosmos DB's 2 MB or Storage's 4 MiB, less the caller's headroom. */
static void test_batch_room(void)
{
    struct account a;
    struct table_client *tc = client(&a, "cosmos");

    is_int((long)table_batch_room(tc, 512 * 1024), 1536 * 1024, "cosmos: 2 MiB less the headroom");
    table_client_free(tc);
    tc = client(&a, "storage");
    is_int((long)table_batch_room(tc, 512 * 1024), 3584 * 1024, "storage: 4 MiB less the headroom");
    table_client_free(tc);
    is_int((long)table_batch_room(NULL, 1), 4 * 1024 * 1024 - 1, "no client: Storage's");
    is_int((long)table_batch_room(NULL, 5 * 1024 * 1024), 0, "headroom past the bound: none");
}

/* A $batch answered 202 with a failed part of 429 applied nothing: it is
 * sent again, as a 429 itself would be, until a part succeeds. */
static void test_batch_throttled(void)
{
    struct account a;
    struct table_client *tc = client(&a, "cosmos");
    json_t *e = json_pack("{s:i}", "A", 1);
    struct table_batch_op op = { TB_UPSERT, "r", e, NULL, NULL };
    struct az_status st;

    httpd_reset();
    throttle = 2;
    is_int(table_batch(tc, "t", "p", &op, 1, &st), 0, "two 429 parts, then done: 0");
    is_int(httpd_seen(), 3, "sent three times");
    is_int(st.attempts, 3, "three attempts");
    httpd_reset();
    throttle = 100;
    is_int(table_batch(tc, "t", "p", &op, 1, &st), -EIO, "429 parts to the end: EIO");
    is_int(st.http_status, 429, "the part's 429 said");
    ok(httpd_seen() >= 4, "after the retries (%d)", httpd_seen());
    throttle = 0;
    table_client_free(tc);
    json_decref(e);
}

int main(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 99;
    test_pick();
    test_limits();
    httpd.keep_body = 1;
    httpd_start(serve);
    snprintf(host, sizeof(host), "127.0.0.1:%d", httpd.port);
    test_merge_form();
    test_batch_throttled();
    test_batch_room();
    httpd_stop();
    free(httpd.body);
    curl_global_cleanup();
    return done_testing();
}

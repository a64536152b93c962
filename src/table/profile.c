/* table/profile.c - the service behind an endpoint (Azure Storage or Cosmos
 * DB for Table) and everything that differs between them: the one place
 * that looks at a host name or names a difference. */
#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "table/table.h"
#include "table/table_i.h"

/* Azure Storage tables (learn.microsoft.com, "Understanding the Table
 * service data model"): keys up to 1 KiB, entities up to 1 MiB (both
 * counted by entity_check_limits, in the service's UTF-16 units), a
 * transaction up to 4 MiB, results in key order, MERGE as a verb, 503
 * ServerBusy when throttled. */
static const struct table_profile storage = {
    .service = TABLE_STORAGE,
    .name = "storage",
    .sorted = 1,
    .merge_tunneled = 0,
    .throttle_status = 503,
    .timestamp_filter = 1,
    .scope = "https://storage.azure.com/.default",
    .limits = { .pk_max = 0,
                .rk_max = 0,
                .entity_max = 0,
                .batch_max = TABLE_BATCH_BYTES,
                .empty_keys = 1,
                .reserved = NULL },
    .entity = &entity_limits_storage,
};

/* Property names Cosmos DB for Table keeps for itself (compared without
 * regard to case). */
static const char *const cosmos_reserved[] = { "ID", "rid", "etag", "ResourceId", NULL };

/* Cosmos DB for Table ("API for Table FAQ", the Tables SDKs): results in
 * no particular order, MERGE only as POST + X-HTTP-Method, 429 with
 * x-ms-retry-after-ms, no Timestamp in a $filter, RowKey up to 255 bytes,
 * items and transactions up to 2 MB, no empty keys. */
static const struct table_profile cosmos = {
    .service = TABLE_COSMOS,
    .name = "cosmos",
    .sorted = 0,
    .merge_tunneled = 1,
    .throttle_status = 429,
    .timestamp_filter = 0,
    .scope = "https://cosmos.azure.com/.default",
    .limits = { .pk_max = 1024,
                .rk_max = 255,
                .entity_max = 2 * 1024 * 1024,
                .batch_max = 2 * 1024 * 1024,
                .empty_keys = 0,
                .reserved = cosmos_reserved },
    .entity = &entity_limits_cosmos,
};

/* Does HOST (host[:port]) end with SUFFIX, case aside? */
static int host_ends(const char *host, const char *suffix)
{
    size_t n = strcspn(host, ":"), m = strlen(suffix);

    return n >= m && strncasecmp(host + n - m, suffix, m) == 0;
}

/* See table.h. */
int table_profile_pick(const char *host, const char *service, const struct table_profile **out)
{
    if (service && *service) {
        if (strcasecmp(service, "storage") == 0)
            *out = &storage;
        else if (strcasecmp(service, "cosmos") == 0)
            *out = &cosmos;
        else
            return -EINVAL;
        return 0;
    }
    *out = host &&
            (host_ends(host, ".table.cosmos.azure.com") ||
             host_ends(host, ".table.cosmosdb.azure.com")) ?
        &cosmos :
        &storage;
    return 0;
}

/* See table.h. */
const struct table_profile *table_client_profile(const struct table_client *tc)
{
    return tc->profile;
}

/* See table.h. */
size_t table_batch_room(const struct table_client *tc, size_t headroom)
{
    size_t max = tc ? tc->profile->limits.batch_max : TABLE_BATCH_BYTES;

    return max > headroom ? max - headroom : 0;
}

/* See table.h. */
const struct entity_limits *table_profile_entity_limits(const struct table_profile *p)
{
    return p->entity;
}

/* See table.h. */
int table_profile_sorted(const struct table_profile *p)
{
    return p->sorted;
}

/* See table.h. */
int table_profile_throttled(const struct table_profile *p, long status)
{
    return status == p->throttle_status || status == 429 || status == 503;
}

/* See table.h. */
const char *table_name_problem(const struct table_profile *p, const char *name)
{
    size_t n = strlen(name);

    if (p->service == TABLE_STORAGE) {
        if (n < 3 || n > 63)
            return "a table name has 3 to 63 characters";
        for (size_t i = 0; i < n; i++) {
            char ch = name[i];
            int alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');

            if (!alpha && !(ch >= '0' && ch <= '9' && i > 0))
                return "a table name is letters and digits, starting with a letter";
        }
        return strcasecmp(name, "Tables") == 0 ? "'Tables' is reserved" : NULL;
    }
    if (n < 1 || n > 255)
        return "a Cosmos DB table name has 1 to 255 characters";
    if (strpbrk(name, "/\\#?"))
        return "a Cosmos DB table name holds no '/', '\\', '#' or '?'";
    return name[n - 1] == ' ' ? "a Cosmos DB table name does not end in a space" : NULL;
}

/* WHY (WHYLEN bytes) from FMT; returns RC. */
__attribute__((format(printf, 4, 5))) static int why_set(int rc, char *why, size_t whylen,
                                                         const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return rc;
}

/* Is key K (WHICH names it) within L? Returns 0 or -EINVAL with WHY. */
static int key_fits(const struct table_profile *p, const char *which, const char *k, size_t max,
                    char *why, size_t whylen)
{
    size_t n = strlen(k);

    if (n == 0 && !p->limits.empty_keys)
        return why_set(-EINVAL, why, whylen, "an empty %s: %s refuses it", which,
                       p->service == TABLE_COSMOS ? "Cosmos DB" : "the service");
    if (max && n > max)
        return why_set(-EINVAL, why, whylen, "the %s is %zu bytes, over the %zu %s takes", which, n,
                       max, p->service == TABLE_COSMOS ? "Cosmos DB" : "Azure Storage");
    return 0;
}

/* See table.h. */
int table_entity_fits(const struct table_profile *p, const char *pk, const char *rk,
                      const json_t *wire, size_t text_len, char *why, size_t whylen)
{
    const char *svc = p->service == TABLE_COSMOS ? "Cosmos DB" : "Azure Storage";
    const char *k;
    json_t *v;
    int rc;

    if ((pk && (rc = key_fits(p, "PartitionKey", pk, p->limits.pk_max, why, whylen)) < 0) ||
        (rk && (rc = key_fits(p, "RowKey", rk, p->limits.rk_max, why, whylen)) < 0))
        return rc;
    json_object_foreach ((json_t *)wire, k, v) {
        for (const char *const *r = p->limits.reserved; r && *r; r++)
            if (strcasecmp(k, *r) == 0)
                return why_set(-EINVAL, why, whylen,
                               "the property name '%s' is reserved by %s (so are %s)", k, svc,
                               "ID, rid, etag, ResourceId");
    }
    /* the text is no smaller than the wire's compact JSON but for its
     * keys: only a text near the bound is measured (json_dumpb without a
     * buffer says how long the JSON is; the keys' members added) */
    if (wire && p->limits.entity_max &&
        text_len + (pk ? strlen(pk) : 0) + (rk ? strlen(rk) : 0) + 64 > p->limits.entity_max) {
        size_t n = json_dumpb(wire, NULL, 0, JSON_COMPACT | JSON_ENSURE_ASCII) +
            (pk ? strlen(pk) : 0) + (rk ? strlen(rk) : 0) + sizeof(",\"PartitionKey\":\"\"") +
            sizeof(",\"RowKey\":\"\"");

        if (n > p->limits.entity_max)
            return why_set(-EFBIG, why, whylen, "the entity is %zu bytes, over the %zu %s takes", n,
                           p->limits.entity_max, svc);
    }
    return 0;
}

/* Is C a character of a name (a letter, a digit, '_')? */
static int name_char(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Is the word at S (in the string that begins at START) "Timestamp",
 * standing alone? S[n] is read only once the word is there: it is then
 * within the string, or its end. */
static int names_timestamp_at(const char *start, const char *s)
{
    static const char word[] = "Timestamp";
    size_t n = sizeof(word) - 1;

    return strncmp(s, word, n) == 0 && !(s > start && name_char((unsigned char)s[-1])) &&
        !name_char((unsigned char)s[n]);
}

/* See table.h. */
const char *table_filter_problem(const struct table_profile *p, const char *filter)
{
    int quoted = 0;

    if (p->timestamp_filter || !filter)
        return NULL;
    /* outside string literals ('...', '' for a quote) */
    for (const char *s = filter; *s; s++) {
        if (*s == '\'')
            quoted = !quoted;
        else if (!quoted && names_timestamp_at(filter, s))
            return "Cosmos DB answers a filter on Timestamp with no entities (its Timestamp "
                   "is not a property it can filter on): filter on a property of your own";
    }
    return NULL;
}

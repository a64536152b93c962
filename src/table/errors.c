/* table/errors.c - what the service's answers mean: its error codes, the
 * one error parser (JSON, a $batch part's, XML), the one errno mapping,
 * and which target a throttling refusal names. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "table/table_i.h"
#include "table/table.h"

/* The Table service's error codes (Azure's "Table service error codes"
 * and the common ones) an operator may want to tell apart; the rest are
 * counted as "other". */
static const char *const code_names[HTTP_CODES] = {
    "ResourceNotFound",
    "TableNotFound",
    "EntityNotFound",
    "EntityAlreadyExists",
    "TableAlreadyExists",
    "UpdateConditionNotSatisfied",
    "ConditionNotMet",
    "InvalidInput",
    "OutOfRangeInput",
    "PropertyValueTooLarge",
    "EntityTooLarge",
    "TooManyProperties",
    "InvalidDuplicateRow",
    "TableBeingDeleted",
    "AuthenticationFailed",
    "AuthorizationFailure",
    "AuthorizationPermissionMismatch",
    "InsufficientAccountPermissions",
    "ServerBusy",
    "OperationTimedOut",
    "InternalError",
    "RequestBodyTooLarge",
    "InvalidAuthenticationInfo",
    "other",
};

/* See table.h. */
int table_code_index(const char *code)
{
    for (int i = 0; i < HTTP_CODES - 1; i++)
        if (strcmp(code, code_names[i]) == 0)
            return i;
    return HTTP_CODES - 1;
}

/* See table.h. */
const char *table_code_name(int i)
{
    return i >= 0 && i < HTTP_CODES ? code_names[i] : NULL;
}

/* Map a status to an errno; the single place where this is decided. */
int az_status_errno(const struct az_status *st)
{
    switch (st->http_status) {
    case 0:
        return EIO;
    case 400:
        return EINVAL;
    case 401:
    case 403:
        return EACCES;
    case 404:
        if (strcmp(st->code, "ResourceNotFound") == 0 || strcmp(st->code, "TableNotFound") == 0 ||
            strcmp(st->code, "EntityNotFound") == 0)
            return ENOENT;
        return EIO;
    case 409:
        return EEXIST;
    case 412:
        return ESTALE;
    case 413:
        return EFBIG;
    default:
        return EIO;
    }
}

/* See table/table_i.h. */
void table_error_parse(const char *text, enum table_error_src src, struct az_status *st)
{
    json_t *root = json_loads(text, src == TE_BATCH_PART ? JSON_DISABLE_EOF_CHECK : 0, NULL);
    const char *c, *m;

    if (root) {
        json_t *e = json_object_get(root, "odata.error");

        c = json_string_value(json_object_get(e, "code"));
        m = json_string_value(json_object_get(json_object_get(e, "message"), "value"));
        if (c)
            snprintf(st->code, sizeof(st->code), "%s", c);
        if (m)
            snprintf(st->message, sizeof(st->message), "%.*s", (int)strcspn(m, "\r\n"), m);
        json_decref(root);
        return;
    }
    if (src != TE_BODY)
        return;
    /* XML: <Code>..</Code> ... <Message>..</Message> */
    if ((c = strstr(text, "<Code>")) != NULL) {
        c += 6;
        snprintf(st->code, sizeof(st->code), "%.*s", (int)strcspn(c, "<"), c);
    }
    if ((m = strstr(text, "<Message>")) != NULL) {
        m += 9;
        snprintf(st->message, sizeof(st->message), "%.*s", (int)strcspn(m, "<\r\n"), m);
    }
}

/* See table/table_i.h. */
int table_refusal(long status, const struct az_status *st)
{
    if (status == 429)
        return HTTP_REFUSED_KEY;
    if (status != 503 || strcmp(st->code, "ServerBusy") != 0)
        return HTTP_SERVED;
    return strstr(st->message, "over the account limit") ? HTTP_REFUSED_ACCOUNT : HTTP_REFUSED_KEY;
}

/* See table/table_i.h. */
int table_rate_limited(void *ctx, const struct http_response *resp)
{
    struct az_status st = { 0 };

    (void)ctx;
    if (resp->status == 503 && resp->body && resp->body[0])
        table_error_parse(resp->body, TE_BODY, &st);
    if (resp->status == 503 && resp->captured[TCAP_ERROR_CODE])
        snprintf(st.code, sizeof(st.code), "%s", resp->captured[TCAP_ERROR_CODE]);
    return table_refusal(resp->status, &st);
}

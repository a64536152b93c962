/* credential.h - Microsoft Entra ID credentials: where a bearer token for the
 * Table service comes from (service principal with a secret or a
 * certificate, workload identity, managed identity, Azure CLI), chosen by
 * name or in DefaultAzureCredential's order. */
#ifndef AZTFS_CREDENTIAL_H
#define AZTFS_CREDENTIAL_H

#include <stddef.h>
#include <time.h>

#include "http.h"
#include "log.h"

struct credential;

enum cred_kind {
    CRED_SECRET,        /* AZURE_TENANT_ID + AZURE_CLIENT_ID + AZURE_CLIENT_SECRET */
    CRED_CERTIFICATE,   /* ... + AZURE_CLIENT_CERTIFICATE_PATH [+ _PASSWORD] */
    CRED_WORKLOAD,      /* ... + AZURE_FEDERATED_TOKEN_FILE */
    CRED_MANAGED,       /* IDENTITY_ENDPOINT + IDENTITY_HEADER, else IMDS */
    CRED_CLI,           /* az account get-access-token */
    CRED_KIND_COUNT
};

/* The settings, each from the config file when it has it, else from the
 * environment variable named in the comment. Strings are malloc'd (secrets
 * wiped by cred_settings_free); NULL when not given. */
struct cred_settings {
    char *tenant_id;            /* AZURE_TENANT_ID */
    char *client_id;            /* -o client_id=, else AZURE_CLIENT_ID */
    char *client_secret;        /* AZURE_CLIENT_SECRET (secret) */
    char *certificate_path;     /* AZURE_CLIENT_CERTIFICATE_PATH */
    char *certificate_password; /* AZURE_CLIENT_CERTIFICATE_PASSWORD (secret) */
    char *federated_token_file; /* AZURE_FEDERATED_TOKEN_FILE */
    char *authority_host;       /* AZURE_AUTHORITY_HOST, default
                                   https://login.microsoftonline.com */
    char *identity_endpoint;    /* IDENTITY_ENDPOINT (App Service, Functions,
                                   Container Apps) */
    char *identity_header;      /* IDENTITY_HEADER (secret) */
    char *imds_endpoint;        /* AZTFS_IMDS_ENDPOINT (diagnostic: the
                                   instance metadata service's base URL,
                                   default http://169.254.169.254) */
};

/* The environment variables cred_settings_load reads that hold secrets,
 * NULL-terminated: wipe them from the environment once loaded. */
extern const char *const cred_secret_env[];

/* Fill *S from CONFIG (NULL, or a lookup of the config file's setting by its
 * environment variable's name, returning NULL when absent) and the
 * environment; CLIENT_ID (-o client_id=) wins over both. Returns 0 or
 * -ENOMEM. */
int cred_settings_load(struct cred_settings *s,
                       const char *(*config)(void *ctx, const char *name), void *ctx,
                       const char *client_id);

/* Wipe the secrets of S and free every member; zeroes *S. */
void cred_settings_free(struct cred_settings *s);

/* "secret", "certificate", "workload", "managed", "cli" -> *KIND (the
 * -o auth= names). Returns 0 or -EINVAL. */
int cred_kind_parse(const char *name, enum cred_kind *kind);

/* A human name of KIND ("service principal with a client secret", ...). */
const char *cred_kind_describe(enum cred_kind kind);

/* The token scope for a Table endpoint on HOST (host[:port]):
 * https://cosmos.azure.com/.default for Cosmos DB (*.table.cosmos.azure.com,
 * *.table.cosmosdb.azure.com), else https://storage.azure.com/.default.
 * A static string. */
const char *cred_scope_for_host(const char *host);

/* Why a credential failed (credential_new, credential_token). */
struct cred_error {
    int unavailable;        /* not set up here (settings missing, no az, no
                               managed identity endpoint answering): the
                               DefaultAzureCredential order tries the next */
    char msg[1024];         /* one line naming the fix; never a secret */
};

/* Make a credential of KIND for SCOPE (static, as cred_scope_for_host) from
 * S (copied). HC: timeouts, retries and CA file of its token requests
 * (libcurl, through http.c), capped for them: one request (and one run of
 * az) at most 30 s, at most 2 retries within 60 s, answers at most 64 KiB;
 * LG borrowed.
 * Returns 0 and *OUT, or -errno with E filled: -ENODATA (unavailable: a
 * required setting is missing, named in E), -EINVAL (a setting is
 * unusable: an http:// authority that is not loopback, a certificate file
 * that cannot be read), -ENOMEM. */
int credential_new(struct credential **out, enum cred_kind kind, const struct cred_settings *s,
                   const char *scope, const struct http_config *hc, const struct logger *lg,
                   struct cred_error *e);

/* Free C (NULL: nothing), wiping its secrets. */
void credential_free(struct credential *c);

/* The kind of C. */
enum cred_kind credential_kind(const struct credential *c);

/* Get a new access token now (no cache: see token.h). Re-reads the
 * federated token file of a workload identity each time. Returns 0 with
 * *TOKEN (malloc'd; the caller wipes and frees it) and *EXPIRES_AT, or
 * -errno with E filled: -EHOSTUNREACH (the identity endpoint did not answer;
 * E names its address), -EACCES (refused: the service's reason and what to
 * check), -EPROTO (an answer that is no token), -ETIMEDOUT, -ENOMEM. */
int credential_token(struct credential *c, char **token, time_t *expires_at,
                     struct cred_error *e);

/* DefaultAzureCredential's order: environment (client secret, then
 * certificate), workload identity, managed identity, Azure CLI. The first
 * credential that is set up and yields a token is returned in *OUT with that
 * token (as credential_token); one that is set up but refused (a wrong
 * secret) ends the search with its error; one that is unavailable is
 * skipped. Returns 0, or -errno with E saying what was tried and why each
 * failed (-ENOENT: none was available). */
int credential_default(struct credential **out, const struct cred_settings *s,
                       const char *scope, const struct http_config *hc,
                       const struct logger *lg, char **token, time_t *expires_at,
                       struct cred_error *e);

#endif

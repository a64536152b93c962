/* auth.h - the public face of the auth/ folder: its parts below, each
 * with its own contract. */
#ifndef AZTFS_AUTH_AUTH_H
#define AZTFS_AUTH_AUTH_H

#include <stddef.h>
#include <time.h>

#include "http/http.h"
#include "util/util.h"

/* ---- auth/connstr.c: Azure connection strings and aztfs config files -> an account description. */

/* Well-known development storage (Azurite) account. */
#define DEVSTORE_ACCOUNT "devstoreaccount1"
#define DEVSTORE_KEY \
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
#define DEVSTORE_ENDPOINT "http://127.0.0.1:10002/devstoreaccount1"

/* Sign-in settings a config file may hold besides a connection string's
 * fields, named as the environment variables they stand for ("Auth" is
 * -o auth=). AS_CLIENT_SECRET and AS_CERTIFICATE_PASSWORD are secrets. */
enum auth_setting {
    AS_AUTH,
    AS_TENANT_ID,
    AS_CLIENT_ID,
    AS_CLIENT_SECRET,
    AS_CERTIFICATE_PATH,
    AS_CERTIFICATE_PASSWORD,
    AS_FEDERATED_TOKEN_FILE,
    AS_AUTHORITY_HOST,
    AS_COUNT
};

/* Their names: "Auth", "AZURE_TENANT_ID", "AZURE_CLIENT_ID", ... */
extern const char *const auth_setting_names[AS_COUNT];

struct token_cache;

/* One storage account, as needed to address and sign requests.
 * Every string is owned by the struct (malloc'd); release with account_free(). */
struct account {
    char *name;         /* account name, e.g. "devstoreaccount1" */
    unsigned char *key; /* base64-decoded AccountKey, NULL when none */
    size_t key_len;
    char *sas;                  /* SAS token without a leading '?', NULL when none */
    char *endpoint;             /* table endpoint URL, no trailing '/', e.g.
                              "https://acct.table.core.windows.net" or
                              "http://127.0.0.1:10002/devstoreaccount1" */
    char *scheme;               /* "http" or "https" (from endpoint) */
    char *host;                 /* host[:port] part of endpoint */
    char *base_path;            /* path part of endpoint, "" for host-style,
                              "/devstoreaccount1" for path-style */
    int devstore;               /* from UseDevelopmentStorage=true: the key is
                              the emulator's published one, no secret */
    char *service;              /* Service=storage|cosmos of the config (or
                              -o service=, which wins): the service behind
                              the endpoint (table/profile.c); NULL: told by
                              the host */
    char *auth[AS_COUNT];       /* sign-in settings of the config file, by
                              enum auth_setting; NULL when not given */
    struct token_cache *tokens; /* Microsoft Entra ID bearer tokens, when
                              requests carry one instead of the key or
                              SAS: set and freed by the mount, not by
                              account_free */
};

/* Parse an Azure connection string ("Key=Value;Key=Value...") into *acct
 * (which must be zeroed by the caller). Recognised keys (case-insensitive):
 * DefaultEndpointsProtocol, AccountName, AccountKey, TableEndpoint,
 * EndpointSuffix, SharedAccessSignature, UseDevelopmentStorage, Service.
 * Unknown keys (BlobEndpoint, QueueEndpoint, ...) are ignored.
 * Returns 0, or -EINVAL with a one-line human explanation in errbuf
 * (never containing key or signature material). On failure *acct is
 * left freed/zeroed. */
int connstr_parse(const char *s, struct account *acct, char *errbuf, size_t errlen);

/* Load a config file: either one connection string (possibly spread over
 * several lines) or the same Key=Value fields one per line; blank lines and
 * lines starting with '#' are ignored. A file that holds an AccountKey or
 * SharedAccessSignature and is readable or writable by group/others
 * (mode & 077) is refused with -EACCES and a message naming the file and
 * "chmod 600". Returns 0 or -errno with a message in errbuf.
 * The file buffer is wiped with OPENSSL_cleanse before being freed. */
int connstr_load_file(const char *path, struct account *acct, char *errbuf, size_t errlen);

/* Is the endpoint's host a loopback address (127.0.0.0/8, ::1 or
 * "localhost"), where plain http cannot be read by anyone else? 1 or 0. */
int account_is_loopback(const struct account *acct);

/* Free every member and wipe key and SAS with OPENSSL_cleanse; zeroes *acct. */
void account_free(struct account *acct);

/* ---- auth/credential.c: Microsoft Entra ID credentials: where a bearer token for the
 * Table service comes from (service principal with a secret or a
 * certificate, workload identity, managed identity, Azure CLI), chosen by
 * name or in DefaultAzureCredential's order. */

struct credential;

enum cred_kind {
    CRED_SECRET,      /* AZURE_TENANT_ID + AZURE_CLIENT_ID + AZURE_CLIENT_SECRET */
    CRED_CERTIFICATE, /* ... + AZURE_CLIENT_CERTIFICATE_PATH [+ _PASSWORD] */
    CRED_WORKLOAD,    /* ... + AZURE_FEDERATED_TOKEN_FILE */
    CRED_MANAGED,     /* IDENTITY_ENDPOINT + IDENTITY_HEADER, else IMDS */
    CRED_CLI,         /* az account get-access-token */
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
int cred_settings_load(struct cred_settings *s, const char *(*config)(void *ctx, const char *name),
                       void *ctx, const char *client_id);

/* Wipe the secrets of S and free every member; zeroes *S. */
void cred_settings_free(struct cred_settings *s);

/* "secret", "certificate", "workload", "managed", "cli" -> *KIND (the
 * -o auth= names). Returns 0 or -EINVAL. */
int cred_kind_parse(const char *name, enum cred_kind *kind);

/* A human name of KIND ("service principal with a client secret", ...). */
const char *cred_kind_describe(enum cred_kind kind);

/* Why a credential failed (credential_new, credential_token). */
struct cred_error {
    int unavailable; /* not set up here (settings missing, no az, no
                               managed identity endpoint answering): the
                               DefaultAzureCredential order tries the next */
    char msg[1024];  /* one line naming the fix; never a secret */
};

/* Make a credential of KIND for SCOPE (static: the service profile's, table_profile.scope) from
 * S (copied). HC: timeouts, retries and CA file of its token requests
 * (libcurl, through http/http.c), capped for them: one request (and one run of
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

/* Get a new access token now (no cache: the cache is auth/token.c, below). Re-reads the
 * federated token file of a workload identity each time. Returns 0 with
 * *TOKEN (malloc'd; the caller wipes and frees it) and *EXPIRES_AT, or
 * -errno with E filled: -EHOSTUNREACH (the identity endpoint did not answer;
 * E names its address), -EACCES (refused: the service's reason and what to
 * check), -EPROTO (an answer that is no token), -ETIMEDOUT, -ENOMEM. */
int credential_token(struct credential *c, char **token, time_t *expires_at, struct cred_error *e);

/* DefaultAzureCredential's order: environment (client secret, then
 * certificate), workload identity, managed identity, Azure CLI. The first
 * credential that is set up and yields a token is returned in *OUT with that
 * token (as credential_token); one that is set up but refused (a wrong
 * secret) ends the search with its error; one that is unavailable is
 * skipped. Returns 0, or -errno with E saying what was tried and why each
 * failed (-ENOENT: none was available). */
int credential_default(struct credential **out, const struct cred_settings *s, const char *scope,
                       const struct http_config *hc, const struct logger *lg, char **token,
                       time_t *expires_at, struct cred_error *e);

/* ---- auth/signin.c: how a mount signs in: the account and its sign-in
 * settings loaded, the secret variables scrubbed, the credential chosen
 * and tried once. */

/* Remove AZURE_STORAGE_CONNECTION_STRING and the sign-in secrets
 * (cred_secret_env) from the environment, and from where the kernel shows
 * them (env_scrub). */
void signin_scrub_env(void);

/* Load *ACCT from the config file CONFIG (-o config=), else from
 * AZURE_STORAGE_CONNECTION_STRING, and the sign-in settings into *CS
 * (CLIENT_ID: -o client_id=, or NULL); then scrub the secret variables,
 * whatever the outcome. Returns 0, or -errno with ERR (ERRLEN bytes, one
 * line that never holds a secret) saying what to fix: -EINVAL when
 * neither is given, the error of reading or parsing the one given. */
int signin_load(const char *config, const char *client_id, struct account *acct,
                struct cred_settings *cs, char *err, size_t errlen);

/* Choose how ACCT's requests are signed and try it once: AUTH (-o auth=,
 * else the config's Auth=; NULL: unset) "key" or "sas" demands that secret
 * of ACCT; another name (cred_kind_parse) that credential; unset, the key
 * or SAS ACCT has, else DefaultAzureCredential's order. A credential's
 * first token for SCOPE (the service profile's) is fetched now (HC, LG as
 * credential_new's), hung on ACCT as its token cache, and ACCT's key and
 * SAS are dropped, wiped. Returns 0, or -errno with ERR (ERRLEN bytes, one
 * line naming the fix, never a secret): -EINVAL for a name unknown or a
 * secret ACCT lacks, else credential_new's or credential_token's. */
int signin_start(struct account *acct, const char *auth, const char *scope,
                 const struct cred_settings *cs, const struct http_config *hc,
                 const struct logger *lg, char *err, size_t errlen);

/* ---- auth/sharedkey.c: SharedKey request signing for the Table service (HMAC-SHA256). */

#define RFC1123_LEN 30 /* "Sun, 22 Nov 2026 08:26:34 GMT" + NUL */

/* Format T as an RFC 1123 GMT date into OUT (at least RFC1123_LEN bytes). */
void sharedkey_rfc1123(time_t t, char out[RFC1123_LEN]);

/* Build the Table service string to sign:
 *   VERB \n Content-MD5 \n Content-Type \n Date \n CanonicalizedResource
 * where CanonicalizedResource = "/" ACCOUNT PATH [ "?comp=" COMP ].
 * PATH is the URL path exactly as sent (percent-encoded, no query string).
 * CONTENT_MD5, CONTENT_TYPE and COMP may be NULL (empty).
 * Returns a malloc'd string (caller frees) or NULL on allocation failure. */
char *sharedkey_string_to_sign(const char *verb, const char *content_md5, const char *content_type,
                               const char *date, const char *account, const char *path,
                               const char *comp);

/* Compute the Authorization header value
 *   "SharedKey ACCOUNT:base64(HMAC-SHA256(KEY, string_to_sign))"
 * for the given request. KEY is the already base64-decoded account key.
 * Returns 0 and a malloc'd *out (caller frees), or -ENOMEM / -EINVAL. */
int sharedkey_authorization(const char *account, const unsigned char *key, size_t key_len,
                            const char *verb, const char *content_type, const char *date,
                            const char *path, const char *comp, char **out);

/* ---- auth/token.c: the bearer token of a mount: one token cached in memory,
 * refreshed before it expires and at once when the service says it has;
 * concurrent requests share one refresh. */

struct credential;
struct token_cache;

/* Create a cache over CRED (owned from now on: freed with the cache) and LG
 * (borrowed). TOKEN (may be NULL) is a first token, taken over (wiped when
 * replaced), valid until EXPIRES_AT. Returns 0 or -ENOMEM (then CRED and
 * TOKEN are freed). */
int token_cache_new(struct token_cache **out, struct credential *cred, char *token,
                    time_t expires_at, const struct logger *lg);

/* Free C (NULL: nothing), wiping the token. */
void token_cache_free(struct token_cache *c);

/* The header line "Authorization: Bearer TOKEN" for a request now: malloc'd
 * into *LINE (the caller wipes it with OPENSSL_cleanse and frees it), and
 * *GEN, the token's generation (for token_cache_rejected). The token is
 * fetched when there is none, when it expired, or when it is within its
 * margin of expiry (min(5 minutes, half its lifetime)) - then one caller
 * refreshes while the others go on with the old token; with no valid token
 * they wait for that one refresh. A refresh that failed is not retried for
 * a few seconds: meanwhile callers get its error at once.
 * Returns 0, or -errno of the refresh (credential_token's), with its
 * message in ERR (ERRLEN bytes) when ERR is not NULL. */
int token_cache_header(struct token_cache *c, char **line, unsigned long *gen, char *err,
                       size_t errlen);

/* The service refused the token of generation GEN as expired or invalid:
 * drop it (if it is still the current one), so the next
 * token_cache_header fetches a new one. */
void token_cache_rejected(struct token_cache *c, unsigned long gen);

/* Tokens fetched so far (the first one included) and refreshes that failed. */
void token_cache_counts(struct token_cache *c, unsigned long *fetched, unsigned long *failed);

#endif

/* connstr.h - Azure connection strings and aztfs config files -> an account description. */
#ifndef AZTFS_CONNSTR_H
#define AZTFS_CONNSTR_H

#include <stddef.h>

/* Well-known development storage (Azurite) account. */
#define DEVSTORE_ACCOUNT  "devstoreaccount1"
#define DEVSTORE_KEY      "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
#define DEVSTORE_ENDPOINT "http://127.0.0.1:10002/devstoreaccount1"

/* Sign-in settings a config file may hold besides a connection string's
 * fields, named as the environment variables they stand for ("Auth" is
 * -o auth=). AS_CLIENT_SECRET and AS_CERTIFICATE_PASSWORD are secrets. */
enum auth_setting {
    AS_AUTH, AS_TENANT_ID, AS_CLIENT_ID, AS_CLIENT_SECRET, AS_CERTIFICATE_PATH,
    AS_CERTIFICATE_PASSWORD, AS_FEDERATED_TOKEN_FILE, AS_AUTHORITY_HOST, AS_COUNT
};

/* Their names: "Auth", "AZURE_TENANT_ID", "AZURE_CLIENT_ID", ... */
extern const char *const auth_setting_names[AS_COUNT];

struct token_cache;

/* One storage account, as needed to address and sign requests.
 * Every string is owned by the struct (malloc'd); release with account_free(). */
struct account {
    char *name;            /* account name, e.g. "devstoreaccount1" */
    unsigned char *key;    /* base64-decoded AccountKey, NULL when none */
    size_t key_len;
    char *sas;             /* SAS token without a leading '?', NULL when none */
    char *endpoint;        /* table endpoint URL, no trailing '/', e.g.
                              "https://acct.table.core.windows.net" or
                              "http://127.0.0.1:10002/devstoreaccount1" */
    char *scheme;          /* "http" or "https" (from endpoint) */
    char *host;            /* host[:port] part of endpoint */
    char *base_path;       /* path part of endpoint, "" for host-style,
                              "/devstoreaccount1" for path-style */
    int devstore;          /* from UseDevelopmentStorage=true: the key is
                              the emulator's published one, no secret */
    char *auth[AS_COUNT];  /* sign-in settings of the config file, by
                              enum auth_setting; NULL when not given */
    struct token_cache *tokens;   /* Microsoft Entra ID bearer tokens, when
                              requests carry one instead of the key or
                              SAS: set and freed by the mount, not by
                              account_free */
};

/* Parse an Azure connection string ("Key=Value;Key=Value...") into *acct
 * (which must be zeroed by the caller). Recognised keys (case-insensitive):
 * DefaultEndpointsProtocol, AccountName, AccountKey, TableEndpoint,
 * EndpointSuffix, SharedAccessSignature, UseDevelopmentStorage.
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

#endif

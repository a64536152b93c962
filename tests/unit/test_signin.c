/* test_signin.c - how a mount signs in (auth/signin.c), without network:
 * the account from a config file or AZURE_STORAGE_CONNECTION_STRING, the
 * secret variables gone from the environment whatever the outcome, each
 * way of choosing the credential (auth=key/sas demand that secret, an
 * unknown name refused, the account's key kept when auth is unset, a
 * credential whose settings are missing refused with its own reason), and
 * a credential that works (a stand-in `az` on PATH): its token cached on
 * the account, the key and SAS dropped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth/auth.h"
#include "tap.h"

#define SCOPE "https://storage.azure.com/.default"
#define CONNSTR "AZURE_STORAGE_CONNECTION_STRING"
#define DEVSTORE "UseDevelopmentStorage=true"

static char dir[] = "/tmp/aztfs-test-signin-XXXXXX";
static const struct http_config hc = { .connect_timeout_ms = 1000, .request_timeout_ms = 5000 };
static const struct logger quiet = { .level = LOG_LVL_QUIET };

/* Set the secret variables (the connection string to CONN, NULL: unset). */
static void secrets_set(const char *conn)
{
    if (conn)
        setenv(CONNSTR, conn, 1);
    else
        unsetenv(CONNSTR);
    setenv("AZURE_CLIENT_SECRET", "s3cret", 1);
    setenv("IDENTITY_HEADER", "h3ader", 1);
}

/* Are the secret variables gone? */
static int secrets_gone(void)
{
    return !getenv(CONNSTR) && !getenv("AZURE_CLIENT_SECRET") && !getenv("IDENTITY_HEADER");
}

static void test_load(void)
{
    struct cred_settings cs = { 0 };
    struct account a;
    char err[512], path[300];
    FILE *f;
    int rc;

    secrets_set(NULL);
    rc = signin_load(NULL, NULL, &a, &cs, err, sizeof(err));
    ok(rc == -EINVAL && strstr(err, "no account given: use -o config=FILE"),
       "no config, no connection string: refused (%s)", err);
    ok(secrets_gone(), "the secret variables are scrubbed on failure too");
    account_free(&a);

    secrets_set("Foo=bar");
    rc = signin_load(NULL, NULL, &a, &cs, err, sizeof(err));
    ok(rc < 0 && strncmp(err, CONNSTR ": ", strlen(CONNSTR) + 2) == 0,
       "a bad connection string: named as the variable's (%s)", err);
    ok(secrets_gone(), "scrubbed");
    account_free(&a);

    secrets_set(DEVSTORE);
    rc = signin_load(NULL, "my-client", &a, &cs, err, sizeof(err));
    is_int(rc, 0, "the connection string: loaded (%s)", err);
    ok(a.key != NULL && a.key_len > 0, "the emulator's account key");
    ok(secrets_gone(), "the connection string and the sign-in secrets are scrubbed");
    is_str(cs.client_secret, "s3cret", "the client secret was read before it went");
    is_str(cs.client_id, "my-client", "-o client_id= is taken");
    cred_settings_free(&cs);
    account_free(&a);

    secrets_set(DEVSTORE);
    snprintf(path, sizeof(path), "%s/missing.conf", dir);
    rc = signin_load(path, NULL, &a, &cs, err, sizeof(err));
    ok(rc < 0 && err[0], "a config file that is missing: refused (%s)", err);
    ok(secrets_gone(), "scrubbed");
    account_free(&a);

    snprintf(path, sizeof(path), "%s/account.conf", dir);
    f = fopen(path, "w");
    fprintf(f,
            "# an account\nAccountName=fromfile\nAccountKey=a2V5\n"
            "TableEndpoint=http://127.0.0.1:1/fromfile\nAZURE_TENANT_ID=contoso\n");
    fclose(f);
    chmod(path, 0600);
    secrets_set("AccountName=other;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:1/other");
    rc = signin_load(path, NULL, &a, &cs, err, sizeof(err));
    is_int(rc, 0, "a config file: loaded (%s)", err);
    is_str(a.name, "fromfile", "the config file wins over the variable");
    is_str(cs.tenant_id, "contoso", "a sign-in setting of the config file");
    ok(secrets_gone(), "scrubbed");
    cred_settings_free(&cs);
    account_free(&a);
}

/* The emulator's account, loaded. */
static void account_dev(struct account *a)
{
    char err[256];

    memset(a, 0, sizeof(*a));
    if (connstr_parse(DEVSTORE, a, err, sizeof(err)) < 0) {
        printf("Bail out! connstr_parse: %s\n", err);
        exit(1);
    }
}

/* The stand-in az: answers a token valid for an hour. */
static void write_az(void)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/az", dir);
    f = fopen(path, "w");
    fprintf(f,
            "#!/bin/sh\n"
            "printf '{\"accessToken\":\"tok1\",\"expires_on\":%%s}' "
            "$(( $(/bin/date +%%s) + 3600 ))\n");
    fclose(f);
    chmod(path, 0755);
}

static void test_start(void)
{
    struct cred_settings cs = { 0 };
    struct account a;
    char err[1280], *line = NULL;
    unsigned long gen;
    int rc;

    account_dev(&a);
    is_int(signin_start(&a, "key", SCOPE, &cs, &hc, &quiet, err, sizeof(err)), 0,
           "auth=key with a key");
    ok(a.key && !a.tokens, "the key is kept, no token");
    rc = signin_start(&a, "sas", SCOPE, &cs, &hc, &quiet, err, sizeof(err));
    ok(rc == -EINVAL && strcmp(err, "auth=sas, but the account has no SharedAccessSignature") == 0,
       "auth=sas without one: refused (%s)", err);
    rc = signin_start(&a, "bogus", SCOPE, &cs, &hc, &quiet, err, sizeof(err));
    ok(rc == -EINVAL && strstr(err, "unknown auth=bogus (key, sas, secret,"),
       "an unknown name: refused with the names (%s)", err);
    is_int(signin_start(&a, NULL, SCOPE, &cs, &hc, &quiet, err, sizeof(err)), 0,
           "auth unset, a key: the key");
    ok(a.key && !a.tokens, "the key is kept, no token");
    rc = signin_start(&a, "secret", SCOPE, &cs, &hc, &quiet, err, sizeof(err));
    ok(rc == -ENODATA && strstr(err, "service principal with a client secret: ") == err &&
           strstr(err, "AZURE_CLIENT_SECRET is not set"),
       "auth=secret without its settings: the credential's reason (%s)", err);
    ok(a.key && !a.tokens, "a failed sign-in keeps the account as it was");

    write_az();
    setenv("PATH", dir, 1);
    rc = signin_start(&a, "cli", SCOPE, &cs, &hc, &quiet, err, sizeof(err));
    is_int(rc, 0, "auth=cli with an az that answers (%s)", err);
    ok(a.tokens != NULL, "the token is cached on the account");
    ok(a.key == NULL && a.sas == NULL, "the key and SAS are dropped");
    if (a.tokens) {
        is_int(token_cache_header(a.tokens, &line, &gen, err, sizeof(err)), 0, "its header");
        is_str(line, "Authorization: Bearer tok1", "the first token, fetched at sign-in");
        free(line);
    }
    token_cache_free(a.tokens);
    account_free(&a);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    test_load();
    test_start();
    tap_rmtree(dir);
    return done_testing();
}

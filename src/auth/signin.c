/* auth/signin.c - how a mount signs in: the account loaded from the config
 * file or AZURE_STORAGE_CONNECTION_STRING with its sign-in settings, the
 * secret variables scrubbed, and the credential chosen (-o auth=, else
 * the account's key or SAS, else DefaultAzureCredential's order) and tried
 * once, so a wrong setting fails the mount with one line naming the fix. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"

#define CONNSTR_ENV "AZURE_STORAGE_CONNECTION_STRING"

/* A sign-in setting of the config file by its variable's name (for
 * cred_settings_load; CTX is the account). */
static const char *config_setting(void *ctx, const char *name)
{
    const struct account *a = ctx;

    for (int i = 0; i < AS_COUNT; i++)
        if (strcmp(auth_setting_names[i], name) == 0)
            return a->auth[i];
    return NULL;
}

/* See auth.h. */
void signin_scrub_env(void)
{
    env_scrub(CONNSTR_ENV);
    for (const char *const *n = cred_secret_env; *n; n++)
        env_scrub(*n);
}

/* See auth.h. */
int signin_load(const char *config, const char *client_id, struct account *acct,
                struct cred_settings *cs, char *err, size_t errlen)
{
    const char *env = getenv(CONNSTR_ENV);
    char why[256] = "";
    int rc;

    memset(acct, 0, sizeof(*acct));
    err[0] = '\0';
    if (config) {
        if ((rc = connstr_load_file(config, acct, why, sizeof(why))) < 0)
            snprintf(err, errlen, "%s", why);
    } else if (!env || !*env) {
        snprintf(err, errlen,
                 "no account given: use -o config=FILE or set " CONNSTR_ENV " (see aztfs --help)");
        rc = -EINVAL;
    } else if ((rc = connstr_parse(env, acct, why, sizeof(why))) < 0) {
        snprintf(err, errlen, CONNSTR_ENV ": %s", why);
    }
    if (rc == 0 && cred_settings_load(cs, config_setting, acct, client_id) < 0) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    }
    signin_scrub_env();
    return rc;
}

/* Drop the key and SAS of ACCT, wiped: requests carry a bearer token. */
static void drop_shared_secrets(struct account *acct)
{
    secret_free(acct->key, acct->key_len);
    acct->key = NULL;
    secret_str_free(acct->sas);
    acct->sas = NULL;
}

/* AUTH is "key" or "sas": does ACCT have that secret? 0, or -EINVAL with
 * ERR saying it has not. */
static int shared_secret(const struct account *acct, const char *auth, char *err, size_t errlen)
{
    int key = auth[0] == 'k';

    if (key ? acct->key != NULL : acct->sas != NULL)
        return 0;
    snprintf(err, errlen, "auth=%s, but the account has no %s", auth,
             key ? "AccountKey" : "SharedAccessSignature");
    return -EINVAL;
}

/* See auth.h. */
int signin_start(struct account *acct, const char *auth, const char *scope,
                 const struct cred_settings *cs, const struct http_config *hc,
                 const struct logger *lg, char *err, size_t errlen)
{
    struct credential *cred = NULL;
    struct cred_error e = { 0 };
    enum cred_kind kind = CRED_SECRET;
    char *tok = NULL;
    time_t exp = 0;
    int rc;

    err[0] = '\0';
    if (auth && (strcmp(auth, "key") == 0 || strcmp(auth, "sas") == 0))
        return shared_secret(acct, auth, err, errlen);
    if (!auth && (acct->key || acct->sas))
        return 0;
    if (auth && cred_kind_parse(auth, &kind) < 0) {
        snprintf(err, errlen,
                 "unknown auth=%s (key, sas, secret, certificate, workload, managed, cli)", auth);
        return -EINVAL;
    }
    if (!auth)
        rc = credential_default(&cred, cs, scope, hc, lg, &tok, &exp, &e);
    else if ((rc = credential_new(&cred, kind, cs, scope, hc, lg, &e)) == 0 &&
             (rc = credential_token(cred, &tok, &exp, &e)) < 0)
        credential_free(cred);
    if (rc < 0) {
        snprintf(err, errlen, "%s%s%s", auth ? cred_kind_describe(kind) : "", auth ? ": " : "",
                 e.msg);
        return rc;
    }
    if ((rc = token_cache_new(&acct->tokens, cred, tok, exp, lg)) < 0) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    drop_shared_secrets(acct);
    log_debug(lg, "signed in with the %s, scope %s", cred_kind_describe(credential_kind(cred)),
              scope);
    return 0;
}

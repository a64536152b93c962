/* auth/token.c - one bearer token in memory, refreshed before expiry and after
 * a refusal; concurrent requests share one refresh (mutex + condvar). */
#include "auth/auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARGIN_MAX 300 /* refresh at most this long before expiry */
#define FAILURE_HOLD 5 /* seconds a failed refresh answers for */

struct token_cache {
    pthread_mutex_t lock;
    pthread_cond_t done;             /* a refresh ended; waited on with lock */
    struct credential *cred;         /* set by token_cache_new; used unlocked, by one
                                       refresh at a time (REFRESHING) */
    const struct logger *lg;         /* set by token_cache_new */
    char *token;                     /* NULL: none (or rejected); guarded by lock */
    time_t obtained, expires_at;     /* guarded by lock */
    unsigned long gen;               /* bumped with each new token; guarded by lock */
    int refreshing;                  /* one thread is fetching; guarded by lock */
    time_t failed_at;                /* last failed refresh, 0: none; guarded by lock */
    int failed_rc;                   /* guarded by lock */
    char failed_msg[1024];           /* guarded by lock */
    unsigned long fetched, failures; /* guarded by lock */
};

/* Wipe and free the current token. Lock held, or C shared with no one
 * (token_cache_free; set_token from token_cache_new): not asserted. */
static void drop_token(struct token_cache *c)
{
    if (c->token) {
        secret_str_free(c->token);
        c->token = NULL;
    }
}

/* Take TOKEN as the current one. Lock held, or C shared with no one yet
 * (token_cache_new): not asserted. */
static void set_token(struct token_cache *c, char *token, time_t now, time_t expires_at)
{
    drop_token(c);
    c->token = token;
    c->obtained = now;
    c->expires_at = expires_at;
    c->gen++;
    c->fetched++;
}

/* See auth/auth.h. */
int token_cache_new(struct token_cache **out, struct credential *cred, char *token,
                    time_t expires_at, const struct logger *lg)
{
    struct token_cache *c = calloc(1, sizeof(*c));

    *out = NULL;
    if (!c || lock_init(&c->lock) != 0) {
        free(c);
        c = NULL;
    } else if (pthread_cond_init(&c->done, NULL) != 0) {
        pthread_mutex_destroy(&c->lock);
        free(c);
        c = NULL;
    }
    if (!c) {
        credential_free(cred);
        secret_str_free(token);
        return -ENOMEM;
    }
    c->cred = cred;
    c->lg = lg;
    if (token)
        set_token(c, token, time(NULL), expires_at);
    *out = c;
    return 0;
}

/* See auth/auth.h. */
void token_cache_free(struct token_cache *c)
{
    if (!c)
        return;
    drop_token(c);
    credential_free(c->cred);
    pthread_cond_destroy(&c->done);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Is the current token usable at NOW (unexpired), and is it fresh (outside
 * its refresh margin)? Lock held. */
static int usable(const struct token_cache *c, time_t now)
{
    LOCK_HELD(&c->lock);
    return c->token && now < c->expires_at;
}

static int fresh(const struct token_cache *c, time_t now)
{
    time_t margin;

    LOCK_HELD(&c->lock);
    margin = (c->expires_at - c->obtained) / 2;
    if (margin > MARGIN_MAX)
        margin = MARGIN_MAX;
    return usable(c, now) && now < c->expires_at - margin;
}

/* Fetch a new token with the lock released; back under it, store the
 * outcome and wake the waiters. Lock held on entry and on return. Returns
 * 0 or the fetch's -errno. */
static int refresh(struct token_cache *c)
{
    struct cred_error e;
    char *tok = NULL;
    time_t exp = 0, now;
    int rc;

    LOCK_HELD(&c->lock);
    c->refreshing = 1;
    pthread_mutex_unlock(&c->lock);
    rc = credential_token(c->cred, &tok, &exp, &e);
    pthread_mutex_lock(&c->lock);
    c->refreshing = 0;
    now = time(NULL);
    if (rc == 0) {
        set_token(c, tok, now, exp);
        c->failed_at = 0;
        log_debug(c->lg, "bearer token refreshed (%s), valid for %lld s",
                  cred_kind_describe(credential_kind(c->cred)), (long long)(exp - now));
    } else {
        c->failures++;
        c->failed_at = now;
        c->failed_rc = rc;
        snprintf(c->failed_msg, sizeof(c->failed_msg), "%s", e.msg);
        log_warn(c->lg, "bearer token refresh failed: %s", e.msg);
    }
    pthread_cond_broadcast(&c->done);
    return rc;
}

/* "Authorization: Bearer ..." of the current token. Lock held. */
static int header_line(const struct token_cache *c, char **line, unsigned long *gen)
{
    LOCK_HELD(&c->lock);
    if (asprintf(line, "Authorization: Bearer %s", c->token) < 0) {
        *line = NULL;
        return -ENOMEM;
    }
    *gen = c->gen;
    return 0;
}

/* See auth/auth.h. */
int token_cache_header(struct token_cache *c, char **line, unsigned long *gen, char *err,
                       size_t errlen)
{
    int rc;

    *line = NULL;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        time_t now = time(NULL);

        if (fresh(c, now) ||
            (usable(c, now) && (c->refreshing || now - c->failed_at < FAILURE_HOLD))) {
            rc = header_line(c, line, gen);
            break;
        }
        if (c->refreshing) { /* no usable token: wait for that refresh */
            pthread_cond_wait(&c->done, &c->lock);
            continue;
        }
        if (c->failed_at && now - c->failed_at < FAILURE_HOLD) {
            rc = c->failed_rc;
            if (err && errlen)
                snprintf(err, errlen, "%s", c->failed_msg);
            break;
        }
        if (refresh(c) == 0) { /* ours, even if already near its end */
            rc = header_line(c, line, gen);
            break;
        }
        if (!usable(c, time(NULL))) {
            rc = c->failed_rc;
            if (err && errlen)
                snprintf(err, errlen, "%s", c->failed_msg);
            break;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* See auth/auth.h. */
void token_cache_rejected(struct token_cache *c, unsigned long gen)
{
    pthread_mutex_lock(&c->lock);
    if (gen == c->gen && c->token) {
        log_info(c->lg, "the service refused the bearer token as expired: fetching a new one");
        drop_token(c);
        c->failed_at = 0;
    }
    pthread_mutex_unlock(&c->lock);
}

/* See auth/auth.h. */
void token_cache_counts(struct token_cache *c, unsigned long *fetched, unsigned long *failed)
{
    pthread_mutex_lock(&c->lock);
    *fetched = c->fetched;
    *failed = c->failures;
    pthread_mutex_unlock(&c->lock);
}

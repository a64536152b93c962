/* token.h - the bearer token of a mount: one token cached in memory,
 * refreshed before it expires and at once when the service says it has;
 * concurrent requests share one refresh. */
#ifndef AZTFS_TOKEN_H
#define AZTFS_TOKEN_H

#include <stddef.h>
#include <time.h>

#include "log.h"

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
int token_cache_header(struct token_cache *c, char **line, unsigned long *gen,
                       char *err, size_t errlen);

/* The service refused the token of generation GEN as expired or invalid:
 * drop it (if it is still the current one), so the next
 * token_cache_header fetches a new one. */
void token_cache_rejected(struct token_cache *c, unsigned long gen);

/* Tokens fetched so far (the first one included) and refreshes that failed. */
void token_cache_counts(struct token_cache *c, unsigned long *fetched, unsigned long *failed);

#endif

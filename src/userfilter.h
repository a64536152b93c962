/* userfilter.h - an OData $filter written by a user (a query view's name):
 * the service's limits checked before anything is sent, and the filter
 * restricted to one partition. Part of the table protocol layer (table.h
 * includes it): the one place above the wire that composes a user's OData. */
#ifndef AZTFS_USERFILTER_H
#define AZTFS_USERFILTER_H

#include <stddef.h>

/* The Table service permits no more than 15 discrete comparisons in a
 * $filter ("Querying tables and entities", Supported query options). */
#define USERFILTER_MAX_COMPARISONS 15
/* The longest $filter, URL-encoded, that aztfs sends: well inside the
 * URL lengths HTTP servers take (8 KiB and more), with room for the path
 * and the continuation tokens. */
#define USERFILTER_MAX_ENCODED 4096

/* The comparisons (eq, ne, gt, ge, lt, le) in FILTER outside its string
 * literals ('...', with '' for a quote). */
int userfilter_comparisons(const char *filter);

/* Bytes FILTER takes once percent-encoded (everything but A-Z a-z 0-9 - .
 * _ ~ is three bytes, as table_url_encode writes it). */
size_t userfilter_encoded_len(const char *filter);

/* The $filter of a view: FILTER as it is, or with PK non-NULL
 * "PartitionKey eq 'PK' and (FILTER)". 0 with *out malloc'd; -EINVAL with
 * *why (a static string) when the result exceeds the service's
 * comparisons or aztfs's encoded length (nothing is to be sent); -ENOMEM. */
int userfilter_build(const char *pk, const char *filter, char **out, const char **why);

#endif

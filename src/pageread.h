/* pageread.h - a Query Entities page read into jansson values without
 * jansson's lexer, for the one shape the service sends. */
#ifndef AZTFS_PAGEREAD_H
#define AZTFS_PAGEREAD_H

#include <stddef.h>
#include <jansson.h>

/* The JSON text BODY (LEN bytes) as json_loadb(BODY, LEN, 0, JERR) reads
 * it: its value (new reference), or NULL with JERR saying why. A page of
 * the shape the service sends (an object of scalar members and a "value"
 * array of flat objects) is split into its tokens here, and each value is
 * made by jansson itself (json_stringn, json_integer, json_loadb of the
 * token): names and strings without escapes, numbers of up to 18 integer
 * digits and literals here, the other tokens by jansson's parser. Anything
 * else, and any token this reading does not take (an escape in a name,
 * bytes that are not UTF-8, a malformed number, trailing text, nesting),
 * makes it read the whole text with json_loadb instead: the result is
 * json_loadb's in every case. */
json_t *page_read(const char *body, size_t len, json_error_t *jerr);

#endif

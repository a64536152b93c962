/* keycodec.h - bijective mapping between Azure Table keys and file/directory names. */
#ifndef AZTFS_KEYCODEC_H
#define AZTFS_KEYCODEC_H

#include <stddef.h>

/* Longest name part the codec emits: NAME_MAX (255) minus strlen(".json"). */
#define KEYCODEC_NAME_MAX 250
/* Long-form names keep at most this many bytes of the escaped key. */
#define KEYCODEC_PREFIX_MAX 200
/* Marker that separates the prefix and the hash in a long-form name. */
#define KEYCODEC_LONG_MARK "%~"
/* Hex digits of SHA-256(key) in a long-form name. */
#define KEYCODEC_HASH_HEX 32

#define ENTITY_SUFFIX ".json"

/* Encode KEY (a NUL-terminated UTF-8 string) as a name component.
 * Rule (doc/NAMES.md):
 *  - the empty key is "%";
 *  - '%' -> "%25", '/' -> "%2F", bytes 0x00-0x1F and 0x7F -> "%XX"
 *    (upper-case hex), a '.' in first position -> "%2E";
 *  - every other byte is copied as is;
 *  - if the result is longer than KEYCODEC_NAME_MAX bytes, it is cut to its
 *    longest prefix of at most KEYCODEC_PREFIX_MAX bytes that splits neither
 *    an escape nor a UTF-8 sequence, followed by "%~" and the first 16 bytes
 *    of SHA-256(KEY) as 32 lower-case hex digits ("long form").
 * Returns a malloc'd string (caller frees) or NULL on allocation failure. */
char *keycodec_encode(const char *key);

/* Decode NAME (a name component without ".json").
 * Returns:
 *   0        and *key_out = malloc'd key, when NAME is the canonical short
 *            form of that key (i.e. keycodec_encode(key) == NAME);
 *   1        when NAME is a well-formed long-form name: the key must be found
 *            by listing and comparing keycodec_encode(candidate) == NAME;
 *            *key_out = malloc'd decoded prefix (a prefix of the real key);
 *   -EINVAL  when NAME is not a name the codec can produce (then no key maps
 *            to it; callers answer ENOENT for lookups);
 *   -ENOMEM.
 * Non-canonical spellings ("%2e", "%41", a literal leading '.') are rejected,
 * so every key has exactly one name. */
int keycodec_decode(const char *name, char **key_out);

/* Does NAME belong to KEY? (keycodec_encode(key) == name, without needing the
 * caller to free anything). Returns 1, 0, or -ENOMEM. */
int keycodec_matches(const char *key, const char *name);

/* File names: encode KEY and append ".json" / strip ".json" and decode.
 * keycodec_file_decode returns -EINVAL when NAME does not end in ".json"
 * (such names are "scratch" names, not entities), else as keycodec_decode. */
char *keycodec_file_encode(const char *key);
int keycodec_file_decode(const char *name, char **key_out);

#endif

/* names.h - the public face of the names/ folder: its parts below, each
 * with its own contract. */
#ifndef AZTFS_NAMES_NAMES_H
#define AZTFS_NAMES_NAMES_H

#include <stdint.h>
#include <stddef.h>

/* ---- path.c: FUSE paths -> (table, partition, entity) addresses, and stable inode numbers. */

enum fsp_kind {
    FSP_ROOT,      /* "/" */
    FSP_TABLE,     /* "/t" */
    FSP_PARTITION, /* "/t/pk" */
    FSP_ENTITY,    /* "/t/pk/rk.json" */
    FSP_SCRATCH,   /* "/t/pk/name" where name does not end in ".json" */
    FSP_STREAM,    /* "/t/.ndjson", "/t/pk/.ndjson": the entities as JSON lines */
    /* query views (doc/USAGE.md): ".where" under a table or a partition,
     * then a directory named by an OData filter, laid out as the table is
     * (or as the partition is, under a partition) */
    FSP_WHERE,          /* "/t/.where", "/t/pk/.where" */
    FSP_VIEW,           /* "/t/.where/F" (partitions), "/t/pk/.where/F" (entities) */
    FSP_VIEW_PARTITION, /* "/t/.where/F/pk" */
    FSP_VIEW_ENTITY,    /* "/t/.where/F/pk/rk.json", "/t/pk/.where/F/rk.json" */
    FSP_VIEW_STREAM,    /* "/t/.where/F/.ndjson"; a partition's: "/t/pk/.where/F/.ndjson",
                         * "/t/.where/F/pk/.ndjson" (pk_name set) */
};

/* The name of the hidden directory that holds a table's or a partition's views. */
#define FSP_WHERE_NAME ".where"

/* The name of a table's, a partition's or a view's export stream: read-only,
 * never listed (a key's name never starts with '.': doc/NAMES.md). */
#define FSP_STREAM_NAME ".ndjson"

/* A parsed path. Strings are malloc'd and owned; release with fspath_free. */
struct fspath {
    enum fsp_kind kind;
    char *table;     /* table name (FSP_TABLE and deeper) */
    char *pk_name;   /* partition directory name (FSP_PARTITION and deeper; a
                      * stream's when it is a partition's, else NULL) */
    char *pk;        /* decoded PartitionKey; NULL for a long-form name */
    char *file_name; /* last component (FSP_ENTITY, FSP_SCRATCH) */
    char *rk;        /* decoded RowKey (FSP_ENTITY); NULL for a long-form name */
    char *parent;    /* path of the containing directory ("/", "/t", "/t/pk") */
    /* views (FSP_WHERE and deeper); pk_name/pk/file_name/rk as above */
    int scoped;   /* ".where" is under partition pk ("/t/pk/.where") */
    char *filter; /* decoded filter text (FSP_VIEW and deeper) */
    char *view;   /* path of the view directory ("/t/.where/F") */
};

/* Parse PATH (absolute, as FUSE hands it). Returns 0 with *fp filled, or:
 *   -ENAMETOOLONG  a component is longer than NAME_MAX (255) bytes;
 *   -EINVAL        a partition or entity name stands for a key the service
 *                  refuses (keycodec_name_problem: not valid UTF-8, or '/',
 *                  '\\', '#', '?' or a control character, as is or as "%XX"),
 *                  or an entity name is ".json" alone, or a view's filter
 *                  name is not the canonical spelling of a filter text (the
 *                  key names' rule: '%' is "%25", '/' is "%2F"; not empty);
 *   -ENOENT        nothing can live at PATH: more than three components
 *                  (five in a view), a view's file not ending in ".json", not
 *                  a table name, or a partition or entity name the key codec
 *                  does not produce (a non-canonical spelling, doc/NAMES.md);
 *   -ENOMEM.
 * The first fault decides, looked for in this order: a component too long,
 * too many components, then each component from the top (EINVAL before
 * ENOENT within one). Scratch names (not ending in ".json") are held only to
 * the length limit. FSP_STREAM_NAME last, after a table, a partition, a
 * view or a view's partition, is that one's export stream (FSP_STREAM,
 * FSP_VIEW_STREAM), never a scratch file. On error *fp holds nothing to free. */
int fspath_parse(const char *path, struct fspath *fp);
void fspath_free(struct fspath *fp);

/* Why fspath_parse refuses PATH with -EINVAL or -ENAMETOOLONG, in plain words
 * for a log line ("a key must be valid UTF-8", "a name is at most 255
 * bytes", ...): a static string. NULL when fspath_parse gives PATH anything
 * else (0, -ENOENT), or cannot tell (-ENOMEM). */
const char *fspath_invalid_reason(const char *path);

/* Does PATH lie in a view or name a ".where" directory ("/t/.where...",
 * "/t/pk/.where...")? A test of the names alone, for refusing changes. */
int fspath_in_view(const char *path);

/* Does PATH name an export stream by its names: its last component
 * FSP_STREAM_NAME, not the first ("/t/.ndjson", "/t/pk/.ndjson", and in
 * views)? A test of the names alone, for refusing changes. */
int fspath_is_stream(const char *path);

/* The path of FP's entity or partition outside the view (FSP_VIEW_ENTITY:
 * "/t/pk/rk.json", FSP_VIEW_PARTITION or a scoped view: "/t/pk"), from its
 * names: malloc'd, NULL on ENOMEM. */
char *fspath_normal(const struct fspath *fp);

/* Is NAME a legal table name (^[A-Za-z][A-Za-z0-9]{2,62}$, not "Tables")? */
int fspath_valid_table_name(const char *name);

/* Stable inode number for PATH: 1 for "/", else a 64-bit hash (never 0/1). */
uint64_t fspath_ino(const char *path);

/* "PARENT/NAME" (PARENT "/" gives "/NAME"): malloc'd, NULL on ENOMEM. */
char *fspath_join(const char *parent, const char *name);

/* ---- names/keycodec.c: bijective mapping between Azure Table keys and file/directory names. */

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
 *  - '%' -> "%25", a '.' in first position -> "%2E";
 *  - '/' -> "%2F", bytes 0x00-0x1F and 0x7F -> "%XX" (upper-case hex): the
 *    service refuses keys with these (keycodec_key_problem), but should one
 *    come from it anyway, its name is still a safe single component;
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
 *            to it; callers answer ENOENT for lookups, once they have refused
 *            what keycodec_name_problem refuses);
 *   -ENOMEM.
 * Non-canonical spellings ("%2e", "%41", a literal leading '.') are rejected,
 * so every key has exactly one name. */
int keycodec_decode(const char *name, char **key_out);

/* Does NAME belong to KEY? (keycodec_encode(key) == name, without needing the
 * caller to free anything). Returns 1, 0, or -ENOMEM. */
int keycodec_matches(const char *key, const char *name);

/* Is the file name NAME ("....json") that of KEY? (keycodec_file_encode(key)
 * == name). Returns 1, 0, or -ENOMEM. */
int keycodec_file_matches(const char *key, const char *name);

/* The reasons keycodec_key_problem and keycodec_name_problem give. */
#define KEYCODEC_WHY_UTF8 "a key must be valid UTF-8"
#define KEYCODEC_WHY_CHAR "a key cannot hold a slash, a backslash, '#', '?' or a control character"

/* Can the LEN bytes at KEY be a PartitionKey or RowKey? The service refuses
 * a key that is not valid UTF-8 (KEYCODEC_WHY_UTF8), or that holds '/', '\',
 * '#', '?' or a control character U+0000-U+001F or U+007F-U+009F
 * (KEYCODEC_WHY_CHAR). Returns NULL when it can, else the reason for the
 * first problem found. The 1 KiB size limit is not checked. */
const char *keycodec_key_problem(const char *key, size_t len);

/* Does the name component NAME stand for a key that keycodec_key_problem
 * refuses? NAME is read as keycodec_decode reads it, but leniently: every '%'
 * and two hex digits of either case is the byte they spell ("%2F", "%2f",
 * "%5C", "%0A", "%00" all count), every other byte is itself. A ".json"
 * suffix may be left on: it changes nothing. Returns NULL or the reason.
 * Never refuses a name keycodec_encode or keycodec_file_encode gives for a
 * key keycodec_key_problem accepts. A name it accepts may still be one that
 * no key has (non-canonical): keycodec_decode tells. */
const char *keycodec_name_problem(const char *name);

/* File names: encode KEY and append ".json" / strip ".json" and decode.
 * keycodec_file_decode returns -EINVAL when NAME does not end in ".json"
 * (such names are "scratch" names, not entities), else as keycodec_decode. */
char *keycodec_file_encode(const char *key);
int keycodec_file_decode(const char *name, char **key_out);

#endif

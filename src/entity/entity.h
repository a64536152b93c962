/* entity.h - the public face of the entity/ folder: its parts below, each
 * with its own contract. */
#ifndef AZTFS_ENTITY_ENTITY_H
#define AZTFS_ENTITY_ENTITY_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

/* ---- edm: the Table service's Edm types, its entity limits, and the error
 * details of the entity modules: the vocabulary entity.h and the entity
 * modules' private header (entity_i.h) share. A leaf: it includes none of
 * the project's headers. */

/* The eight Edm types of the Table service. */
enum edm_type {
    EDM_STRING,
    EDM_INT32,
    EDM_INT64,
    EDM_DOUBLE,
    EDM_BOOLEAN,
    EDM_DATETIME,
    EDM_GUID,
    EDM_BINARY
};

/* Service limits enforced by the client (see TABLE-PROTOCOL-NOTES). */
#define ENTITY_MAX_PROPERTIES 252
#define ENTITY_MAX_BYTES (1024 * 1024)
#define ENTITY_MAX_PROPNAME 255
#define ENTITY_MAX_STRING_BYTES (64 * 1024) /* UTF-16 code units * 2 */
#define ENTITY_MAX_BINARY_BYTES (64 * 1024)

/* The service's limits on an entity, in one place: the ones above as a
 * value a mount can hold, since another service (Cosmos DB for Table) has
 * others. Both a file's save and an import's line are checked against
 * them (entity_check_limits) before anything is sent. */
struct entity_limits {
    size_t key_bytes;    /* a PartitionKey or RowKey, in UTF-16 bytes (2 a character) */
    size_t entity_bytes; /* the entity as the service counts it (entity_check_limits) */
    size_t properties;   /* custom properties, keys and Timestamp not counted */
    size_t name_chars;   /* a property's name */
    size_t string_bytes; /* a String's value, in UTF-16 bytes */
    size_t binary_bytes; /* a Binary's value */
};

/* Azure Table storage's: keys 1 KiB, entity 1 MiB, 252 properties, names
 * of 255 characters, String and Binary values of 64 KiB (the service's
 * "Understanding the Table service data model"). */
extern const struct entity_limits entity_limits_storage;

/* Cosmos DB for Table's, as far as they differ: items up to 2 MB (its
 * "Service quotas"); keys up to 1 KB and a RowKey up to 255 bytes, counted
 * in bytes (table/profile.c checks those), so none here. */
extern const struct entity_limits entity_limits_cosmos;

/* Details of a parse/validation failure, like jansson's json_error_t. */
struct entity_error {
    int line;           /* 1-based line in the input, 0 when unknown */
    char property[256]; /* property concerned, "" when none */
    char text[200];     /* human-readable reason */
};

/* Room for a canonical DateTime "YYYY-MM-DDThh:mm:ss.fffffffZ" and its NUL. */
#define ENTITY_DATETIME_SIZE 32

/* ---- parse.c: entities: OData wire JSON <-> the canonical, lossless file text. */

/* The system members of wire entity E, borrowed from it: NULL when absent
 * or not a string. The names of these members are written only in entity/parse.c
 * and the table protocol modules. */
enum entity_sys { ENTITY_PK, ENTITY_RK, ENTITY_TIMESTAMP, ENTITY_ETAG };
const char *entity_wire_sys(const json_t *e, enum entity_sys which);

/* Set the system members of wire entity E: PK, RK, TS (Timestamp) and ETAG,
 * each only when non-NULL. Returns 0 or -ENOMEM. */
int entity_wire_set_sys(json_t *e, const char *pk, const char *rk, const char *ts,
                        const char *etag);

/* A digest of what wire entity E holds: its custom properties with their
 * types and values (system and "odata.*" members and null values left
 * out), SHA-256 over each typed property in name order. Entities with the
 * same digest hold the same properties, types and values; a value the
 * service holds in another spelling than the one sent (a DateTime with an
 * offset) makes another digest, so equal digests may skip a write and
 * unequal ones only cost one. Returns 0, -EINVAL (not a valid wire
 * entity), -ENOMEM or -EIO. */
#define ENTITY_DIGEST_LEN 32
int entity_wire_digest(const json_t *e, unsigned char out[ENTITY_DIGEST_LEN]);

/* Name of an Edm type ("Edm.Int64"), and the reverse (-EINVAL if unknown). */
const char *edm_type_name(enum edm_type t);
int edm_type_parse(const char *name, enum edm_type *out);

/* Render an entity as received from the service (one JSON object in OData
 * minimal or full metadata: "odata.*" members are dropped, "X@odata.type"
 * annotations give X's type) as the canonical file text:
 *   - one JSON object, UTF-8, two-space indent, one member per line, a
 *     trailing newline after the closing brace;
 *   - order: PartitionKey, RowKey, Timestamp, then properties sorted by name
 *     (byte order); "Name@odata.type" on the line right after each property
 *     whose type is not String, Int32 or Boolean;
 *   - Int32 bare integer; Boolean true/false; String JSON string (non-ASCII
 *     kept as UTF-8, only '"', '\\' and control characters escaped);
 *     Double as the shortest number that reads back to the same value,
 *     always with a '.' or exponent ("2.0"), NaN/Infinity/-Infinity as
 *     strings; Int64 decimal string; DateTime in the canonical UTC form of
 *     entity_datetime_canonical(); Guid, Binary strings as received; null
 *     properties are omitted (the service does not store null).
 *   - an un-annotated JSON integer outside the Int32 range is an Int64.
 * The same entity always renders to the same bytes.
 * Returns 0 with *out malloc'd (NUL-terminated, caller frees) and *out_len its
 * length; -EINVAL (err filled) when WIRE is not an object, lacks string
 * PartitionKey/RowKey, or has a value that does not match its annotation;
 * -ENOMEM. ERR may be NULL. */
int entity_render(const json_t *wire, char **out, size_t *out_len, struct entity_error *err);

/* entity_render, and from the same pass over WIRE's properties its digest
 * (entity_wire_digest) into DIGEST when DIGEST is not NULL: *HAS_DIGEST is
 * 1, or 0 when OpenSSL could not make it (the text is returned all the
 * same). A listing renders every entity it shows this way. */
int entity_render_digest(const json_t *wire, char **out, size_t *out_len,
                         unsigned char digest[ENTITY_DIGEST_LEN], int *has_digest,
                         struct entity_error *err);

/* Append WIRE (as for entity_render) to LINE as one NDJSON line: the very
 * members of its file text (entity_render), in the same order, each name and
 * value spelled byte for byte as there, with no whitespace between tokens
 * ('{', ',' and ':' alone; the file's "{\n  ", ",\n  ", ": " and "\n}"
 * taken out), and one '\n' at its end. Returns 0, or as entity_render
 * (-EINVAL with ERR filled; -EFBIG when LINE's cap is reached, -ENOMEM),
 * LINE then as it was (its failure cleared). */
struct buf;
int entity_render_line(const json_t *wire, struct buf *line, struct entity_error *err);

/* entity_render_line of the entity whose JSON text is TEXT (LEN bytes, one
 * object, as the service sent it), without a tree where the text allows
 * (entity/textline.c): the same line appended, or the same error, as
 * json_loadb then entity_render_line give; text that is not JSON is
 * -EINVAL ("the entity is not JSON: ..."). */
int entity_render_line_text(const char *text, size_t len, struct buf *line,
                            struct entity_error *err);

/* An entity's system properties as entity_render_text found them: each
 * NULL when absent or not a string, else in BLOCK (malloc'd, the caller
 * frees it; NULL when all are). */
struct entity_keys {
    char *block;
    const char *pk, *rk, *ts, *etag;
};

/* entity_render_digest of the entity whose JSON text is TEXT (LEN bytes, one
 * object, as the service sent it), without a tree where the text allows
 * (entity/textline.c): the same text, digest and error as json_loadb then
 * entity_render_digest give (text that is not JSON is -EINVAL, "the entity
 * is not JSON: ..."); and in *KEYS, whatever the outcome, what
 * entity_wire_sys finds in that tree (all NULL for text that is not JSON,
 * or on -ENOMEM). A listing read as text renders its entities so. */
int entity_render_text(const char *text, size_t len, char **out, size_t *out_len,
                       unsigned char digest[ENTITY_DIGEST_LEN], int *has_digest,
                       struct entity_keys *keys, struct entity_error *err);

/* Parse file text written by a user into the wire-form object to send
 * (new reference, caller json_decref()s): PartitionKey, RowKey, Timestamp and
 * "odata.*" members are dropped; bare integers are Int32 (Int64 with an
 * annotation when out of range), bare reals are Double (annotated), strings,
 * booleans as is; annotated values are checked against their type (Int64
 * decimal in range, Double number or NaN/Infinity/-Infinity string,
 * Guid 8-4-4-4-12 hex, DateTime as entity_datetime_canonical() accepts it,
 * sent in its canonical UTC form, Binary valid base64); an annotation
 * without its property, or with an unknown type, is an error.
 * Errors (returned as -errno, details in *err):
 *   -EINVAL  invalid JSON, not an object, nested object/array, bad value for
 *            its type, bad property name (C# identifier rules, <= 255 chars),
 *            more than 252 properties;
 *   -EFBIG   entity over 1 MiB, String or Binary over 64 KiB;
 *   -ENOMEM.
 * KEYS_OUT (may be NULL): when non-NULL and the text carries string
 * PartitionKey/RowKey members, *pk_out and *rk_out receive malloc'd copies
 * (else NULL); needed only for keys too long for a file name. */
int entity_parse(const char *text, size_t len, json_t **wire_out, char **pk_out, char **rk_out,
                 struct entity_error *err);

/* Can the service take wire entity WIRE (entity_parse's) under keys PK and
 * RK, as LIM says? Each key: valid UTF-8 without '/', '\\', '#', '?' or a
 * control character (keycodec_key_problem), at most LIM->key_bytes in
 * UTF-16; at most LIM->properties properties, names of LIM->name_chars,
 * String and Binary values of LIM->string_bytes and LIM->binary_bytes; and
 * the entity, counted as the service does (4 bytes, the keys' characters
 * at 2 bytes each, and for each property 8 bytes, its name's characters at
 * 2 bytes, and its value: a String's characters at 2 bytes plus 4, a
 * Binary's bytes plus 4, 8 for Int64, Double and DateTime, 4 for Int32, 16
 * for a Guid, 1 for a Boolean), at most LIM->entity_bytes. Returns 0,
 * -EINVAL (a key) or -EFBIG (a size), with ERR saying which and why. */
int entity_check_limits(const struct entity_limits *lim, const json_t *wire, const char *pk,
                        const char *rk, struct entity_error *err);

/* Normalise the DateTime S to the canonical UTC form written to files and
 * sent to the service, "YYYY-MM-DDThh:mm:ss[.f]Z" (doc/FORMAT.md):
 *   accepted: YYYY-MM-DDThh:mm:ss, an optional '.' and 1 or more fraction
 *   digits, then "Z" or an offset "+hh:mm" / "-hh:mm" (00:00 to 23:59);
 *   't' and 'z' may be lower case (RFC 3339);
 *   the offset is applied (day, month and year roll over as needed); the
 *   fraction digits are kept as written (trailing zeros too), but at most 7
 *   (100 ns, the service's precision): digits past the 7th must be zeros and
 *   are dropped;
 *   refused: anything else (no time zone, a space for 'T', "+0530"), no such
 *   date or time (Feb 30, 24:00, leap second 60), a non-zero 8th fraction
 *   digit, a year outside 0001-9999 as written or once in UTC.
 * Returns 0 with OUT filled, or -EINVAL with *why (when WHY is non-NULL) set
 * to a short static reason such as "no such date". */
int entity_datetime_canonical(const char *s, char out[ENTITY_DATETIME_SIZE], const char **why);

/* Parse a DateTime (any spelling entity_datetime_canonical accepts, e.g. the
 * service's "2026-11-22T08:26:34.9118804Z") into *ts, seconds and
 * nanoseconds since the epoch, UTC. Returns 0 or -EINVAL. */
int entity_parse_datetime(const char *s, struct timespec *ts);

#endif

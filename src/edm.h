/* edm.h - the Table service's Edm types, its entity limits, and the error
 * details of the entity modules: the vocabulary entity.h and the entity
 * modules' private header (entity_int.h) share. A leaf: it includes none of
 * the project's headers. */
#ifndef AZTFS_EDM_H
#define AZTFS_EDM_H

/* The eight Edm types of the Table service. */
enum edm_type {
    EDM_STRING, EDM_INT32, EDM_INT64, EDM_DOUBLE,
    EDM_BOOLEAN, EDM_DATETIME, EDM_GUID, EDM_BINARY
};

/* Service limits enforced by the client (see TABLE-PROTOCOL-NOTES). */
#define ENTITY_MAX_PROPERTIES   252
#define ENTITY_MAX_BYTES        (1024 * 1024)
#define ENTITY_MAX_PROPNAME     255
#define ENTITY_MAX_STRING_BYTES (64 * 1024)   /* UTF-16 code units * 2 */
#define ENTITY_MAX_BINARY_BYTES (64 * 1024)

/* Details of a parse/validation failure, like jansson's json_error_t. */
struct entity_error {
    int line;             /* 1-based line in the input, 0 when unknown */
    char property[256];   /* property concerned, "" when none */
    char text[200];       /* human-readable reason */
};

/* Room for a canonical DateTime "YYYY-MM-DDThh:mm:ss.fffffffZ" and its NUL. */
#define ENTITY_DATETIME_SIZE 32

#endif

/* fspath.h - FUSE paths -> (table, partition, entity) addresses, and stable inode numbers. */
#ifndef AZTFS_FSPATH_H
#define AZTFS_FSPATH_H

#include <stdint.h>

enum fsp_kind {
    FSP_ROOT,        /* "/" */
    FSP_TABLE,       /* "/t" */
    FSP_PARTITION,   /* "/t/pk" */
    FSP_ENTITY,      /* "/t/pk/rk.json" */
    FSP_SCRATCH,     /* "/t/pk/name" where name does not end in ".json" */
    /* query views (doc/USAGE.md): ".where" under a table or a partition,
     * then a directory named by an OData filter, laid out as the table is
     * (or as the partition is, under a partition) */
    FSP_WHERE,       /* "/t/.where", "/t/pk/.where" */
    FSP_VIEW,        /* "/t/.where/F" (partitions), "/t/pk/.where/F" (entities) */
    FSP_VIEW_PARTITION,  /* "/t/.where/F/pk" */
    FSP_VIEW_ENTITY, /* "/t/.where/F/pk/rk.json", "/t/pk/.where/F/rk.json" */
};

/* The name of the hidden directory that holds a table's or a partition's views. */
#define FSP_WHERE_NAME ".where"

/* A parsed path. Strings are malloc'd and owned; release with fspath_free. */
struct fspath {
    enum fsp_kind kind;
    char *table;       /* table name (FSP_TABLE and deeper) */
    char *pk_name;     /* partition directory name (FSP_PARTITION and deeper) */
    char *pk;          /* decoded PartitionKey; NULL for a long-form name */
    char *file_name;   /* last component (FSP_ENTITY, FSP_SCRATCH) */
    char *rk;          /* decoded RowKey (FSP_ENTITY); NULL for a long-form name */
    char *parent;      /* path of the containing directory ("/", "/t", "/t/pk") */
    /* views (FSP_WHERE and deeper); pk_name/pk/file_name/rk as above */
    int scoped;        /* ".where" is under partition pk ("/t/pk/.where") */
    char *filter;      /* decoded filter text (FSP_VIEW and deeper) */
    char *view;        /* path of the view directory ("/t/.where/F") */
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
 * the length limit. On error *fp holds nothing to free. */
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

#endif

/* store/move.c - moves across partitions: can the copy after EXDEV save its target (store.h). */
#include <errno.h>
#include <stdlib.h>

#include "util/util.h"
#include "names/names.h"
#include "store/store.h"

/* TO (TF), whose partition's name is long-form: will that partition's key
 * be found by listing when the copy that follows EXDEV saves TO as a new
 * file, after mv removed the entity at TO if there is one? 1 (yes; the key
 * is put in TF->pk), 0 (the partition will hold no entity), -errno. */
static int pk_listed_then(struct store *s, struct fspath *tf, const char *to)
{
    struct cache_file f = { 0 };
    struct fspath pfp = *tf;
    int rc;

    pfp.kind = FSP_PARTITION;
    if ((rc = scan_resolve_keys(s, &pfp)) < 0)
        return rc == -ENOENT ? 0 : rc;
    tf->pk = pfp.pk;
    rc = store_load_keyed(s, tf, to, &f);
    cache_file_clear(&f);
    if (rc == -ENOENT)
        return 1; /* nothing at TO: mv removes nothing */
    return rc < 0 ? rc : store_partition_other(s, tf);
}

/* See store/store.h. */
int store_move_check(struct store *s, const char *from, struct fspath *ff, const char *to,
                     struct fspath *tf, int unsaved)
{
    struct cache_file f = { 0 };
    const char *which = NULL;
    int rc = 0;

    if (tf->pk && tf->rk)
        return 0; /* TO's name gives its keys: the text's are not read */
    if (!unsaved && (rc = store_load_keyed(s, ff, from, &f)) < 0)
        return rc;
    cache_file_clear(&f);
    /* the keys TO's name cannot give come from the text: FROM's own */
    if (!tf->rk && (unsaved || keycodec_file_matches(ff->rk, tf->file_name) != 1))
        which = "its name is long-form (doc/NAMES.md), so the copy takes its RowKey";
    else if (!tf->pk && (unsaved || keycodec_matches(ff->pk, tf->pk_name) != 1) &&
             (rc = pk_listed_then(s, tf, to)) == 0)
        which = "its partition's name is long-form (doc/NAMES.md) and the partition will "
                "hold no other entity to find that key by, so the copy takes its PartitionKey";
    if (!which)
        return rc < 0 ? rc : 0;
    failring_add(
        s->log.failures,
        &(struct failure){ "rename", from, ENOTSUP, 0, NULL,
                           "a move across partitions onto a long-form name the copy cannot save" });
    log_error(&s->log,
              "rename %s -> %s: not moved (ENOTSUP): across partitions a move is "
              "a copy, and the copy could not be saved as the target: %s from the copied "
              "text, %s; mv would fail, after removing the target if there is one. Nothing "
              "changed. Copy onto an existing target instead (cp keeps its keys) and remove "
              "the source, or save a new long-form name with its own PartitionKey and RowKey "
              "in the text",
              from, to, which, unsaved ? "a new file not yet saved" : "which holds the source's");
    return -ENOTSUP;
}

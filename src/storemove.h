/* storemove.h - moves across partitions and tables: whether the copy that
 * mv makes after EXDEV can save its target, refused before mv removes
 * anything when it cannot. Part of the store layer (storecore.h): no FUSE,
 * requests through table.h (and, to find keys by listing, scan.h). */
#ifndef AZTFS_STOREMOVE_H
#define AZTFS_STOREMOVE_H

#include "fspath.h"
#include "storecore.h"

/* A rename of entity FROM (FF) onto entity TO (TF) in another partition or
 * table is answered EXDEV, and mv then copies: it removes an entity at TO,
 * creates TO, writes FROM's text (UNSAVED: FROM is a new file not saved yet,
 * its text unknown here) and removes FROM. Would that copy's save find TO's
 * keys? A short name gives them (the text's are not read). A long-form name
 * (doc/NAMES.md) is found by listing (a RowKey never is, once mv removed its
 * entity or when there was none; a PartitionKey while the partition holds
 * another entity), else taken from the text, which carries FROM's keys.
 * 0: it would (answer EXDEV); -ENOTSUP, logged: it would fail, after mv
 * removed the target, so the rename is refused and nothing changes; -errno:
 * FROM cannot be read, a listing or query failed (logged). */
int store_move_check(struct store *s, const char *from, struct fspath *ff, const char *to,
                     struct fspath *tf, int unsaved);

#endif

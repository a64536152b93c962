/* table/pager.c - a query read page by page, as one range (table/cursor.c)
 * or, once split, as key ranges in parallel (table/split.c): the one place
 * that picks, so the cursor and the split each know only what is below
 * them (the split reads its ranges with cursors). */
#include <errno.h>
#include <stdlib.h>

#include "table/table.h"
#include "table/table_i.h"

struct table_pager {
    struct table_cursor *c;    /* owned: the query, read from here unless split */
    struct table_split *split; /* owned, NULL until table_pager_split */
    int done;                  /* the split has handed out its last page */
};

/* See table.h. */
int table_pager_new(struct table_pager **out, const char *table, const char *filter,
                    const char *select, int top)
{
    struct table_pager *p = calloc(1, sizeof(*p));
    int rc;

    *out = NULL;
    if (!p)
        return -ENOMEM;
    rc = table_cursor_new(&p->c, table, filter, select, top);
    if (rc < 0) {
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* See table.h. */
int table_pager_next(struct table_client *tc, struct table_pager *p, table_page_fn fn, void *ctx,
                     struct az_status *st)
{
    int rc;

    if (!p->split)
        return table_cursor_next(tc, p->c, fn, ctx, st);
    if (p->done)
        return 0;
    rc = table_split_next(tc, p->split, fn, ctx, st);
    p->done = rc == 0;
    return rc;
}

/* See table.h. */
void table_pager_prefetch(struct table_pager *p, int on)
{
    table_cursor_prefetch(p->c, on);
}

/* See table.h. */
int table_pager_partition(struct table_pager *p, const char *pk)
{
    return table_cursor_partition(p->c, pk);
}

/* Read P through a split of WAYS workers cutting CUTS, with PREP (may be
 * NULL), unless it is split already or pages were read (0, nothing
 * changes). Returns 0 or -ENOMEM. */
static int split_start(struct table_pager *p, int ways, enum split_cuts cuts,
                       const struct table_prep *prep)
{
    if (p->split || !table_cursor_fresh(p->c))
        return 0;
    if (prep && prep->text)
        table_cursor_text(p->c); /* before the split copies the cursor */
    return table_split_new(&p->split, p->c, ways, cuts, prep);
}

/* See table.h. */
int table_pager_split(struct table_pager *p, int ways, int one_partition,
                      const struct table_prep *prep)
{
    if (ways <= 1)
        return 0;
    return split_start(p, ways, one_partition ? SPLIT_CUT_ROWS : SPLIT_CUT_KEYS, prep);
}

/* See table.h. */
int table_pager_pipeline(struct table_pager *p, const struct table_prep *prep)
{
    return prep ? split_start(p, TABLE_PIPELINE_WAYS, SPLIT_CUT_NONE, prep) : 0;
}

/* See table.h. */
void *table_pager_page_prep(const struct table_pager *p)
{
    return p->split ? table_split_page_prep(p->split) : NULL;
}

/* See table.h. */
void table_pager_text(struct table_pager *p)
{
    table_cursor_text(p->c);
}

/* See table.h. */
void table_pager_unbounded(struct table_pager *p)
{
    table_cursor_unbounded(p->c);
}

/* See table.h. */
int table_pager_done(const struct table_pager *p)
{
    return p->split ? p->done : table_cursor_done(p->c);
}

/* See table.h. */
void table_pager_free(struct table_pager *p)
{
    if (!p)
        return;
    table_split_free(p->split);
    table_cursor_free(p->c);
    free(p);
}

/* test_inode.c - unit tests for the kernel's node ids (fs/inode.c; TAP):
 * counted as the kernel counts lookups, freed at FORGET, paths that follow
 * renames, removed names served with none. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs_i.h"
#include "tap.h"

/* The path of INO, "(stale)" or "(error)"; static buffer. */
static const char *path_is(struct fs_inodes *t, fuse_ino_t ino)
{
    static char out[256];
    char *p;
    int rc = fs_inodes_path(t, ino, &p);

    snprintf(out, sizeof(out), "%s", rc == -ESTALE ? "(stale)" : rc < 0 ? "(error)" : p);
    free(p);
    return out;
}

static void test_paths_and_counts(void)
{
    struct fs_inodes *t = fs_inodes_new();
    fuse_ino_t tab, part, file, again, found;
    char *p;

    is_str(path_is(t, FUSE_ROOT_ID), "/", "the root's path");
    ok(fs_inodes_child_path(t, FUSE_ROOT_ID, "t", &p) == 0 && strcmp(p, "/t") == 0,
       "a name in the root");
    free(p);
    ok(fs_inodes_ref(t, FUSE_ROOT_ID, "t", &tab) == 0 && tab != FUSE_ROOT_ID, "a table counted");
    ok(fs_inodes_ref(t, tab, "EU", &part) == 0, "a partition counted");
    ok(fs_inodes_ref(t, part, "r1.json", &file) == 0, "a file counted");
    is_str(path_is(t, file), "/t/EU/r1.json", "an id gives its path");
    ok(fs_inodes_child_path(t, part, "r2.json", &p) == 0 && strcmp(p, "/t/EU/r2.json") == 0,
       "a name in a directory");
    free(p);
    ok(fs_inodes_ref(t, part, "r1.json", &again) == 0 && again == file,
       "the same name is the same node");
    is_int((long)fs_inodes_count(t), 3, "three nodes");
    ok(fs_inodes_find(t, "/t/EU/r1.json", &found) == 0 && found == file, "found by path");
    ok(fs_inodes_find(t, "/", &found) == 0 && found == FUSE_ROOT_ID, "the root found");
    is_int(fs_inodes_find(t, "/t/EU/nope.json", &found), -ENOENT, "no node: ENOENT");

    fs_inodes_forget(t, file, 1);
    is_str(path_is(t, file), "/t/EU/r1.json", "one of two lookups forgotten: still there");
    fs_inodes_forget(t, part, 1); /* the directory stays while its file is counted */
    is_int((long)fs_inodes_count(t), 3, "a directory with a counted child stays");
    fs_inodes_forget(t, file, 1);
    is_int((long)fs_inodes_count(t), 1, "the file forgotten: it and its directory go");
    is_int(fs_inodes_find(t, "/t/EU", &found), -ENOENT, "the directory is gone");
    fs_inodes_forget(t, tab, 5); /* more than counted: clamped */
    is_int((long)fs_inodes_count(t), 0, "all forgotten");
    fs_inodes_forget(t, FUSE_ROOT_ID, 1);
    is_str(path_is(t, FUSE_ROOT_ID), "/", "the root is never forgotten");
    fs_inodes_free(t);
}

static void test_remove(void)
{
    struct fs_inodes *t = fs_inodes_new();
    fuse_ino_t tab, part, file, dir2, kid, fresh;

    fs_inodes_ref(t, FUSE_ROOT_ID, "t", &tab);
    fs_inodes_ref(t, tab, "EU", &part);
    fs_inodes_ref(t, part, "r1.json", &file);
    fs_inodes_remove(t, part, "r1.json");
    is_str(path_is(t, file), "(stale)", "a removed name's node has no path");
    ok(fs_inodes_ref(t, part, "r1.json", &fresh) == 0 && fresh != file,
       "the name made again is a new node");
    fs_inodes_forget(t, file, 1); /* the open file closed */
    is_str(path_is(t, fresh), "/t/EU/r1.json", "the new node keeps the name");

    fs_inodes_ref(t, tab, "US", &dir2);
    fs_inodes_ref(t, dir2, "k.json", &kid);
    fs_inodes_remove(t, tab, "US");
    is_str(path_is(t, kid), "(stale)", "a name under a removed directory is stale");
    fs_inodes_remove(t, tab, "nothing"); /* never given: nothing happens */
    /* nodes still counted at the end (a removed one among them) are freed
     * by fs_inodes_free: valgrind and LeakSanitizer check it */
    fs_inodes_free(t);
}

static void test_rename(void)
{
    struct fs_inodes *t = fs_inodes_new();
    fuse_ino_t tab, a, b, f, g, h, found;

    fs_inodes_ref(t, FUSE_ROOT_ID, "t", &tab);
    fs_inodes_ref(t, tab, "A", &a);
    fs_inodes_ref(t, tab, "B", &b);
    fs_inodes_ref(t, a, "x.json", &f);
    fs_inodes_ref(t, b, "y.json", &g);
    is_int(fs_inodes_rename(t, a, "x.json", b, "z.json", 0), 0, "rename");
    is_str(path_is(t, f), "/t/B/z.json", "the node follows the rename");
    is_int(fs_inodes_find(t, "/t/A/x.json", &found), -ENOENT, "the old name is gone");

    is_int(fs_inodes_rename(t, b, "z.json", b, "y.json", 0), 0, "rename onto a name");
    is_str(path_is(t, f), "/t/B/y.json", "the renamed node takes the name");
    is_str(path_is(t, g), "(stale)", "the replaced node has no path");

    fs_inodes_ref(t, a, "w.json", &h);
    is_int(fs_inodes_rename(t, a, "w.json", b, "y.json", 1), 0, "exchange");
    is_str(path_is(t, h), "/t/B/y.json", "exchanged: one way");
    is_str(path_is(t, f), "/t/A/w.json", "exchanged: the other");

    is_int(fs_inodes_rename(t, tab, "A", tab, "C", 0), 0, "a directory renamed");
    is_str(path_is(t, f), "/t/C/w.json", "the paths below it follow");
    is_int(fs_inodes_rename(t, tab, "never", tab, "seen", 0), 0, "a name never given: nothing");
    fs_inodes_free(t);
}

/* Enough nodes to grow the buckets several times: every one still found. */
static void test_many(void)
{
    struct fs_inodes *t = fs_inodes_new();
    enum { N = 20000 };
    fuse_ino_t dir, ids[N], found;
    char name[32], path[64];
    int bad = 0;

    fs_inodes_ref(t, FUSE_ROOT_ID, "t", &dir);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "r%05d.json", i);
        bad += fs_inodes_ref(t, dir, name, &ids[i]) != 0;
    }
    is_int((long)fs_inodes_count(t), N + 1, "20,000 nodes");
    for (int i = 0; i < N; i++) {
        snprintf(path, sizeof(path), "/t/r%05d.json", i);
        bad += fs_inodes_find(t, path, &found) != 0 || found != ids[i];
    }
    is_int(bad, 0, "each found by its path after the table grew");
    for (int i = 0; i < N; i++)
        fs_inodes_forget(t, ids[i], 1);
    is_int((long)fs_inodes_count(t), 1, "all forgotten but the directory");
    fs_inodes_free(t);
}

int main(void)
{
    test_paths_and_counts();
    test_remove();
    test_rename();
    test_many();
    return done_testing();
}

/* safefile.h - the files the daemon writes (log, metrics, journal), opened
 * so that another local user cannot redirect them: never through a symlink,
 * never blocking on a FIFO, never in a directory another user may write
 * unless the user says so (-o allow_shared_dirs).
 *
 * Ownership and the mode bits are what is checked; POSIX ACLs are not (a
 * directory whose ACL lets another user write passes): out of scope. */
#ifndef AZTFS_SAFEFILE_H
#define AZTFS_SAFEFILE_H

#include <stddef.h>
#include <sys/types.h>

/* A checked directory: FD is O_RDONLY|O_DIRECTORY|O_CLOEXEC, the directory
 * that was checked; PATH its resolved, absolute path (for messages),
 * malloc'd. A zeroed struct (PATH NULL) holds nothing. */
struct safe_dir {
    int fd;
    char *path;
};

/* Open directory PATH for files the daemon writes (a relative PATH is taken
 * from the current directory). With CREATE, missing components are created
 * 0700 (like `mkdir -p`; a missing ".." is refused). The path is resolved
 * (realpath of the longest existing prefix), then walked from "/" one
 * component at a time with openat(O_NOFOLLOW|O_DIRECTORY), so the descriptor
 * is the directory that was checked (no symlink swapped in between).
 * Unless ALLOW_SHARED:
 *  - a symlink on the way (in PATH as given) must belong to root or the
 *    effective user (the rule fs.protected_symlinks keeps in sticky
 *    directories, kept here everywhere);
 *  - every ancestor must belong to root or the effective user and be
 *    writable by no one else unless it has the sticky bit (/tmp is fine as
 *    an ancestor);
 *  - the directory itself must belong to the effective user or root and be
 *    writable by no one else (the sticky bit does not help: another user
 *    could still make a name first).
 * Returns 0 with *OUT, or -errno with WHY (one sentence naming the path,
 * what is wrong and the fix, e.g. "chmod go-w DIR", or "-o
 * allow_shared_dirs if you mean it"): -ENOENT, -ENOTDIR, -ELOOP (a symlink
 * appeared during the walk), -EACCES (a rule above), -ENOMEM, ... */
int safe_dir_open(const char *path, int create, int allow_shared, struct safe_dir *out,
                  char *why, size_t whylen);

/* Close D's descriptor and free its path; D is zeroed. A zeroed D: nothing. */
void safe_dir_close(struct safe_dir *d);

/* Split the file path PATH ("DIR/NAME", possibly relative: taken from the
 * current directory now) into *DIR (absolute, malloc'd) and *NAME (its
 * last component, malloc'd). Returns 0, -EINVAL (empty, ends in '/', ".",
 * ".."), -ENOMEM or the errno of getcwd. */
int safe_path_split(const char *path, char **dir, char **name);

/* The directory of the file PATH opened with safe_dir_open (CREATE 0: it
 * must exist) and the file's name: safe_path_split, then safe_dir_open.
 * Returns 0 with *DIR and *NAME (malloc'd), or -errno with WHY. */
int safe_parent_open(const char *path, int allow_shared, struct safe_dir *dir, char **name,
                     char *why, size_t whylen);

/* Open NAME (no '/') in D with FLAGS (O_RDONLY/O_WRONLY/O_RDWR, optionally
 * O_CREAT, O_EXCL, O_APPEND, O_TRUNC; other flags are ignored) and MODE:
 * always O_NOFOLLOW (a symlink is refused), O_NONBLOCK while opening (a FIFO
 * or device never blocks; then refused as not a regular file) then cleared,
 * O_CLOEXEC, O_NOCTTY; O_TRUNC is applied only after the checks
 * (ftruncate). The file must be a regular file with one link, owned by the
 * effective user, and writable by no one else (group/other read is
 * allowed: a metrics file is 0644). These checks hold whatever
 * allow_shared_dirs says. Returns the descriptor, or -errno with WHY:
 * -ELOOP (a symlink), -EINVAL (not a regular file, or a bad NAME), -EMLINK
 * (more than one link), -EACCES (owner or mode), or open's errno. */
int safe_open(const struct safe_dir *d, const char *name, int flags, mode_t mode, char *why,
              size_t whylen);

/* A new temporary file beside NAME in D for write-then-rename: a random
 * name "NAME.tmp-XXXXXX" (OpenSSL RAND_bytes, another name on EEXIST, at
 * most 100 tries), created O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC with
 * MODE (before the umask), so nothing planted at any name is ever opened.
 * *TMP gets the name (malloc'd). Returns the descriptor, or -errno (-EEXIST
 * after 100 taken names). */
int safe_tmp(const struct safe_dir *d, const char *name, mode_t mode, char **tmp);

/* Is NAME in D still the file open as FD (same st_dev and st_ino, checked
 * with fstatat(AT_SYMLINK_NOFOLLOW))? 1, 0 (removed or replaced), or
 * -errno. */
int safe_same_file(const struct safe_dir *d, const char *name, int fd);

#endif

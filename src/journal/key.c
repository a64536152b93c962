/* journal/key.c - the journal's key, NAME.key beside it: read (exactly 64
 * hex digits and a newline, readable by its owner only), or made at the
 * first open (32 random bytes, 0600), or refused when the journal holds
 * keyed records and the key is gone. The records' MACs are
 * journal/record.c's; the file, journal/journal.c's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "util/util.h"
#include "journal/journal_i.h"

/* The value of hex digit C, or -1. */
static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Read J's key from FD (its key file, checked): exactly 64 lowercase hex
 * digits and a newline. Returns 0 or -errno (logged). */
static int read_key(struct journal *j, int fd)
{
    char hex[2 * JOURNAL_KEY_LEN + 2];
    struct stat st;
    ssize_t n;
    int ok;

    if (fstat(fd, &st) < 0 || (st.st_mode & 077)) {
        log_error(j->lg,
                  "journal key %s/%s is readable by group or others: anyone who "
                  "reads it can write records the mount would apply; run chmod 600 on it",
                  j->dir.path, j->key_name);
        return -EACCES;
    }
    n = pread(fd, hex, sizeof(hex), 0);
    ok = n == 2 * JOURNAL_KEY_LEN + 1 && hex[2 * JOURNAL_KEY_LEN] == '\n';
    for (int i = 0; ok && i < JOURNAL_KEY_LEN; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);

        if ((ok = hi >= 0 && lo >= 0))
            j->key[i] = (unsigned char)(hi << 4 | lo);
    }
    OPENSSL_cleanse(hex, sizeof(hex));
    if (!ok) {
        log_error(j->lg,
                  "journal key %s/%s is not 64 hex digits and a newline: the "
                  "journal's records cannot be checked (move the journal and its key away "
                  "to start afresh)",
                  j->dir.path, j->key_name);
        return -EINVAL;
    }
    return 0;
}

/* Does the journal file FD hold keyed records (its first line "MAC " of
 * the keyed format)? */
static int holds_keyed(int fd)
{
    char head[JREC_MAC_HEX + 1];

    if (pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) || head[JREC_MAC_HEX] != ' ')
        return 0;
    for (int i = 0; i < JREC_MAC_HEX; i++)
        if (hex_value(head[i]) < 0)
            return 0;
    return 1;
}

/* Make J's key (its key file did not exist): 32 random bytes, written
 * 0600 as 64 hex digits, with j->legacy set (a journal without a key is
 * of the unkeyed format). A journal whose records are keyed has lost its
 * key: refused. Returns 0 or -errno (logged). */
static int make_key(struct journal *j)
{
    char why[512], hex[2 * JOURNAL_KEY_LEN + 2];
    int fd, rc = 0;

    if (holds_keyed(j->fd)) {
        log_error(j->lg,
                  "journal %s holds records made with the key %s/%s, which is gone: "
                  "they cannot be checked, so none is sent. Put the key back, or move the "
                  "journal away to start afresh",
                  j->path, j->dir.path, j->key_name);
        return -ENOKEY;
    }
    if (RAND_bytes(j->key, JOURNAL_KEY_LEN) != 1)
        return -EIO;
    for (int i = 0; i < JOURNAL_KEY_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", j->key[i]);
    hex[2 * JOURNAL_KEY_LEN] = '\n';
    fd = safe_open(&j->dir, j->key_name, O_WRONLY | O_CREAT | O_EXCL, 0600, why, sizeof(why));
    if (fd < 0)
        rc = fd;
    else if ((rc = safe_pwrite_all(fd, hex, 2 * JOURNAL_KEY_LEN + 1, 0)) == 0 && fsync(fd) < 0)
        rc = -errno;
    if (fd >= 0)
        close(fd);
    OPENSSL_cleanse(hex, sizeof(hex));
    if (rc == 0)
        rc = fsync(j->dir.fd) < 0 ? -errno : 0; /* the new file made durable */
    if (rc < 0)
        log_error(j->lg, "journal key %s/%s cannot be made: %s", j->dir.path, j->key_name,
                  fd < 0 ? why : strerror(-rc));
    j->legacy = 1;
    return rc;
}

/* See journal_i.h. */
int journal_load_key(struct journal *j)
{
    char why[512];
    int fd = safe_open(&j->dir, j->key_name, O_RDONLY, 0, why, sizeof(why)), rc;

    if (fd == -ENOENT)
        return make_key(j);
    if (fd < 0) {
        log_error(j->lg, "journal key: %s", why);
        return fd;
    }
    rc = read_key(j, fd);
    close(fd);
    return rc;
}

/* fs/stream.c - FUSE callbacks for streams (/t/.ndjson, /t/pk/.ndjson, a
 * view's .ndjson): stat, open, read (export), write and flush (import)
 * (fs_i.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "fs/fs_i.h"
#include "store/store.h"
#include "stream/stream.h"

/* See fs_i.h. */
int fs_stream_attr(struct aztfs *a, const char *path, struct fspath *fp, struct stat *st)
{
    struct timespec now;
    int rc = export_exists(&a->store, fp);

    if (rc == -ENOENT && fp->kind == FSP_STREAM && fp->pk_name &&
        scratch_is_dir(a->scratch, fp->parent))
        rc = 0; /* a partition made with mkdir, nothing in it yet: an empty stream */
    if (rc < 0)
        return rc;
    clock_gettime(CLOCK_REALTIME, &now);
    fs_fill_file_stat(a, path, 0, now, st);
    st->st_mode = S_IFREG | (a->file_mode & (fp->kind == FSP_STREAM ? 0666 : 0444));
    st->st_nlink = 1;
    return 0;
}

/* See fs_i.h. */
int fs_stream_open(struct aztfs *a, const char *path, struct fspath *fp, struct fuse_file_info *fi)
{
    struct open_file *of;
    int rc, mode = fi->flags & O_ACCMODE;

    if (mode != O_RDONLY && fp->kind != FSP_STREAM)
        return fs_refuse("write", path);
    if (mode == O_RDWR) {
        log_error(&a->store.log,
                  "open %s: a stream is read (export) or written (import), "
                  "not both",
                  path);
        return -EINVAL;
    }
    if (mode == O_RDONLY && (fi->flags & O_TRUNC))
        return fs_refuse("truncate", path);
    if (!(of = fs_open_file_new()))
        return -ENOMEM;
    if (mode == O_RDONLY)
        rc = export_open(&a->store, fp, path, &of->stream);
    else
        rc = import_open(&a->store, fp, path, !!(fi->flags & O_APPEND), &of->import);
    if (rc < 0) {
        fs_open_file_free(of);
        return rc;
    }
    of->kind = mode == O_RDONLY ? FS_EXPORT : FS_IMPORT;
    fs_attach(fi, of, path);
    fi->noflush = mode == O_RDONLY; /* an export has nothing to commit at close */
    /* An export is read in order, as a pipe is: lseek, pread and sendfile
     * at an offset fail with ESPIPE, which makes shutil.copyfile fall back
     * to reads (the kernel would splice it from the page cache, up to the
     * size 0 stat shows: an empty copy) and dd skip= read and drop. */
    fi->nonseekable = mode == O_RDONLY;
    return 0;
}

/* --- the export's and the import's kinds (fs_i.h) -------------------------------------- */

static int export_file_read(const char *path, struct open_file *of, char *buf, size_t size,
                            off_t off)
{
    (void)path;
    return export_read(of->stream, buf, size, (unsigned long long)off);
}

/* Attributes by name; read-only: nothing to write, commit or cut. */
const struct fs_file_kind fs_kind_export = {
    .read = export_file_read,
};

static int import_file_write(const char *path, struct open_file *of, const char *buf, size_t size,
                             off_t off)
{
    (void)path;
    return import_write(of->import, buf, size, (unsigned long long)off);
}

/* A close of one copy of the descriptor, or an fsync: every line ended so
 * far applied, or the stream's failure (import_flush); the release ends
 * the stream (import_free, with the handle). */
static int import_file_flush(const char *path, struct open_file *of)
{
    (void)path;
    return import_flush(of->import);
}

/* '>' on an import stream: it holds no bytes, nothing to cut; any other
 * length is a change a stream does not take. */
static int import_file_truncate(const char *path, struct open_file *of, off_t size)
{
    (void)of;
    return size == 0 ? 0 : fs_refuse("truncate", path);
}

/* Attributes: as an entity's handle (a new file of size 0 while open). */
const struct fs_file_kind fs_kind_import = {
    .attr = fs_handle_attr,
    .write = import_file_write,
    .truncate = import_file_truncate,
    .flush = import_file_flush,
    .fsync = import_file_flush,
};

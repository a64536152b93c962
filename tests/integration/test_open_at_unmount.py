"""Files still open when the mount ends (issue 29, item 13).

The kernel sends RELEASE for a closed file in the background: close(2)
does not wait for it, so an unmount can come first, and ending the
connection drops the requests aztfs has not read (libfuse 3.14 also drops
one a worker read as the session ended). SIGTERM ends the session with
files still open, so their RELEASE never comes at all. Either way aztfs
frees those handles at exit: under the ASan build, a handle left behind is
a LeakSanitizer report at the unmount (the mounter fixture fails the test
on one, and so do these tests)."""

import os
import re
import signal
import subprocess
import time

from conftest import sanitizer_report, stderr_excerpt
from test_write import p, seeded_mount

T = "openAtEnd"
ENTITIES = [{"PartitionKey": "p", "RowKey": rk, "v": rk} for rk in ("r", "w")]


def assert_clean_exit(m, statuses=(0,)):
    """M's aztfs has exited with one of STATUSES, without a sanitizer report."""
    m.proc.wait(timeout=15)
    err = m.unmount(check=False)
    assert not sanitizer_report(err), stderr_excerpt(err)
    assert m.exit_status in statuses, (m.exit_status, stderr_excerpt(err, 3000))


def stopped(pid):
    """Has every thread of process PID stopped (state T)? kill(2) only
    sends SIGSTOP: a thread may still read one more request."""
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
            if f.read().rsplit(")", 1)[1].split()[0] != "T":
                return False
    return True


def test_release_queued_at_unmount_is_freed(sdk, seed, mounter):
    """The race CI met, made certain: aztfs is stopped, so the RELEASE of
    a file just closed waits in the kernel when the unmount drops it."""
    m, _ = seeded_mount(sdk, seed, mounter, T, ENTITIES)
    fd = os.open(p(m, T, "p", "r.json"), os.O_RDONLY)
    assert b'"v": "r"' in os.read(fd, 4096)
    os.kill(m.proc.pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 10
        while not stopped(m.proc.pid):
            assert time.monotonic() < deadline, "aztfs did not stop"
            time.sleep(0.01)
        os.close(fd)        # no FLUSH for a read-only handle: RELEASE is queued
        r = subprocess.run(["fusermount3", "-u", str(m)], capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr
    finally:
        os.kill(m.proc.pid, signal.SIGCONT)
    assert_clean_exit(m)


def test_files_open_at_sigterm_are_freed(sdk, seed, mounter):
    """Each kind of handle, open when SIGTERM ends the mount: an entity
    read, an entity written and not saved, a new file, a scratch file, a
    file of a query view, a table's and a partition's export stream."""
    m, _ = seeded_mount(sdk, seed, mounter, T, ENTITIES)
    d = p(m, T, "p")
    view = p(m, T, "p", ".where", "v eq 'r'", "r.json")
    fds = [os.open(os.path.join(d, "r.json"), os.O_RDONLY),
           os.open(os.path.join(d, "w.json"), os.O_RDWR),
           os.open(os.path.join(d, "new.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL),
           os.open(os.path.join(d, "notes.tmp"), os.O_RDWR | os.O_CREAT | os.O_EXCL),
           os.open(view, os.O_RDONLY),
           os.open(p(m, T, ".ndjson"), os.O_RDONLY),
           os.open(p(m, T, "p", ".ndjson"), os.O_RDONLY)]
    try:
        os.write(fds[1], b'{"v": "unsaved"}')
        os.write(fds[2], b'{"v": "new"}')
        os.write(fds[3], b"scratch")
        assert b'"v": "r"' in os.read(fds[4], 4096)
        assert os.read(fds[5], 19) == b'{"PartitionKey":"p"'   # its query under way
        assert b'"v":"r"' in os.read(fds[6], 4096)
        m.proc.send_signal(signal.SIGTERM)
        assert_clean_exit(m, (0, 1))
    finally:
        for fd in fds:
            try:
                os.close(fd)        # the connection is gone: ENOTCONN
            except OSError:
                pass


# On libfuse's low-level API (fs/lowlevel.c) every directory handle the
# kernel holds is aztfs's own (before, libfuse's high-level API kept a
# struct fuse_dh of its own per open directory, freed only by RELEASEDIR,
# and leaked it when the session ended with directories open). So the
# report must hold no leak at all, libfuse's included.
LEAK = re.compile(r"(Direct|Indirect) leak of \d+ byte\(s\) in \d+ object\(s\) allocated")


def test_directories_open_at_sigterm_are_freed(sdk, seed, mounter):
    """Each kind of directory handle, open and read when SIGTERM ends the
    mount: the root, a table (its partitions fetched ahead), a partition, a
    query view and its .where. Before, aztfs leaked its own handle of each
    (and its scan, listings and cursors)."""
    t = seed.table(sdk, T)
    for e in ENTITIES:
        t.create_entity(e)
    m = mounter.mount(env_extra={
        "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:malloc_context_size=2"})
    dirs = [str(m), p(m, T), p(m, T, "p"), p(m, T, ".where", "v eq 'r'"),
            p(m, T, "p", ".where")]
    fds = [os.open(d, os.O_RDONLY | os.O_DIRECTORY) for d in dirs]
    try:
        for fd in fds:
            os.listdir(fd)                      # readdir through the handle
        m.proc.send_signal(signal.SIGTERM)
        m.proc.wait(timeout=15)
        err = m.unmount(check=False)
        assert m.exit_status in (0, 1), (m.exit_status, stderr_excerpt(err, 3000))
        assert not LEAK.search(err), stderr_excerpt(err)
        assert "runtime error:" not in err and "AddressSanitizer:" not in \
            err.replace("SUMMARY: AddressSanitizer:", ""), stderr_excerpt(err)
    finally:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass

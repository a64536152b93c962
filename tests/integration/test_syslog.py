"""The mount's line and the exit line reach syslog, the destination of a
daemon started without -f (doc/OPERATIONS.md, "Logging"). glibc's syslog()
writes to /dev/log, so the daemon runs in a mount namespace of its own
(unshare -m: root only) whose /dev holds the test's datagram socket as
/dev/log, and /dev/fuse and /dev/null; the test reads what arrives."""

import os
import socket
import subprocess

import pytest

from harness import aztfs_binary, aztfs_env

T = "syslogT"

SCRIPT = r'''
set -e
mount -t tmpfs -o mode=755 aztfs-test-dev /dev
mknod -m 666 /dev/fuse c 10 229
mknod -m 666 /dev/null c 1 3
touch /dev/log
mount --bind "$SOCK" /dev/log
"$AZTFS" "$MNT"
ls "$MNT/$TABLE" > /dev/null
umount "$MNT"
'''


@pytest.fixture
def table(sdk, seed):
    t = seed.table(sdk, T)
    t.upsert_entity({"PartitionKey": "p", "RowKey": "r", "v": 1})
    return t


def test_the_mount_and_exit_lines_reach_syslog(table, azurite, tmp_path):
    if os.geteuid() != 0:
        pytest.fail("unshare -m needs root: syslog cannot be checked")
    sock_path = str(tmp_path / "log.sock")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock_path)
    s.settimeout(30)
    try:
        env = aztfs_env(azurite.conn_str, {"SOCK": sock_path, "AZTFS": str(aztfs_binary()),
                                           "MNT": str(mnt), "TABLE": T})
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", SCRIPT],
                           env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        lines = []
        while not any("exiting with status" in l for l in lines):
            lines.append(s.recv(65536).decode(errors="replace"))
    finally:
        s.close()
    text = "\n".join(lines)
    # <daemon.info> is <30>; the identifier and the pid come first
    mounted = [l for l in lines if "mounted %s" % mnt in l and "unmounted" not in l]
    assert mounted and mounted[0].startswith("<30>") and "aztfs[" in mounted[0], text
    last = lines[-1]
    assert last.startswith("<30>") and "aztfs[" in last, text
    assert ("unmounted %s, exiting with status 0: " % mnt) in last, text
    assert "changes left in the journal" in last, text

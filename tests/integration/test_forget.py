"""Memory per file stays bounded (doc/OPERATIONS.md, "Memory"): the
kernel keeps at most `-o forget_after=N` of the names aztfs gave it (and
what is in use): past that aztfs tells it the oldest are stale; the kernel
drops the unused ones, forgets their inodes, and libfuse frees its nodes. Checked here on the kernel's side (the
fuse_inode objects in /proc/slabinfo, which need root) and for what a user
sees: walks, an rsync backup and its incremental rerun, an open file and a
shell whose directory is inside the table all work while it forgets.
bench/scale.py measures the daemon's memory at 100k and 1M entities."""

import json
import os
import re
import subprocess
import time

import pytest

T = "forgetT"
PARTS = 3
PER = 400


@pytest.fixture(scope="module")
def table(sdk, seed):
    t = seed.table(sdk, T)
    seed.insert(t, [{"PartitionKey": "p%d" % p, "RowKey": "r%04d" % i, "v": i}
                    for p in range(PARTS) for i in range(PER)])
    return t


SHRINK = "/sys/kernel/slab/fuse_inode/shrink"


def fuse_inodes():
    """Active fuse_inode objects, kernel-wide. The slab is shrunk first:
    objects freed into a CPU's cache count as active until then (measured
    here: 217 "active" with no mount alive, 37 after the shrink)."""
    try:
        with open(SHRINK, "w") as f:
            f.write("1")
    except OSError:
        pass                            # not SLUB, or not root: read as it is
    try:
        with open("/proc/slabinfo") as f:
            for line in f:
                if line.startswith("fuse_inode "):
                    return int(line.split()[1])
    except PermissionError:
        pytest.fail("/proc/slabinfo needs root: the kernel's side cannot be checked")
    pytest.fail("no fuse_inode cache in /proc/slabinfo (merged into another?)")


def mount_nodes(mnt):
    """The node ids aztfs holds for the kernel ("nodes" of user.aztfs.stats)."""
    return json.loads(os.getxattr(str(mnt), "user.aztfs.stats"))["nodes"]


def walk(mnt, sh):
    """find and grep -r over the table: every file stat'ed and read."""
    root = os.path.join(str(mnt), T)
    n = len(sh(["find", root, "-type", "f"]).lines())
    r = subprocess.run(["grep", "-r", "-c", '"v"', root], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return n, len(r.stdout.splitlines())


def settled():
    """fuse_inodes() once two readings half a second apart agree (inodes
    are freed after an RCU grace period), or after 5 s."""
    last = fuse_inodes()
    for _ in range(10):
        time.sleep(0.5)
        now = fuse_inodes()
        if now == last:
            break
        last = now
    return last


def held_by(mnt):
    """Unmount MNT and return the fuse_inode objects it held: the count
    before its unmount less the count after (all of its inodes go then),
    each settled. The two readings are a second or two apart, so other
    mounts' inodes coming and going in the meantime (the count is
    kernel-wide) barely move the difference; a count from before the walk
    would carry all of theirs during it."""
    during = settled()
    mnt.unmount()
    return during - settled()


@pytest.mark.parametrize("loop", ["", ",clone_fd"])
def test_the_kernel_forgets_what_a_walk_named(table, mounter, sh, loop):
    kept = mounter.mount(options=["-o", "forget_after=0" + loop])
    assert walk(kept, sh) == (PARTS * PER, PARTS * PER)
    nodes_kept = mount_nodes(kept)
    held_kept = held_by(kept)

    mnt = mounter.mount(options=["-o", "forget_after=100,loglevel=debug" + loop])
    before = fuse_inodes()
    assert walk(mnt, sh) == (PARTS * PER, PARTS * PER)
    # the forget thread tells the kernel on its own time (under ASan it
    # lags the walk by a round or two): what it holds once it caught up
    deadline = time.monotonic() + 10
    while fuse_inodes() - before > 250 and time.monotonic() < deadline:
        time.sleep(0.5)
    log = mnt.stderr()
    rounds = re.findall(r"debug: the kernel holds more than 100 names: told to drop \d+ of them",
                        log)
    deadline = time.monotonic() + 10   # the kernel's FORGETs come after it dropped them
    while mount_nodes(mnt) > 250 and time.monotonic() < deadline:
        time.sleep(0.2)
    nodes = mount_nodes(mnt)
    held = held_by(mnt)
    assert held_kept >= 0.8 * PARTS * PER, "without forgetting the kernel kept %d" % held_kept
    # aztfs's node table follows the kernel's FORGETs (fs/inode.c)
    assert nodes_kept >= PARTS * PER, "without forgetting aztfs kept %d nodes" % nodes_kept
    assert nodes <= 250, "aztfs kept %d nodes with forgetting" % nodes
    assert len(rounds) >= 5, log[-3000:]
    # 100 names, the batch past them (12), the directories, the root
    assert held <= 250, "held %d inodes with forgetting, %d without:\n%s" % (
        held, held_kept, "\n".join(l for l in log.splitlines() if "told" in l)[-2000:])
    print("fuse_inode objects after the walk: %d without forgetting, %d with (%d rounds)"
          % (held_kept, held, len(rounds)))


def test_work_goes_on_while_the_kernel_forgets(table, mounter, sh, tmp_path):
    mnt = mounter.mount(options=["-o", "forget_after=50,loglevel=debug"])
    root = os.path.join(str(mnt), T)
    held = open(os.path.join(root, "p1", "r0007.json"))
    inside = subprocess.Popen(["sh", "-c", "read x; ls | wc -l; cat r0003.json"],
                              cwd=os.path.join(root, "p2"), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    backup = tmp_path / "backup"
    sh(["rsync", "-a", "--modify-window=-1", root + "/", str(backup) + "/"])
    again = sh(["rsync", "-a", "--modify-window=-1", "--itemize-changes", root + "/",
                str(backup) + "/"])
    out, _ = inside.communicate("go\n", timeout=60)
    text = held.read()
    held.close()
    rounds = len(re.findall(r"told to drop \d+ of them", mnt.stderr()))
    mnt.unmount()
    assert rounds >= 10, rounds
    assert again.stdout.strip() == "", "the second rsync found changes:\n" + again.stdout
    files = sorted(os.path.relpath(os.path.join(d, f), str(backup))
                   for d, _, fs in os.walk(str(backup)) for f in fs)
    assert files == sorted("p%d/r%04d.json" % (p, i) for p in range(PARTS) for i in range(PER))
    for e in table.query_entities("RowKey eq 'r0100'"):  # one per partition
        assert '"v": 100' in (backup / e["PartitionKey"] / "r0100.json").read_text()
    assert '"RowKey": "r0007"' in text
    lines = out.splitlines()
    assert lines[0] == str(PER) and '"RowKey": "r0003"' in out, out


def mounted_at(path):
    """Is PATH a mount point in /proc/self/mountinfo (field 5, with its
    octal escapes)?"""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            where = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if where == path:
                return True
    return False


# What a shell whose working directory is inside the mount runs at each
# line it reads: getcwd(3) first (coreutils' pwd, when it fails, finds the
# path by walking "..", which looks the name up again), make (getcwd too),
# a new bash (shell-init's getcwd), the builtin pwd, then /bin/pwd -P.
CWD_CHECKS = r"""
while read x; do
    printf 'getcwd=%s\n' "$(python3 -c 'import os; print(os.getcwd())' 2>&1 | tail -n 1)"
    printf 'make=%s\n' "$(make -s -f "$MK" 2>&1 | tr '\n' ' ')"
    printf 'cd=%s\n' "$(bash -c 'cd . && pwd' 2>&1 | tr '\n' ' ')"
    printf 'builtin=%s\n' "$(pwd 2>&1)"
    printf 'pwd=%s\n' "$(/bin/pwd -P 2>&1)"
done
"""


def cwd_report(proc):
    """Run CWD_CHECKS in PROC (a shell waiting on its stdin): {what: output}."""
    proc.stdin.write("go\n")
    proc.stdin.flush()
    out = {}
    while len(out) < 5:
        k, _, v = proc.stdout.readline().rstrip("\n").partition("=")
        out[k] = v
    return out


def test_names_in_use_are_never_forgotten(table, sdk, seed, mounter, sh, tmp_path):
    """Issue 46, item 6: telling the kernel a directory's name is stale
    (FUSE_NOTIFY_INVAL_ENTRY: d_invalidate) unhashed a shell's working
    directory (getcwd: ENOENT, make: "getcwd: No such file or directory",
    /proc/PID/cwd "(deleted)") and detached a file system mounted inside
    the tree, while a walk of another table made the kernel forget. A cwd,
    a mount point and an open directory are never forgotten now."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    u = seed.table(sdk, "forgetCwd")
    seed.insert(u, [{"PartitionKey": pk, "RowKey": "r%d" % i, "v": i}
                    for pk in ("p7", "m", "o") for i in range(3)])
    mk = tmp_path / "Makefile"
    mk.write_text("all:\n\t@echo \"made in $(CURDIR)\"\n")
    mnt = mounter.mount(options=["-o", "forget_after=50,loglevel=debug"])
    cwd = os.path.join(str(mnt), "forgetCwd", "p7")
    inside = subprocess.Popen(
        ["bash", "-c", CWD_CHECKS], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, env=dict(os.environ, MK=str(mk), LC_ALL="C"))
    target = os.path.join(str(mnt), "forgetCwd", "m")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "aztfs-test", target], check=True)
    opened = os.open(os.path.join(str(mnt), "forgetCwd", "o"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        want = {"getcwd": cwd, "make": "made in %s " % cwd, "cd": cwd + " ", "builtin": cwd,
                "pwd": cwd}
        assert cwd_report(inside) == want
        with open(os.path.join(target, "f"), "w") as f:
            f.write("on tmpfs")
        assert walk(mnt, sh) == (PARTS * PER, PARTS * PER)     # another table
        rounds = len(re.findall(r"told to drop \d+ of them", mnt.stderr()))
        assert rounds >= 10, rounds
        # what the kernel shows before anything looks the names up again
        assert os.readlink("/proc/%d/cwd" % inside.pid) == cwd
        assert cwd_report(inside) == want
        assert mounted_at(target), "the tmpfs was detached"
        assert os.listdir(target) == ["f"]
        assert sorted(os.listdir("/proc/self/fd/%d" % opened)) == ["r0.json", "r1.json",
                                                                   "r2.json"]
        assert os.readlink("/proc/self/fd/%d" % opened).endswith("/forgetCwd/o")
        again = subprocess.Popen(["find", os.path.join(str(mnt), T)],   # and during a walk
                                 stdout=subprocess.DEVNULL)
        assert cwd_report(inside) == want
        assert again.wait(120) == 0
        assert os.readlink("/proc/%d/cwd" % inside.pid) == cwd
        assert cwd_report(inside) == want
        assert mounted_at(target)
        assert re.search(r"told to drop \d+ of them \(\d+ it still had\); [1-9]\d* in use kept",
                         mnt.stderr())
    finally:
        os.close(opened)
        inside.kill()
        inside.wait(30)
        r = subprocess.run(["umount", target], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert not mounted_at(target)
    mnt.unmount()

"""The write-behind journal's files (issue 29, items 5 and 9): the journal
directory must be the mounter's and writable by no one else (unless -o
allow_shared_dirs), the journal, its key and its lock are never opened
through a symlink nor taken from another user, a record the journal's
mounts did not write is never applied, and a journal or lock file removed
while mounted is made again before anything more is acknowledged.
Checked through the official SDK."""

import os
import signal
import subprocess

from harness import aztfs_env, unmount_path
from test_writeback import (empty_journal, entities, journal_op, journal_record, pending,
                            put, wb_options)

NOBODY = 65534


def refused(aztfs_run, azurite, opts, mp):
    """Run a mount that must be refused: its stderr."""
    res = aztfs_run(["-f"] + opts + [str(mp)], aztfs_env(azurite.conn_str))
    assert res.returncode != 0, res
    assert not os.path.ismount(str(mp))
    return res.stderr


def kill_mount(mnt):
    mnt.proc.send_signal(signal.SIGKILL)
    mnt.proc.wait(10)
    unmount_path(str(mnt))
    mnt.closed = True


def test_journal_removed_while_mounted_is_written_again(sdk, seed, mounter, tmp_path):
    """Item 9: changes acknowledged after an `rm` of the journal used to be
    lost at kill -9 + remount (they went to the unlinked file)."""
    t = seed.table(sdk, "wbGone")
    opts, _ = wb_options(tmp_path)
    mnt = mounter.mount(options=opts)
    pdir = os.path.join(str(mnt), "wbGone", "p")
    os.mkdir(pdir)
    put(os.path.join(pdir, "a.json"), {"v": 1})
    jpath = pending(mnt)["journal"]
    os.unlink(jpath)
    put(os.path.join(pdir, "b.json"), {"v": 2})
    put(os.path.join(pdir, "c.json"), {"v": 3})
    assert os.path.exists(jpath)                # made again before b was acknowledged
    assert "was removed or replaced while this mount uses it" in mnt.stderr()
    kill_mount(mnt)
    assert entities(t) == {}
    mnt2 = mounter.mount(options=opts)
    assert entities(t) == {"a": 1, "b": 2, "c": 3}
    mnt2.unmount()


def test_lock_removed_while_mounted_still_keeps_a_second_mount_out(sdk, seed, mounter,
                                                                   aztfs_run, azurite,
                                                                   tmp_path):
    """Item 9: a removed lock file used to let a second mount share the
    journal."""
    seed.table(sdk, "wbLock")
    opts, _ = wb_options(tmp_path)
    mnt = mounter.mount(options=opts)
    jpath = pending(mnt)["journal"]
    os.unlink(jpath + ".lock")
    pdir = os.path.join(str(mnt), "wbLock", "p")
    os.mkdir(pdir)
    put(os.path.join(pdir, "a.json"), {"v": 1})   # its flush takes the lock again
    assert os.path.exists(jpath + ".lock")
    assert "was removed while this mount uses it: taken again" in mnt.stderr()
    mp = tmp_path / "second"
    mp.mkdir()
    err = refused(aztfs_run, azurite, opts, mp)
    assert "another aztfs process is using it" in err, err


def test_journal_dir_others_may_write_is_refused(sdk, seed, mounter, aztfs_run, azurite,
                                                 tmp_path):
    """Item 5: a journal_dir another user may write is refused at mount
    with a message naming the fix, unless -o allow_shared_dirs."""
    jdir = tmp_path / "shared"
    jdir.mkdir()
    os.chmod(jdir, 0o777)
    opts = ["-o", "writeback,journal_dir=%s" % jdir]
    mp = tmp_path / "mp"
    mp.mkdir()
    err = refused(aztfs_run, azurite, opts, mp)
    assert str(jdir) in err and "allow_shared_dirs" in err, err
    mnt = mounter.mount(options=["-o", "writeback,allow_shared_dirs,journal_dir=%s" % jdir])
    mnt.unmount()


def test_symlinks_at_the_journals_names_are_never_followed(sdk, seed, mounter, aztfs_run,
                                                           azurite, tmp_path):
    """Item 5 (a): a symlink planted at NAME.new made root truncate another
    file and write journal records into it. The temporary name is random
    now; a symlink at the journal, its key or its lock refuses the mount."""
    opts, _ = wb_options(tmp_path)
    jpath, _ = empty_journal(mounter, opts)
    victim = tmp_path / "victim"
    victim.write_text("root's own data\n")
    os.chmod(victim, 0o600)
    os.symlink(victim, jpath + ".new")          # the old predictable name
    mnt = mounter.mount(options=opts)
    pdir = os.path.join(str(mnt), "wbLinks", "p")
    seed.table(sdk, "wbLinks")
    os.mkdir(pdir)
    put(os.path.join(pdir, "a.json"), {"v": 1})
    mnt.unmount()                               # rewrites the journal at the unmount
    assert victim.read_text() == "root's own data\n"
    mp = tmp_path / "mp"
    mp.mkdir()
    for name in (jpath, jpath + ".key", jpath + ".lock"):
        saved = name + ".saved"
        os.rename(name, saved)
        os.symlink(victim, name)
        err = refused(aztfs_run, azurite, opts, mp)
        assert "symlink" in err, err
        os.unlink(name)
        os.rename(saved, name)
    assert victim.read_text() == "root's own data\n"


def test_a_journal_planted_by_another_user_is_never_replayed(sdk, seed, mounter, aztfs_run,
                                                             azurite, tmp_path):
    """Item 5 (b): uid 65534, able to write a shared journal_dir, put a
    forged delete in the journal and the mount replayed it with the
    mounter's key. The ownership rule refuses the file; the key refuses
    the record even in the mounter's own file."""
    t = seed.table(sdk, "wbForged")
    t.upsert_entity({"PartitionKey": "p", "RowKey": "x", "v": 1})
    jdir = tmp_path / "shared"
    jdir.mkdir()
    os.chmod(jdir, 0o1777)
    opts = ["-o", "writeback=60000,allow_shared_dirs,journal_dir=%s" % jdir]
    jpath, key = empty_journal(mounter, opts)
    forged = dict(journal_op(1, "x", table="wbForged"), k="delete", **{"if": "*"})
    del forged["e"]
    os.unlink(jpath)                            # the other user's own file in its place
    with open(jpath, "w") as f:
        f.write(journal_record(forged))
    os.chown(jpath, NOBODY, NOBODY)
    mp = tmp_path / "mp"
    mp.mkdir()
    err = refused(aztfs_run, azurite, opts, mp)
    assert "uid %d" % NOBODY in err or "owned" in err, err
    assert entities(t) == {"x": 1}
    # the forged record inside the mounter's own file: refused by its MAC
    os.unlink(jpath)
    with open(jpath, "w") as f:
        f.write(journal_record(forged))
    os.chmod(jpath, 0o600)
    mnt = mounter.mount(options=opts)
    assert entities(t) == {"x": 1}
    assert "does not match the key" in mnt.stderr()
    mnt.unmount()

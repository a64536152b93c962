"""Everyday tools writing through the mount (echo, printf, cp, mv, rm, mkdir,
touch, truncate, sed -i, vim, nano-style and temp+rename saves). After each
step the table is checked through the Azure SDK."""

import errno
import json
import os
import tempfile

import pytest

from conftest import WriteHelpers

ORIG = "old value"


def props(e):
    return {k: v for k, v in WriteHelpers.typed(e).items()
            if k not in ("PartitionKey", "RowKey")}


def s(v):
    return ("Edm.String", v)


@pytest.fixture
def env(sdk, seed, mounter, request):
    """A table named after the test with partitions p (a, b) and q (z); mounted."""
    name = "tl" + "".join(ch for ch in request.node.name.title() if ch.isalnum())[:40]
    t = seed.table(sdk, name)
    t.create_entity({"PartitionKey": "p", "RowKey": "a", "v": ORIG, "n": 1})
    t.create_entity({"PartitionKey": "p", "RowKey": "b", "v": "bee"})
    t.create_entity({"PartitionKey": "q", "RowKey": "z", "v": "zed"})
    mnt = mounter.mount(options=("-o", "loglevel=debug"))

    class Env:
        table = name
        m = mnt
        client = t

        @staticmethod
        def path(*parts):
            return os.path.join(str(mnt), name, *parts)
    return Env


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def test_echo_redirect(env, sh, wh):
    sh("echo '{\"v\": \"echo\"}' > '%s'" % env.path("p", "a.json"))
    assert props(wh.get(env.table, "p", "a")) == {"v": s("echo")}
    sh("echo '{\"v\": \"new\"}' > '%s'" % env.path("p", "c.json"))
    assert props(wh.get(env.table, "p", "c")) == {"v": s("new")}
    assert json.loads(sh(["cat", env.path("p", "c.json")]).stdout)["v"] == "new"
    assert sorted(sh.ls(env.path("p"))) == ["a.json", "b.json", "c.json"]


def test_printf_append_to_object_leaves_entity_unchanged(env, sh, wh):
    etag = wh.etag(env.table, "p", "a")
    # bash ignores the close error; the entity must be untouched
    sh("printf '{\"x\": 1}' >> '%s'" % env.path("p", "a.json"), check=False)
    assert wh.etag(env.table, "p", "a") == etag
    assert props(wh.get(env.table, "p", "a")) == {"v": s(ORIG), "n": ("Edm.Int32", 1)}
    assert json.loads(read(env.path("p", "a.json")))["v"] == ORIG
    # Python sees the error
    assert WriteHelpers.write_fd(env.path("p", "a.json"), b'{"x": 1}',
                                 os.O_WRONLY | os.O_APPEND) == ("close", errno.EINVAL)
    assert wh.etag(env.table, "p", "a") == etag


def test_printf_append_to_new_and_empty_file(env, sh, wh):
    # >> on a file that does not exist yet: the appended text is the entity
    sh("printf '{\"x\": 1}' >> '%s'" % env.path("p", "new.json"))
    assert props(wh.get(env.table, "p", "new")) == {"x": ("Edm.Int32", 1)}
    # build an entity by appending pieces through one open file
    sh("{ printf '{\"a\": 1,'; printf ' \"b\": 2}'; } > '%s'" % env.path("p", "pieces.json"))
    assert props(wh.get(env.table, "p", "pieces")) == {"a": ("Edm.Int32", 1),
                                                       "b": ("Edm.Int32", 2)}


def test_cp_new_and_over_existing(env, sh, wh, tmp_path):
    sh(["cp", env.path("p", "a.json"), env.path("p", "copy.json")])
    assert props(wh.get(env.table, "p", "copy")) == {"v": s(ORIG), "n": ("Edm.Int32", 1)}
    assert props(wh.get(env.table, "p", "a")) == {"v": s(ORIG), "n": ("Edm.Int32", 1)}
    sh(["cp", env.path("p", "b.json"), env.path("p", "a.json")])
    assert props(wh.get(env.table, "p", "a")) == {"v": s("bee")}
    # from a local file, to another partition and table dir
    local = tmp_path / "in.json"
    local.write_text('{"v": "local", "d": 1.5}')
    sh(["cp", str(local), env.path("q", "l.json")])
    assert props(wh.get(env.table, "q", "l")) == {"v": s("local"), "d": ("Edm.Double", 1.5)}
    # and back out: the copy is the canonical text
    sh(["cp", env.path("q", "l.json"), str(tmp_path / "out.json")])
    assert (tmp_path / "out.json").read_text() == read(env.path("q", "l.json"))


def test_cp_p_preserves_without_error(env, sh, wh, tmp_path):
    local = tmp_path / "in.json"
    local.write_text('{"v": "kept"}')
    os.utime(local, (1000000000, 1000000000))
    r = sh(["cp", "-p", str(local), env.path("p", "cpp.json")], check=False)
    assert r.returncode == 0, r
    assert props(wh.get(env.table, "p", "cpp")) == {"v": s("kept")}
    r = sh(["cp", "-p", str(local), env.path("p", "a.json")], check=False)
    assert r.returncode == 0, r
    assert props(wh.get(env.table, "p", "a")) == {"v": s("kept")}
    r = sh(["cp", "-p", env.path("p", "b.json"), env.path("q", "b2.json")], check=False)
    assert r.returncode == 0, r
    assert props(wh.get(env.table, "q", "b2")) == {"v": s("bee")}


def test_mv_same_partition_other_partition_over_existing(env, sh, wh):
    T = env.table
    sh(["mv", env.path("p", "a.json"), env.path("p", "moved.json")])
    assert wh.get(T, "p", "a") is None
    assert props(wh.get(T, "p", "moved")) == {"v": s(ORIG), "n": ("Edm.Int32", 1)}
    sh(["mv", env.path("p", "moved.json"), env.path("q", "moved.json")])
    assert wh.get(T, "p", "moved") is None
    assert props(wh.get(T, "q", "moved")) == {"v": s(ORIG), "n": ("Edm.Int32", 1)}
    sh(["mv", env.path("q", "moved.json"), env.path("q", "z.json")])
    assert wh.get(T, "q", "moved") is None
    assert props(wh.get(T, "q", "z")) == {"v": s(ORIG), "n": ("Edm.Int32", 1)}
    # mv -f over an existing file in another partition (EXDEV + copy)
    sh(["mv", "-f", env.path("p", "b.json"), env.path("q", "z.json")])
    assert wh.get(T, "p", "b") is None
    assert props(wh.get(T, "q", "z")) == {"v": s("bee")}
    assert sh.ls(env.path("q")) == ["z.json"]
    assert sh.ls(env.path("p")) == []
    # a whole partition directory: mv copies it recursively into another table dir
    sh(["mv", env.path("q"), env.path("r")])
    assert [(e["PartitionKey"], e["RowKey"]) for e in wh.entities(T)] == [("r", "z")]
    assert sorted(sh.ls(env.path())) == ["p", "r"]


def test_rm_and_rm_rf_partition(env, sh, wh):
    T = env.table
    env.client.submit_transaction([("create", {"PartitionKey": "big", "RowKey": "r%03d" % i,
                                               "i": i}) for i in range(40)])
    sh(["rm", env.path("p", "a.json")])
    assert wh.get(T, "p", "a") is None and wh.get(T, "p", "b") is not None
    # big did not exist at mount time, but was not listed yet either
    assert len(sh.ls(env.path("big"))) == 40
    sh(["rm", "-rf", env.path("big")])
    assert [e for e in wh.entities(T) if e["PartitionKey"] == "big"] == []
    assert not os.path.exists(env.path("big"))
    assert "big" not in sh.ls(env.path())
    assert wh.get(T, "q", "z") is not None
    r = sh(["rm", env.path("p", "nothere.json")], check=False)
    assert r.returncode != 0


def test_mkdir_rmdir_commands(env, sh, wh, sdk):
    try:
        sdk.delete_table("tlShellNew")
    except Exception:
        pass
    sh(["mkdir", os.path.join(str(env.m), "tlShellNew")])
    assert wh.table_exists("tlShellNew")
    sh(["mkdir", os.path.join(str(env.m), "tlShellNew", "part")])
    assert sh.ls(os.path.join(str(env.m), "tlShellNew")) == ["part"]
    sh(["mkdir", "-p", env.path("np")])
    r = sh(["mkdir", env.path("p")], check=False)
    assert r.returncode != 0 and "File exists" in r.stderr
    sh(["rmdir", os.path.join(str(env.m), "tlShellNew", "part")])
    sh(["rmdir", os.path.join(str(env.m), "tlShellNew")])
    assert not wh.table_exists("tlShellNew")
    r = sh(["rmdir", env.path("p")], check=False)
    assert r.returncode != 0 and "not empty" in r.stderr
    r = sh(["mkdir", os.path.join(str(env.m), "a-b")], check=False)
    assert r.returncode != 0 and "Invalid argument" in r.stderr


def test_touch_and_truncate(env, sh, wh):
    etag = wh.etag(env.table, "p", "a")
    sh(["touch", env.path("p", "a.json")])
    assert wh.etag(env.table, "p", "a") == etag
    sh(["touch", env.path("p", "t.json")])
    e = wh.get(env.table, "p", "t")
    assert e is not None and props(e) == {}
    sh(["truncate", "-s", "0", env.path("p", "a.json")])
    assert props(wh.get(env.table, "p", "a")) == {}
    assert set(json.loads(read(env.path("p", "a.json")))) == {
        "PartitionKey", "RowKey", "Timestamp"}


def test_sed_in_place(env, sh, wh):
    sh(["sed", "-i", "s/old value/new value/", env.path("p", "a.json")])
    assert props(wh.get(env.table, "p", "a")) == {"v": s("new value"), "n": ("Edm.Int32", 1)}
    assert sorted(sh.ls(env.path("p"), "-a")) == [".", "..", "a.json", "b.json"]
    # a sed that breaks the JSON: sed fails, the entity is unchanged
    etag = wh.etag(env.table, "p", "a")
    r = sh(["sed", "-i", "s/{/[/", env.path("p", "a.json")], check=False)
    assert r.returncode != 0
    assert wh.etag(env.table, "p", "a") == etag
    assert props(wh.get(env.table, "p", "a")) == {"v": s("new value"), "n": ("Edm.Int32", 1)}


def vim(sh, args, home):
    return sh(["vim"] + args, check=False, timeout=30,
              env={"HOME": str(home), "TERM": "dumb", "VIMINIT": ""})


def test_vim_ex_mode_no_swap(env, sh, wh, tmp_path):
    r = vim(sh, ["-u", "NONE", "-i", "NONE", "-n", "-e", "-s",
                 "-c", "%s/old value/vim value/", "-c", "wq", env.path("p", "a.json")], tmp_path)
    assert r.returncode == 0, r
    assert props(wh.get(env.table, "p", "a")) == {"v": s("vim value"), "n": ("Edm.Int32", 1)}
    assert sorted(sh.ls(env.path("p"), "-a")) == [".", "..", "a.json", "b.json"]


# vim's defaults, except that 'backupskip' (/tmp/* by default) would skip the
# backup dance on our mounts, which live under /tmp: with it cleared vim
# writes .f.swp, creates/chowns/unlinks 4913, tries rename f -> f~ ...
VIM_DEFAULTS = ["-N", "--cmd", "set backupskip=", "-e", "-s"]


def test_vim_default_settings_swap_and_backup(env, sh, wh, tmp_path):
    mark = wh.mark(env.m)
    r = vim(sh, VIM_DEFAULTS + ["-c", "%s/old value/vim2/", "-c", "wq",
                                env.path("p", "a.json")], tmp_path)
    assert r.returncode == 0, r
    assert props(wh.get(env.table, "p", "a")) == {"v": s("vim2"), "n": ("Edm.Int32", 1)}
    # no swap file, no 4913, no a.json~ left behind, nothing extra in the table
    assert sorted(sh.ls(env.path("p"), "-a")) == [".", "..", "a.json", "b.json"]
    assert sorted(e["RowKey"] for e in wh.entities(env.table)) == ["a", "b", "z"]
    # the save is one write of the entity: it is never deleted on the way
    writes = [w for w in wh.writes(env.m, mark) if "/%s" % env.table in w[1]]
    assert [w[0] for w in writes] in (["PUT"], ["POST"]) and \
        not any(w[0] == "DELETE" for w in writes), writes
    # writing a new file with vim
    r = vim(sh, VIM_DEFAULTS + ["-c", 'call setline(1, \'{"v": "from vim"}\')', "-c", "wq",
                                env.path("p", "vnew.json")], tmp_path)
    assert r.returncode == 0, r
    assert props(wh.get(env.table, "p", "vnew")) == {"v": s("from vim")}


def test_vim_default_settings_failed_save_keeps_entity(env, sh, wh, tmp_path):
    r = vim(sh, VIM_DEFAULTS + ["-c", "%s/{/[/", "-c", "wq", env.path("p", "a.json")],
            tmp_path)
    assert r.returncode != 0
    assert props(wh.get(env.table, "p", "a")) == {"v": s(ORIG), "n": ("Edm.Int32", 1)}
    assert json.loads(read(env.path("p", "a.json")))["v"] == ORIG
    # entity files report 2 links, so vim saves by copy: on a failed write it
    # keeps its backup a.json~ (as on a local disk). That is a scratch file:
    # it holds the original text and never reaches the table.
    listed = sorted(sh.ls(env.path("p"), "-a"))
    assert listed in ([".", "..", "a.json", "b.json"],
                      [".", "..", "a.json", "a.json~", "b.json"]), listed
    if "a.json~" in listed:
        assert json.loads(read(env.path("p", "a.json~")))["v"] == ORIG
    assert sorted(e["RowKey"] for e in wh.sdk.get_table_client(env.table).query_entities(
        "PartitionKey eq 'p'")) == ["a", "b"]


def test_vim_keeps_entity_when_save_fails(env, sh, wh, tmp_path):
    etag = wh.etag(env.table, "p", "a")
    r = vim(sh, ["-u", "NONE", "-i", "NONE", "-n", "-e", "-s",
                 "-c", "%s/{/[/", "-c", "wq", env.path("p", "a.json")], tmp_path)
    assert r.returncode != 0
    assert wh.etag(env.table, "p", "a") == etag
    assert props(wh.get(env.table, "p", "a")) == {"v": s(ORIG), "n": ("Edm.Int32", 1)}


def test_nano_style_save(env, wh):
    # nano: open(O_TRUNC), write, fsync, close
    fd = os.open(env.path("p", "a.json"), os.O_WRONLY | os.O_TRUNC)
    os.write(fd, b'{\n  "v": "nano"\n}\n')
    os.fsync(fd)
    assert props(wh.get(env.table, "p", "a")) == {"v": s("nano")}   # committed at fsync
    os.close(fd)
    assert props(wh.get(env.table, "p", "a")) == {"v": s("nano")}
    assert json.loads(read(env.path("p", "a.json")))["v"] == "nano"


def test_temp_then_rename_save(env, wh, sh):
    target = env.path("p", "a.json")
    fd, tmp = tempfile.mkstemp(dir=env.path("p"), prefix=".a.json.", suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(b'{"v": "atomic"}')
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, 0o644)
    assert wh.get(env.table, "p", "a")["v"] == ORIG
    os.replace(tmp, target)
    assert props(wh.get(env.table, "p", "a")) == {"v": s("atomic")}
    assert not os.path.exists(tmp)
    assert sorted(sh.ls(env.path("p"), "-a")) == [".", "..", "a.json", "b.json"]
    # new target
    fd, tmp = tempfile.mkstemp(dir=env.path("p"))
    os.write(fd, b'{"v": "fresh"}')
    os.close(fd)
    os.replace(tmp, env.path("p", "fresh.json"))
    assert props(wh.get(env.table, "p", "fresh")) == {"v": s("fresh")}


def test_tee_and_cat_redirect(env, sh, wh):
    sh("printf '{\"v\": \"tee\"}' | tee '%s' >/dev/null" % env.path("p", "a.json"))
    assert props(wh.get(env.table, "p", "a")) == {"v": s("tee")}
    r = sh("printf 'not json' | tee '%s' >/dev/null" % env.path("p", "a.json"), check=False)
    assert r.returncode != 0
    assert props(wh.get(env.table, "p", "a")) == {"v": s("tee")}

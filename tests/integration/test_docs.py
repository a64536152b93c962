"""What the documents say against what the program and its measurements
say (issue 44): the usage line aztfs prints with no argument, with --help
and in the man page's SYNOPSIS; the systemd template unit expanded as
systemd does it (one name for the config and the mount point, a clean
start that prints nothing); the figures README and USAGE.md quote,
against doc/PERFORMANCE.md's tables; one memory figure everywhere."""

import os
import re
import shlex
import shutil
import subprocess

import pytest

from conftest import AZTFS, ROOT

README = (ROOT / "README").read_text()
USAGE = (ROOT / "doc" / "USAGE.md").read_text()
OPERATIONS = (ROOT / "doc" / "OPERATIONS.md").read_text()
PERFORMANCE = (ROOT / "doc" / "PERFORMANCE.md").read_text()
MAN = (ROOT / "doc" / "aztfs.1").read_text()
UNIT_IN = (ROOT / "data" / "aztfs@.service.in").read_text()


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=60,
                          **kw)


# -- the usage line ---------------------------------------------------------
def usage_args(line):
    """The arguments of a "usage: PROG ARGS" line."""
    m = re.match(r"usage: \S+ (.*)$", line.strip())
    assert m, line
    return m.group(1)


def test_no_arguments_help_and_man_page_give_one_usage_line():
    bare = run([AZTFS])
    assert bare.returncode == 1, bare
    lines = [l for l in bare.stderr.splitlines() if l.startswith("usage: ")]
    assert len(lines) == 1, bare.stderr
    helped = run([AZTFS, "--help"])
    assert helped.returncode == 0, helped
    first = helped.stdout.splitlines()[0]
    assert usage_args(lines[0]) == usage_args(first), (lines[0], first)
    # the man page's SYNOPSIS, its first form, in the same words
    syn = MAN.split(".SH SYNOPSIS\n", 1)[1].split(".br\n", 1)[0]
    words = []
    for line in syn.splitlines():
        macro, _, rest = line.partition(" ")
        if macro == ".B":
            continue                                    # the program's name
        if macro == ".RI":
            words.append(re.sub(r"\[ (\w+) \]", r"[\1]", rest))
        elif macro == ".I":
            words.append(rest)
    assert " ".join(words) == usage_args(first), (words, first)


# -- the systemd template unit ----------------------------------------------
def unescape_instance(name):
    """%I of systemd.unit(5): the instance name unescaped ("-" is "/",
    "\\xNN" the byte NN), as systemd-escape -u does it."""
    if shutil.which("systemd-escape"):
        p = run(["systemd-escape", "-u", name])
        assert p.returncode == 0, p
        return p.stdout.strip()
    out = name.replace("-", "/")
    return re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), out)


def unit_for(instance, sysconfdir="/etc", bindir="/usr/bin"):
    """The template's text as `make` writes it (data/aztfs@.service), with
    the specifiers of instance INSTANCE expanded as systemd.unit(5) says."""
    text = UNIT_IN.replace("@sysconfdir@", sysconfdir).replace("@bindir@", bindir)
    body = "\n".join(l for l in text.splitlines() if not l.startswith("#"))
    spec = {"i": instance, "I": unescape_instance(instance), "%": "%"}
    return re.sub(r"%(.)", lambda m: spec[m.group(1)], body)


def test_the_unit_reads_and_mounts_one_name():
    """aztfs@prod-eu read /etc/aztfs/prod-eu.conf but mounted /mnt/prod/eu
    (%i and %I mixed): every path of the unit names the instance alike."""
    unit = unit_for("prod-eu")
    confs = set(re.findall(r"/etc/aztfs/([^\s/]+)\.(?:conf|env)\b", unit))
    mounts = set(re.findall(r"/mnt/([^\s'\";]+)", unit))
    assert confs == {"prod-eu"}, confs
    assert mounts == {"prod-eu"}, mounts
    start = [l for l in unit.splitlines() if l.startswith("ExecStart=")]
    assert start == ["ExecStart=/usr/bin/aztfs -f -o config=/etc/aztfs/prod-eu.conf "
                     "$AZTFS_OPTIONS /mnt/prod-eu"], start


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="no systemd-analyze")
def test_systemd_analyze_verifies_the_unit(tmp_path):
    """systemd's own reading of an instance: no error (its commands exist,
    its lines parse)."""
    text = UNIT_IN.replace("@sysconfdir@", "/etc").replace("@bindir@", str(AZTFS.parent))
    unit = tmp_path / "aztfs@.service"
    unit.write_text(text)
    p = run(["systemd-analyze", "verify", "--man=no", str(tmp_path / "aztfs@prod-eu.service")],
            cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "aztfs@" not in p.stderr, p.stderr


def test_a_clean_start_prints_nothing(tmp_path):
    """The ExecStartPre lines, run as systemd runs them for an instance
    whose mount point holds no mount: exit 0 and not a word (a bare
    fusermount3 -uz said "failed to unmount" on every clean start)."""
    name = "aztfs-docs-%d" % os.getpid()
    unit = unit_for(name)
    start_pre = [l.split("=", 1)[1] for l in unit.splitlines() if l.startswith("ExecStartPre=")]
    assert start_pre, unit
    try:
        for pre in start_pre:
            cmd = pre[1:] if pre.startswith("-") else pre
            p = subprocess.run(shlex.split(cmd), capture_output=True, text=True, timeout=30)
            assert p.returncode == 0 and p.stdout == "" and p.stderr == "", (cmd, p)
    finally:
        if os.path.isdir("/mnt/" + name):
            os.rmdir("/mnt/" + name)


# -- figures ------------------------------------------------------------------
def table_cells(text):
    """Every cell of every Markdown table row of TEXT."""
    cells = set()
    for line in text.splitlines():
        if line.startswith("|"):
            cells.update(c.strip() for c in line.strip("|").split("|"))
    return cells


def seconds(text):
    """The figures in seconds TEXT quotes ("12.8 s")."""
    return re.findall(r"(?<![\w.])(\d+(?:\.\d+)?) s\b", text)


def paragraph(text, start):
    """The paragraph or list item of TEXT that starts with START."""
    i = text.index(start)
    return re.split(r"\n\s*\n|\n- ", text[i:], 1)[0]


@pytest.mark.parametrize("where, text, start", [
    ("README", README, "Each table, partition and query view also reads as one hidden file"),
    ("doc/USAGE.md", USAGE, 'Speed (bench/export.py, doc/PERFORMANCE.md, "Export streams"'),
    ("doc/USAGE.md", USAGE, 'Speed (bench/import.py, doc/PERFORMANCE.md, "Import")'),
], ids=["README", "USAGE-export", "USAGE-import"])
def test_quoted_times_are_in_the_performance_tables(where, text, start):
    """Each time README and USAGE.md quote for the export and the import is
    a cell of one of PERFORMANCE.md's tables (README said 11 s and 51 s for
    a run that measured 12.8 and 55.3 s)."""
    cells = table_cells(PERFORMANCE)
    quoted = seconds(paragraph(text, start))
    assert quoted, (where, start)
    missing = [q for q in quoted if q not in cells]
    assert not missing, "%s quotes %s s, in no table of doc/PERFORMANCE.md" % (where, missing)


def test_readme_and_usage_quote_the_same_runs():
    readme = set(seconds(paragraph(README, "Each table, partition and query view also")))
    usage = set(seconds(paragraph(USAGE, 'Speed (bench/export.py'))
                + seconds(paragraph(USAGE, 'Speed (bench/import.py')))
    assert readme <= usage, readme - usage


def test_one_memory_figure_everywhere():
    """The default cache's memory, said alike in USAGE.md, the man page and
    OPERATIONS.md, and measured in PERFORMANCE.md: at most 83 MiB, the
    32 MiB cache plus 51 MiB; what the cache holds, a third of 100,000
    entities ("stays under 64 MiB", 45,000 and 35,000 entities were each
    said somewhere)."""
    man = re.sub(r"\\-", "-", re.sub(r"\n\.\w+ ?", " ", MAN))
    for name, text in (("doc/USAGE.md", USAGE), ("doc/aztfs.1", man),
                       ("doc/OPERATIONS.md", OPERATIONS)):
        flat = " ".join(text.split())
        assert "83 MiB" in flat and "51 MiB" in flat, name
        assert "a third of" in flat and "100,000 entities" in flat, name
        for stale in ("under 64 MiB", "45,000", "35,000"):
            assert stale not in flat, (name, stale)
    flat = " ".join(PERFORMANCE.split())
    assert "67-83 MiB: the 32 MiB cache plus at most 51 MiB" in flat
    assert "holds about a third of it" in flat

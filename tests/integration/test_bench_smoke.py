# test_bench_smoke.py - a tiny run of the benchmark (bench/run.py --smoke) end to end.
"""The benchmark itself is not part of the test suite; this smoke run of it
is. It checks that bench/run.py --smoke runs against its own Azurite and
mounts, reports every workload cold and warm with numbers, and that the
cold whole-scope walks (find, grep -r, rsync -a) stay within the protocol
bound of ceil(N/1000) + P + 2 requests."""

import json
import math
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import AZTFS, AZURITE_BIN, ROOT, _check_fuse_available

BENCH = ROOT / "bench" / "run.py"
SMOKE_TIMEOUT = 180      # seconds; a smoke run takes well under a minute
WORKLOADS = ["ls -l", "ls -f | wc -l", "find -type f", "grep -r", "rsync -a"]
BASELINES = ["REST scan", "SDK script"]
WALKS = ["find -type f", "grep -r", "rsync -a"]


def parse_report(text):
    """{section title: [row dicts]} of the markdown tables in TEXT."""
    sections, title, header = {}, None, None
    for line in text.splitlines():
        if line.startswith("## "):
            title, header = line[3:].strip(), None
            sections[title] = []
        elif line.startswith("|") and title is not None:
            cells = [c.strip().replace("\\|", "|")
                     for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
            if header is None:
                header = cells
            elif not set(line) <= set("|-: "):
                sections[title].append(dict(zip(header, cells)))
    return sections


def section(sections, prefix):
    found = [rows for title, rows in sections.items() if title.startswith(prefix)]
    assert found and found[0], "no %r table in the report: %r" % (prefix, list(sections))
    return found[0]


def run_bench(script, args, out):
    """Run bench/SCRIPT with ARGS and --out OUT against its own Azurite and
    this tree's aztfs; its report parsed (parse_report)."""
    env = dict(os.environ, AZTFS_BIN=str(AZTFS))
    env.pop("AZURE_STORAGE_CONNECTION_STRING", None)
    p = subprocess.run([sys.executable, str(ROOT / "bench" / script)] + args + ["--out", str(out)],
                       capture_output=True, text=True, timeout=SMOKE_TIMEOUT, env=env,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-6000:]
    return parse_report(out.read_text())


def positive_time(row):
    wall = float(row["wall s"])
    assert wall > 0, row
    return wall


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """Run the smoke benchmark once; its report, parsed."""
    if not AZURITE_BIN.exists():
        pytest.fail("Azurite not found at %s: run scripts/deps.sh" % AZURITE_BIN,
                    pytrace=False)
    _check_fuse_available()
    out = tmp_path_factory.mktemp("bench") / "bench.md"
    env = dict(os.environ, AZTFS_BIN=str(AZTFS))
    env.pop("AZURE_STORAGE_CONNECTION_STRING", None)
    try:
        p = subprocess.run([sys.executable, str(BENCH), "--smoke", "--out", str(out)],
                           capture_output=True, text=True, timeout=SMOKE_TIMEOUT, env=env,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("bench/run.py --smoke did not finish within %d s" % SMOKE_TIMEOUT,
                    pytrace=False)
    if p.returncode != 0:
        pytest.fail("bench/run.py --smoke exited %d; stderr:\n%s"
                    % (p.returncode, p.stderr[-6000:]), pytrace=False)
    text = out.read_text()
    assert text.strip() in p.stdout, "the report printed differs from --out"
    return parse_report(text)


def test_every_workload_has_cold_and_warm_rows_with_numbers(report):
    rows = section(report, "Workloads")
    for name in WORKLOADS:
        modes = sorted(r["mode"] for r in rows if r["workload"] == name)
        assert "cold" in modes and "warm" in modes, (name, modes)
    for name in BASELINES:
        assert any(r["workload"] == name for r in rows), name
    for r in rows:
        int(r["requests"])
        positive_time(r)
        float(r["peak RSS MiB"])
        if r["mode"] != "-":
            assert float(r["x REST"]) > 0 and float(r["x SDK"]) > 0, r


def test_cold_walks_stay_within_the_request_bound(report):
    rows = [r for r in section(report, "Workloads")
            if r["workload"] in WALKS and r["mode"] == "cold"]
    assert {r["workload"] for r in rows} == set(WALKS)
    for r in rows:
        bound = math.ceil(int(r["entities"]) / 1000) + int(r["partitions"]) + 2
        assert int(r["requests"]) <= bound, r


def test_rsync_comparison_and_parallel_reads_are_reported(report):
    rsync = {r["run"]: r for r in section(report, "rsync -a")}
    for run in ("aztfs rsync -a (cold)", "aztfs rsync -a (warm)", "local rsync -a",
                "SDK script", "REST scan"):
        assert run in rsync, (run, list(rsync))
        positive_time(rsync[run])
    reads = section(report, "Parallel cold point reads")
    assert [r["processes"] for r in reads] == ["1", "4"], reads
    for r in reads:
        positive_time(r)
        int(r["requests"])


def test_restore_benchmark_smoke(tmp_path):
    """bench/restore.py on a tiny backup at two delays: the report has a row
    per delay and mode, aztfs stays within N + P + 5 requests synchronous
    and ceil(N/100) + 2P + 5 with -o writeback, with no point read, and
    restoring the same backup again writes nothing."""
    rows = section(run_bench("restore.py", ["--entities", "60", "--partitions", "3",
                                            "--delays", "0,5"], tmp_path / "restore.md"),
                   "Restore")
    assert [(r["mode"], r["tool"], r["delay ms"]) for r in rows] == [
        ("sync", "rsync", "0"), ("writeback", "rsync", "0"), ("sync", "rsync", "5"),
        ("writeback", "rsync", "5")], rows
    check_restore_rows(rows)


def check_restore_rows(rows):
    """Each restore row within its bound, no point read, and nothing written
    again. With cp under write-behind each O_EXCL create inserts at its open
    and a batch may hold one file's content: 2N + 2P + 5."""
    for r in rows:
        n, parts = int(r["N"]), int(r["P"])
        assert (n, parts) == (60, 3)
        bound = n + parts + 5 if r["mode"] == "sync" else -(-n // 100) + 2 * parts + 5
        if r["mode"] == "writeback" and r["tool"] == "cp":
            bound = 2 * n + 2 * parts + 5
        assert int(r["bound"]) == bound, r
        assert int(r["aztfs requests"]) <= bound, r
        assert int(r["point reads"]) == 0, r
        assert r["again: writes / all"].startswith("0 /"), r
        assert float(r["aztfs s"]) > 0 and float(r["x SDK batch"]) > 0, r


def test_restore_benchmark_smoke_with_cp(tmp_path):
    """bench/restore.py --tool cp with -o writeback: cp creates each file
    with O_EXCL, which the service decides at the open (one insert each),
    then the content goes in batches: within 2N + 2P + 5."""
    rows = section(run_bench("restore.py", ["--entities", "60", "--partitions", "3", "--delays",
                                            "0", "--modes", "writeback", "--tool", "cp"],
                             tmp_path / "restore-cp.md"), "Restore")
    assert [(r["mode"], r["tool"]) for r in rows] == [("writeback", "cp")], rows
    check_restore_rows(rows)
    assert int(rows[0]["aztfs requests"]) >= 60, rows     # the inserts at the opens


def test_listcost_smoke(tmp_path):
    """bench/listcost.py builds against this tree's libaztfs.a and reports
    the per-entity CPU of a listing; a split listing leaves FUSE's thread
    only a part of it (the rendering is done ahead, in the workers)."""
    out = tmp_path / "listcost.md"
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "listcost.py"), "--runs", "1",
                        "--rounds", "3", "--out", str(out)], capture_output=True, text=True,
                       timeout=SMOKE_TIMEOUT, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-6000:]
    rows = [l for l in out.read_text().splitlines() if l.startswith("| /")]
    assert len(rows) == 1, out.read_text()
    parse, listing, ahead, after = (float(c.split()[0]) for c in rows[0].split("|")[2:6])
    assert min(parse, listing, ahead, after) > 0, rows
    assert after < listing, rows


def test_memtable_serves_pages_with_its_delay():
    """bench/memtable.py (find_parallel.py --server memtable): a paged scan
    through it sees every entity, 1,000 a page, each answer held DELAY."""
    sys.path.insert(0, str(ROOT / "bench"))
    from memtable import MemTable
    from harness import conn_str_for

    srv = MemTable({"memSmoke": (2500, 3)}, delay=0.2)
    try:
        env = dict(os.environ, AZURE_STORAGE_CONNECTION_STRING=conn_str_for(srv.port))
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, str(ROOT / "bench" / "rest_scan.py"), "memSmoke"],
                           capture_output=True, text=True, timeout=SMOKE_TIMEOUT, env=env,
                           stdin=subprocess.DEVNULL)
        wall = time.monotonic() - t0
    finally:
        srv.close()
    assert p.returncode == 0, p.stderr[-6000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert (got["entities"], got["requests"]) == (2500, 3), got
    assert wall >= 3 * 0.2, wall


def test_memtable_reads_the_keys_after_one():
    """memtable.py answers the range aztfs sends for the rest of a page's
    last partition and the partitions after it (an "or" of two key terms),
    and refuses a filter it does not read rather than ignore a term."""
    sys.path.insert(0, str(ROOT / "bench"))
    from memtable import Endpoint, parse_filter

    keys = sorted(("p%d" % p, "r%d" % r) for p in range(3) for r in range(3))
    table = (keys, [json.dumps({"PartitionKey": pk, "RowKey": rk}) for pk, rk in keys])
    terms, either = parse_filter("PartitionKey ge 'p0' and PartitionKey lt 'p2' and "
                                 "(PartitionKey gt 'p0' or RowKey gt 'r1')")
    status, body, _ = Endpoint.query(table, terms, either, {})
    assert status == 200
    assert [(e["PartitionKey"], e["RowKey"]) for e in json.loads(body)["value"]] == [
        ("p0", "r2"), ("p1", "r0"), ("p1", "r1"), ("p1", "r2")]
    with pytest.raises(ValueError):
        parse_filter("PartitionKey eq 'p0' or RowKey eq 'r1'")


def test_ab_smoke(tmp_path):
    """bench/ab.py with one binary as both OLD and NEW, tiny: every
    workload has a row with wall and daemon CPU numbers, and the requests
    table counts the write-behind restore's batches (at least one per
    partition) for both sides."""
    out = tmp_path / "ab.md"
    binary = AZTFS
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "ab.py"), "--old", str(binary),
                        "--new", str(binary), "--entities", "120", "--partitions", "3",
                        "--rounds", "1", "--out", str(out)], capture_output=True, text=True,
                       timeout=SMOKE_TIMEOUT, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-6000:]
    text = out.read_text()
    assert "the same binary as old" in text, text
    rows = [l.split("|")[1:-1] for l in text.splitlines() if l.startswith("| 0 |")]
    walls = {r[1].strip(): r for r in rows if len(r) == 10}
    assert set(walls) == {"cold backup", "restore sync", "restore writeback"}, text
    for r in walls.values():
        assert float(r[2]) > 0 and float(r[4]) > 0, r
        cpu_old, cpu_new = (float(v) for v in r[7].split("/"))
        assert cpu_old >= 0 and cpu_new >= 0, r
    batch = [l.split("|")[4:6] for l in text.splitlines()
             if l.startswith("| 0 | restore writeback | batch |")]
    assert len(batch) == 1, text
    for cell in batch[0]:
        assert min(int(v) for v in cell.split("/")) >= 3, batch


def test_abphases_smoke():
    """bench/abphases.py, tiny: a row per phase with a time for each side."""
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "abphases.py"), "--old", str(AZTFS),
                        "--new", str(AZTFS), "--entities", "60", "--partitions", "3",
                        "--rounds", "2"], capture_output=True, text=True,
                       timeout=SMOKE_TIMEOUT, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-6000:]
    rows = [l.split("|")[1:-1] for l in p.stdout.splitlines() if l.startswith("| ") and
            not l.startswith("| phase")]
    assert [r[0].strip() for r in rows] == ["find -type f", "find -size +0",
                                            "cat of every file", "cold rsync -a"], p.stdout
    for r in rows:
        assert float(r[1]) > 0 and float(r[2]) > 0, r
        assert len(r[4].split()) == 2 and len(r[5].split()) == 2, r


def test_scale_smoke(tmp_path):
    """bench/scale.py, tiny (3,000 entities in 6 partitions, two rounds):
    a row per walk and round with the files every walk saw (it fails when a
    walk misses one), the daemon's CPU (more than a clock tick for the walks
    that open every file), requests within ceil(N/1000) + P +
    12, a peak RSS, and the table of medians with their ratios."""
    out = tmp_path / "scale.md"
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "scale.py"), "--sizes", "3000:6",
                        "--forget", "100", "--rounds", "2", "--out", str(out)],
                       capture_output=True, text=True, timeout=SMOKE_TIMEOUT,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-6000:]
    text = out.read_text()
    rows = [[c.strip() for c in l.split("|")[1:-1]] for l in text.splitlines()
            if l.startswith("| ") and l.split("|")[2].strip() == "3000"]
    runs = [r for r in rows if len(r) == 13]
    assert sorted(r[0] for r in runs) == sorted(["find", "grep", "tar", "rsync"] * 2), text
    for r in runs:
        assert 0 < int(r[7]) <= int(r[8]) + 12, r       # requests within the bound
        assert float(r[4]) > 0 and float(r[5]) >= 0 and float(r[9]) > 0, r
        # a find of 3,000 names may cost the daemon less than a clock tick
        # (10 ms); a walk that opens every file does not
        assert r[0] == "find" or float(r[5]) > 0, r
    medians = [r for r in rows if len(r) == 8]
    assert sorted(r[0] for r in medians) == ["find", "grep", "rsync", "tar"], text
    assert all(float(r[5]) == 1.0 for r in medians), medians    # one size: its own ratio


def test_scale_takes_turns_between_builds(tmp_path):
    """bench/scale.py --bins: each walk under each build given, in turn,
    its rows named for the build; a path that is no program is refused."""
    out = tmp_path / "scale.md"
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "scale.py"), "--sizes", "3000:6",
                        "--walks", "find", "--forget", "100", "--bins",
                        "one=%s,two=%s" % (AZTFS, AZTFS), "--out", str(out)],
                       capture_output=True, text=True, timeout=SMOKE_TIMEOUT,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-6000:]
    runs = [[c.strip() for c in l.split("|")[1:-1]] for l in out.read_text().splitlines()
            if l.startswith("| ") and l.count("|") == 14 and l.split("|")[2].strip() == "3000"]
    assert [r[0] for r in runs] == ["find, one", "find, two"], runs
    bad = subprocess.run([sys.executable, str(ROOT / "bench" / "scale.py"), "--bins",
                          "x=%s" % (tmp_path / "nothing")], capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL)
    assert bad.returncode != 0 and "not an executable" in bad.stderr, bad


def test_import_benchmark_smoke(tmp_path):
    """bench/import.py on a tiny backup at two delays: a row per delay, the
    tables it made through aztfs and the SDK hold the same entities (the
    bench fails otherwise), and aztfs stays within ceil(N/100) + P + 5
    requests."""
    rows = section(run_bench("import.py", ["--entities", "250", "--partitions", "3",
                                           "--delays", "0,5"], tmp_path / "import.md"), "Import")
    assert [r["delay ms"] for r in rows] == ["0", "5"], rows
    for r in rows:
        assert (int(r["N"]), int(r["P"])) == (250, 3)
        assert int(r["bound"]) == 3 + 3 + 5
        assert 3 <= int(r["aztfs requests"]) <= int(r["bound"]), r
        assert float(r["aztfs s"]) > 0 and float(r["aztfs / SDK"]) > 0, r


def test_import_faults_benchmark_smoke(tmp_path):
    """bench/import_faults.py on a tiny backup: a row per fault mix, each
    table the same as the fault-free one (the bench fails otherwise), the
    fault-free run at one request per transaction, and no mix past one
    request per transaction and two per fault."""
    rows = section(run_bench("import_faults.py", ["--entities", "500", "--partitions", "2"],
                             tmp_path / "import_faults.md"), "Import under faults")
    assert [r["faults"] for r in rows] == ["none", "503 10%", "503 20%", "503_after 10%"], rows
    assert rows[0]["requests"] == rows[0]["transactions"] == "6", rows[0]  # 3 a partition
    for r in rows:
        assert int(r["requests"]) <= int(r["transactions"]) + 2 * int(r["injected"]), r
        assert float(r["s"]) > 0 and float(r["time / fault-free"]) > 0, r

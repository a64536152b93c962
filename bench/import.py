#!/usr/bin/python3
# import.py - the import benchmark: an NDJSON backup written to /T/.ndjson, against the SDK.
"""Restore an NDJSON backup of N entities in P partitions (about 300-byte
entities, in file order partition by partition, as an export writes them)
into a new table, through a proxy that holds every request for D ms, two
ways side by side in one run:

* aztfs: ``mkdir /mnt/T && cat backup.ndjson > /mnt/T/.ndjson``, timed with
  the unmount; requests as the mount counted them; the daemon's peak RSS;
* the official SDK sending entity group transactions of 100 upserts, one
  at a time, in file order (bench/sdk_import.py).

Both tables are then compared through the SDK (every entity, every typed
value). Prints a markdown table; the ratio is aztfs' time over the SDK's.

    /usr/bin/python3 bench/import.py [--entities 100000] [--partitions 100]
                                     [--delays 0,25] [--repeat 1] [--out FILE]

AZTFS_BIN overrides ./aztfs.
"""

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import Azurite, BenchError, Mount, emit_report, run_timed, shell
from harness import FaultProxy, conn_str_for
from restore import make_backup

PYTHON = "/usr/bin/python3"
BENCH = Path(__file__).resolve().parent


def make_ndjson(work, n, parts):
    """The backup of bench/restore.py's entities as one NDJSON file, partition
    by partition, each partition's rows in key order (an export's order)."""
    tree = os.path.join(work, "tree")
    make_backup(tree, n, parts)
    path = os.path.join(work, "backup.ndjson")
    with open(path, "w", encoding="utf-8") as out:
        for pk in sorted(os.listdir(tree)):
            for name in sorted(os.listdir(os.path.join(tree, pk))):
                with open(os.path.join(tree, pk, name), encoding="utf-8") as f:
                    doc = json.load(f)
                doc = dict(PartitionKey=pk, RowKey=name[:-len(".json")], **doc)
                out.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    shutil.rmtree(tree)
    return path


def sdk_import(conn_str, table, backup, scratch):
    argv = [PYTHON, str(BENCH / "sdk_import.py"), table, backup]
    r = run_timed(argv, scratch, env={"AZURE_STORAGE_CONNECTION_STRING": conn_str}).check()
    return r.wall, json.loads(r.stdout.strip().splitlines()[-1])["requests"]


def aztfs_import(workdir, conn_str, table, backup, scratch):
    """Wall time of mkdir + cat > .ndjson + unmount, requests, peak RSS KiB."""
    m = Mount(workdir, conn_str, [])
    m.start()
    try:
        before = sum(m.stats()["requests_by_kind"].values())
        t0 = time.perf_counter()
        run_timed(shell("mkdir %s && cat %s > %s" % (m.join(table), backup,
                                                    m.join(table, ".ndjson"))), scratch).check()
        after = sum(m.stats()["requests_by_kind"].values())
        rss = m.peak_rss_kib()
        m.unmount()
        wall = time.perf_counter() - t0
    finally:
        m.unmount(check=False)
    return wall, after - before, rss


def same_tables(conn_str, a, b):
    """Do tables A and B hold the same entities, value for value and type for
    type (the Timestamp aside)? Through the SDK."""
    from azure.data.tables import TableServiceClient
    sys.path.insert(0, str(BENCH.parent / "tests" / "integration"))
    from sdk_values import typed
    svc = TableServiceClient.from_connection_string(conn_str)

    def load(name):
        out = {}
        for e in svc.get_table_client(name).list_entities():
            t = typed(e)
            t.pop("Timestamp", None)
            out[(e["PartitionKey"], e["RowKey"])] = t
        return out
    x, y = load(a), load(b)
    return len(x), x == y


def run(args):
    work = tempfile.mkdtemp(prefix="aztfs-import-")
    rows = []
    try:
        backup = make_ndjson(work, args.entities, args.partitions)
        with Azurite(work) as az:
            for d in args.delays:
                with FaultProxy(az.port, rate=0.0, delay=d / 1000.0) as px:
                    cs = conn_str_for(px.port)
                    sdk, fs = [], []
                    for r in range(args.repeat):
                        sdk.append(sdk_import(cs, "sdk%d%d" % (d, r), backup, work))
                        fs.append(aztfs_import(work, cs, "fs%d%d" % (d, r), backup, work))
                    n, same = same_tables(az.conn_str, "sdk%d0" % d, "fs%d0" % d)
                    if n != args.entities or not same:
                        raise BenchError("the tables differ: %d entities, same %s" % (n, same))
                    rows.append((d, args.entities, args.partitions,
                                 statistics.median(w for w, _, _ in fs),
                                 statistics.median(w for w, _ in sdk), fs[0][1], sdk[0][1],
                                 max(r for _, _, r in fs)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def report(rows):
    out = ["| delay ms | N | P | aztfs s | SDK batch s | aztfs / SDK | aztfs requests | "
           "bound | SDK requests | peak RSS MiB |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for d, n, p, fs, sdk, req, sreq, rss in rows:
        out.append("| %g | %d | %d | %.2f | %.2f | %.2f | %d | %d | %d | %.1f |" % (
            d, n, p, fs, sdk, fs / sdk, req, math.ceil(n / 100) + p + 5, sreq,
            (rss or 0) / 1024))
    out.append("")
    out.append("aztfs: `mkdir /mnt/T && cat backup.ndjson > /mnt/T/.ndjson`, and the unmount; "
               "SDK: bench/sdk_import.py; times are medians; bound: ceil(N/100) + P + 5")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=100000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--delays", default="0,25", help="ms added to every request, comma-separated")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args()
    a.delays = [float(x) for x in a.delays.split(",")]
    try:
        text = "## Import (NDJSON into a new table)\n\n" + report(run(a)) + "\n"
    except BenchError as e:
        print("import.py: %s" % e, file=sys.stderr)
        return 1
    emit_report(text, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# listcost.py - aztfs's own CPU cost per listed entity (bench/listcost.c), per build.
"""Compiles bench/listcost.c against each build tree's libaztfs.a (default:
this one, after ``make``), writes one Query Entities page of 1,000 of
bench/seed.py's entities as the service sends them (with odata.etag and
Timestamp), and runs each build's listcost ROUNDS times over it, the builds
interleaved RUNS times. Prints a markdown table: the fastest round's CPU
microseconds per entity for parsing the page (jansson), for listing it
(render, typed digest, cache insert, listing entry), and for the two
halves a split listing (``-o scan_parallel`` > 1) does in two threads:
rendering ahead (store_render_page, in the worker that fetched the page)
and listing what was rendered (FUSE's thread); the median over runs. CPU time of the fastest
round is steady on this shared machine where the wall time of a mount is
not, so two builds compare within a few percent.

    /usr/bin/python3 bench/listcost.py [--build DIR]... [--rounds 50] [--runs 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

from common import BenchError, emit_report
from seed import entity

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def page_text(partitions=20):
    """One page of 1,000 entities of partition p00, as the service sends it."""
    rows = []
    for i in range(1000):
        e = entity(i * partitions, partitions)
        e["odata.etag"] = "W/\"datetime'2026-11-23T00%%3A00%%3A00.%07dZ'\"" % i
        e["Timestamp"] = "2026-11-23T00:00:00.%07dZ" % i
        rows.append(e)
    return json.dumps({"odata.metadata": "x", "value": rows})


def build(tree, out):
    """Compile listcost.c against TREE's libaztfs.a into OUT."""
    lib = os.path.join(tree, "libaztfs.a")
    if not os.path.exists(lib):
        raise BenchError("%s: no libaztfs.a (run make there first)" % tree)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3", "libcurl", "jansson",
                            "libcrypto"], check=True, capture_output=True, text=True).stdout.split()
    r = subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-I" + os.path.join(tree, "src"),
                        "-I" + tree, os.path.join(HERE, "listcost.c"), lib, "-o", out] + flags +
                       ["-lpthread"], capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError("listcost.c did not build against %s:\n%s" % (tree, r.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", help="a built tree (default: this one)")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    trees = a.build or [ROOT]
    with tempfile.TemporaryDirectory(prefix="aztfs-listcost-") as work:
        page = os.path.join(work, "page.json")
        with open(page, "w") as f:
            f.write(page_text())
        exes = []
        for i, tree in enumerate(trees):
            exes.append(os.path.join(work, "listcost%d" % i))
            build(tree, exes[-1])
        got = {exe: [] for exe in exes}
        for _ in range(a.runs):
            for exe in exes:
                r = subprocess.run([exe, page, str(a.rounds)], check=True, capture_output=True,
                                   text=True)
                got[exe].append(json.loads(r.stdout))
    cols = ("parse_us", "list_us", "render_ahead_us", "list_after_us")
    out = ["| build | parse | list | split: render ahead (worker) | split: list (FUSE thread) |",
           "|---|---|---|---|---|"]
    for tree, exe in zip(trees, exes):
        out.append("| %s | %s |" % (tree, " | ".join(
            "%.2f us" % statistics.median(x[c] for x in got[exe]) for c in cols)))
    emit_report("\n".join(out), a.out)


if __name__ == "__main__":
    main()

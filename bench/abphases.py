#!/usr/bin/python3
# abphases.py - two aztfs binaries, interleaved: a walk's phases timed one by one.
"""Where a difference bench/ab.py shows in a cold backup comes from: one
table of N entities in P partitions (bench/seed.py) in a private Azurite,
then R rounds, the binaries' order alternating, each binary on a fresh
mount running

* ``find T -type f`` (the listings),
* ``find T -type f -size +0`` (a stat of every file, listings cached),
* ``find T -type f -print0 | xargs -0 cat`` (every file read),

and then, on another fresh mount, a cold ``rsync -a T/ dest/``. Prints
per phase each binary's median wall time, new / old, and every round's;
exits nonzero when the rsync did not copy N files.

    /usr/bin/python3 bench/abphases.py --old BIN --new BIN [--entities 10000]
        [--partitions 20] [--rounds 8]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common import Azurite, Mount
from run import default_scratch
from seed import seed_table

TABLE = "abPhases"
PHASES = ("find -type f", "find -size +0", "cat of every file", "cold rsync -a")


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def one_round(work, conn_str, binary, entities):
    """The four phases' wall seconds with BINARY; the rsync's destination
    must hold ENTITIES files."""
    out = []
    with Mount(work, conn_str, [], binary=binary) as m:
        t = os.path.join(str(m), TABLE)
        out.append(timed("find %s -type f | wc -l" % t))
        out.append(timed("find %s -type f -size +0 | wc -l" % t))
        out.append(timed("find %s -type f -print0 | xargs -0 cat | wc -c" % t))
    dest = os.path.join(work, "dest")
    shutil.rmtree(dest, ignore_errors=True)
    with Mount(work, conn_str, [], binary=binary) as m:
        out.append(timed("rsync -a %s/ %s/" % (os.path.join(str(m), TABLE), dest)))
    got = sum(len(files) for _, _, files in os.walk(dest))
    shutil.rmtree(dest, ignore_errors=True)
    if got != entities:
        raise SystemExit("abphases: rsync with %s copied %d files, expected %d"
                         % (binary, got, entities))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--entities", type=int, default=10000)
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=8)
    a = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="aztfs-abphases-", dir=default_scratch())
    res = {"old": [], "new": []}
    try:
        binaries = {}
        for w in res:
            binaries[w] = os.path.join(work, "aztfs-" + w)
            shutil.copy2(getattr(a, w), binaries[w])
        with Azurite(work) as az:
            seed_table(az.conn_str, TABLE, a.entities, a.partitions)
            for rnd in range(a.rounds):
                for w in (("old", "new") if rnd % 2 == 0 else ("new", "old")):
                    res[w].append(one_round(work, az.conn_str, binaries[w], a.entities))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("| phase | old median s | new median s | new / old | old rounds | new rounds |")
    print("|---|---|---|---|---|---|")
    for i, name in enumerate(PHASES):
        med = {w: statistics.median(r[i] for r in res[w]) for w in res}
        print("| %s | %.3f | %.3f | %.3f | %s | %s |" % (
            name, med["old"], med["new"], med["new"] / med["old"],
            " ".join("%.2f" % r[i] for r in res["old"]),
            " ".join("%.2f" % r[i] for r in res["new"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

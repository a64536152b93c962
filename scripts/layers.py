#!/usr/bin/env python3
"""layers.py SRCDIR BUILDDIR ARCHITECTURE.md - check that the code keeps the
architecture doc/ARCHITECTURE.md states, from the code itself:

  * layers: the doc's line "Layers, top to bottom:" names the folders of src/
    in order (`main` is src/ itself). A file may include a header of its own
    folder or of a folder below it, never above; a private header (NAME_i.h)
    only from its own folder. The same holds for calls: every symbol an
    object file uses (nm's U) is looked up where it is defined (T, D, B, R),
    and the module defining it must sit in the same folder or below.
  * no call circles: the graph of calls between modules (a .c file) has no
    cycle, inside a folder too (Tarjan's strongly connected components).
  * seams: a line of the doc "**Only `store/queued.c` calls `writeback/`.**"
    says no other module outside writeback/ calls into it.
  * the doc matches the tree: every file of src/ is named in the doc by its
    path under src/ (`table/split.c`), and every file the doc names exists
    (a bare `split.c` is a file of that name in some folder).
  * one name, one file: no two files of src/ share a basename, so a bare
    name (in the doc, a comment, a log line, a backtrace) means one file.

Calls through function pointers (hooks handed down at creation) are not
edges: that is how a lower layer reports to a higher one.

Exit 0 when all hold, 1 with one line per violation, 2 on bad usage. With
--graph it also prints the module graph's depth and the folder edges."""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LAYERS = re.compile(r'^\*\*Layers, top to bottom:\*\*(.*)$', re.M)
SEAM = re.compile(r'\*\*Only `([a-z_/]+)\.c` calls `([a-z_]+)/`\.\*\*')


def folder_of(rel):
    """src-relative path -> its folder ('main' for src/ itself)."""
    d = os.path.dirname(rel)
    return d if d else "main"


def src_files(src):
    out = []
    for dp, _, fn in os.walk(src):
        for f in fn:
            if f.endswith((".c", ".h")):
                out.append(os.path.relpath(os.path.join(dp, f), src))
    return sorted(out)


def read_layers(doc_text):
    m = LAYERS.search(doc_text)
    if not m:
        return None
    return re.findall(r'`([a-z_]+)`', m.group(1))


def check_includes(src, files, rank, errors):
    for rel in files:
        with open(os.path.join(src, rel)) as f:
            text = f.read()
        me = folder_of(rel)
        for inc in INCLUDE.findall(text):
            if not os.path.exists(os.path.join(src, inc)):
                errors.append("%s: includes \"%s\", not a path under src/" % (rel, inc))
                continue
            them = folder_of(inc)
            if inc.endswith("_i.h") and them != me:
                errors.append("%s: includes %s, the private header of %s/" % (rel, inc, them))
            elif them != me and rank[them] <= rank[me]:
                errors.append("%s: includes %s, of %s/, which is not below %s/"
                              % (rel, inc, them, me))


def symbols(obj):
    """(defined, used) global symbols of one object file."""
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True,
                         text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind in "TDBRGSVW" and kind.isupper():
            defined.add(name)
    return defined, used


def call_graph(src, build, files):
    """{module: set(modules it calls)} for the modules that have an object."""
    owner, uses = {}, {}
    for rel in files:
        if not rel.endswith(".c"):
            continue
        mod = rel[:-2]
        obj = os.path.join(build, "src", mod + ".o")
        if not os.path.exists(obj):
            raise SystemExit("layers.py: %s missing (build first)" % obj)
        defined, used = symbols(obj)
        for s in defined:
            owner[s] = mod
        uses[mod] = used
    graph = {m: set() for m in uses}
    why = {}
    for m, used in uses.items():
        for s in sorted(used):
            o = owner.get(s)
            if o and o != m:
                graph[m].add(o)
                why.setdefault((m, o), []).append(s)
    return graph, why


def circles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def depth(graph):
    memo = {}

    def d(v):
        if v not in memo:
            memo[v] = 0
            memo[v] = 1 + max((d(w) for w in graph[v]), default=0)
        return memo[v]
    return max((d(v) for v in graph), default=0)


def check_unique(files, errors):
    by_name = {}
    for rel in files:
        by_name.setdefault(os.path.basename(rel), []).append(rel)
    for name, rels in sorted(by_name.items()):
        if len(rels) > 1:
            errors.append("%d files of src/ are named %s: %s (name each for what it holds)"
                          % (len(rels), name, ", ".join(rels)))


def check_doc(doc_text, files, errors):
    named = set(re.findall(r'`((?:[a-z_]+/)?[a-z_]+\.[ch])`', doc_text))
    for rel in files:
        if rel not in named:
            errors.append("doc/ARCHITECTURE.md does not name src/%s" % rel)
    bases = {os.path.basename(f) for f in files}
    for rel in sorted(named - set(files)):
        if "/" not in rel and rel in bases:
            continue            # a file named without its folder, in its folder's text
        errors.append("doc/ARCHITECTURE.md names %s, which src/ does not hold" % rel)


def main(argv):
    show = "--graph" in argv
    argv = [a for a in argv if a != "--graph"]
    if len(argv) != 3:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    src, build, doc = argv
    with open(doc) as f:
        doc_text = f.read()
    files = src_files(src)
    errors = []
    layers = read_layers(doc_text)
    if not layers:
        print("layers.py: %s has no line \"**Layers, top to bottom:**\"" % doc)
        return 1
    rank = {name: i for i, name in enumerate(layers)}
    for rel in files:
        if folder_of(rel) not in rank:
            errors.append("src/%s: its folder is not in the doc's layers" % rel)
    if errors:
        print("\n".join(errors))
        return 1
    check_includes(src, files, rank, errors)
    graph, why = call_graph(src, build, files)
    for m in sorted(graph):
        for o in sorted(graph[m]):
            fm, fo = folder_of(m + ".c"), folder_of(o + ".c")
            if fm != fo and rank[fo] <= rank[fm]:
                errors.append("%s.c calls %s.c: %s/ is not below %s/ (%s)"
                              % (m, o, fo, fm, " ".join(why[(m, o)])))
    for only, folder in SEAM.findall(doc_text):
        for m in sorted(graph):
            if m == only or folder_of(m + ".c") == folder:
                continue
            for o in sorted(graph[m]):
                if folder_of(o + ".c") == folder:
                    errors.append("%s.c calls %s.c: only %s.c may call %s/ (%s)"
                                  % (m, o, only, folder, " ".join(why[(m, o)])))
    for comp in circles(graph):
        errors.append("call circle: %s" % " <-> ".join(c + ".c" for c in comp))
        for a in comp:
            for b in comp:
                if (a, b) in why:
                    errors.append("  %s.c -> %s.c: %s" % (a, b, " ".join(why[(a, b)])))
    check_unique(files, errors)
    check_doc(doc_text, files, errors)
    if show:
        print("modules: %d, call depth: %d" % (len(graph), depth(graph)))
        edges = sorted({(folder_of(m + ".c"), folder_of(o + ".c"))
                        for m in graph for o in graph[m]
                        if folder_of(m + ".c") != folder_of(o + ".c")})
        for a, b in edges:
            print("  %s -> %s" % (a, b))
    for e in errors:
        print(e)
    if not errors:
        print("layers: %d files, %d layers, no upward include or call, no circle"
              % (len(files), len(layers)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

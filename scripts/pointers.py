#!/usr/bin/python3
"""pointers.py [--fix] [SRCDIR] - the "See X.h" comments of src/ point somewhere.

A function's comment may say only "See X.h." (or "...; see X.h."; its contract is where it is
declared). Such a pointer is right when X.h names a header of src/ (as
"dir/name.h", or "name.h" when one header has that name) and, when the
comment stands right before a function's definition, that header declares
the function. Any other header a comment names ("(store.h)", "wb_int.h")
must exist too: a header of src/, or one a file of src/ includes. Prints
each wrong one ("FILE:LINE: See X.h: why", "FILE:LINE: X.h: why") and exits
1 when any is; with --fix, rewrites each pointer that names a header (or
none) to "See dir/name.h" for the header that declares the function, and
prints what it could not fix. Part of `make lint` (scripts/lint.sh)."""

import os
import re
import sys

POINTER = re.compile(r"\b([Ss]ee) ([A-Za-z0-9_/]+\.h)\b")
NAMED = re.compile(r"(?<![\w./<-])([A-Za-z0-9_/]+\.h)\b")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
# a definition's first line: a type, the name, "(" (static ones too)
DEFINITION = re.compile(r"^[A-Za-z_][A-Za-z0-9_ \t\*]*?\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def headers(src):
    """{"dir/name.h": text} of every header under SRC/src."""
    out = {}
    for root, _dirs, files in os.walk(os.path.join(src, "src")):
        for f in files:
            if f.endswith(".h"):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, os.path.join(src, "src"))
                with open(path, encoding="utf-8") as fh:
                    out[rel] = fh.read()
    return out


def resolve(name, hdrs):
    """The header NAME points to ("dir/name.h"), or None."""
    if name in hdrs:
        return name
    same = [h for h in hdrs if os.path.basename(h) == name]
    return same[0] if len(same) == 1 else None


def declares(text, func):
    return re.search(r"\b%s\s*\(" % re.escape(func), text) is not None


def defined_after(lines, i):
    """The function whose definition starts right after the comment that
    line I is in (the first line after its end), or None."""
    end = i
    while end < len(lines) and "*/" not in lines[end]:
        end += 1
    if end + 1 >= len(lines):
        return None
    nxt = lines[end + 1]
    m = DEFINITION.match(nxt)
    if m and not nxt.rstrip().endswith(";") and "=" not in nxt.split("(")[0]:
        return m.group(1)
    return None


def included(src):
    """Basenames of every header a file of SRC/src includes."""
    out = set()
    for root, _dirs, files in os.walk(os.path.join(src, "src")):
        for f in files:
            if f.endswith((".c", ".h")):
                with open(os.path.join(root, f), encoding="utf-8") as fh:
                    for line in fh:
                        m = INCLUDE.match(line)
                        if m:
                            out.add(os.path.basename(m.group(1)))
    return out


def comment_spans(text):
    """(start, end) offsets of every /* ... */ comment of TEXT."""
    return [(m.start(), m.end()) for m in re.finditer(r"/\*.*?\*/", text, re.S)]


def check_named(path, hdrs, known):
    """Headers named in PATH's comments that neither src/ has nor src/
    includes: [(line, text)]."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    names = {os.path.basename(h) for h in hdrs} | known
    problems = []
    for start, end in comment_spans(text):
        for m in NAMED.finditer(text, start, end):
            name = m.group(1)
            if resolve(name, hdrs) or os.path.basename(name) in names:
                continue
            line = text.count("\n", 0, m.start()) + 1
            problems.append((line, "%s: no header of src/ is named so, and none included is" % name))
    return problems


def check_file(path, rel, hdrs, fix):
    """Problems of PATH ([(line, text)]); with FIX, the file rewritten."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    problems, changed = [], False
    for i, line in enumerate(lines):
        for m in POINTER.finditer(line):
            see, name = m.group(1), m.group(2)
            target = resolve(name, hdrs)
            func = defined_after(lines, i) if line.lstrip().startswith(("/*", "*")) else None
            if target and (not func or declares(hdrs[target], func)):
                continue
            right = [h for h in sorted(hdrs) if func and declares(hdrs[h], func)]
            if fix and len(right) >= 1:
                lines[i] = lines[i].replace(m.group(0), "%s %s" % (see, right[0]), 1)
                changed = True
                continue
            why = ("no header of src/ is named %s" % name if not target else
                   "%s does not declare %s()" % (target, func))
            if right:
                why += " (%s does)" % ", ".join(right)
            problems.append((i + 1, "See %s: %s" % (name, why)))
    if changed:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines))
    return problems


def main(argv):
    fix = "--fix" in argv
    args = [a for a in argv if a != "--fix"]
    src = args[0] if args else "."
    hdrs = headers(src)
    known = included(src)
    bad = 0
    for root, _dirs, files in os.walk(os.path.join(src, "src")):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)
            for line, text in check_file(path, rel, hdrs, fix) + check_named(path, hdrs, known):
                print("%s:%d: %s" % (rel, line, text))
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

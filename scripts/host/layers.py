#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Check that the kernel's files call and include only down their layers.

The graph: one node per kernel/sroce_*.c, named by its stem without
"sroce_" (sroce_mem.c is "mem"); a header X.h with a matching X.c belongs
to X's node, the other headers (sroce_loc.h, sroce_mem_api.h, ...) only
declare and are no node. An arrow A -> B (A != B) has one or more kinds:

  call     A's object (kernel/*.o, built by "make kernel") needs a symbol
           (function or data, "nm -u") that B's object defines ("nm -g
           --defined-only"); the ops table's function pointers count too.
  inline   A's files call "name(" of a static inline function defined in
           B's own header. An inline that an object also defines (an ODP
           stub) is left to "call".
  include  A's files include B's header, directly or through headers that
           only declare (sroce_compat.h -> sroce_loc.h -> sroce.h).

The calls are read from the objects that "make kernel" builds in kernel/,
or those of --objdir (scripts/host/build-ko.sh's build/ko/RELEASE/kernel),
as sroce.mod there lists them (a file the kernel's configuration leaves
out, sroce_odp.c without on-demand paging, is named on stderr). With no
sroce.mod, an object it lists missing, or one older than its sources, the
graph would lack arrows, and the check fails at once rather than judge
it.

The layers are those Documentation/architecture.md declares, in its
"Layers" section: a table of the layers, top first, each with its files,
and after it the list of the arrows that run up, each with its reason. An
arrow from a lower layer to a higher one runs "up"; within a layer or down
is fine. The check fails (exit 1) on an arrow up that the list does not
name or a listed one that is gone (the document says what the code does),
on more than --max N arrows up, on a memory file with an arrow to the
engine, the transport or the wire, and on a file in no layer.

Usage: scripts/host/layers.py [-v] [--max N] [--objdir DIR] [--loops]
                              [--dot|--mermaid]
"""

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KDIR = os.path.normpath(os.path.join(HERE, "..", "..", "kernel"))
DOC = os.path.normpath(os.path.join(HERE, "..", "..", "Documentation",
                                    "architecture.md"))


def read_layers(path):
    """The layers (bottom first: (name, files)) and the arrows allowed up.

    In the document's "## Layers" section: table rows "| name | `a` `b` |
    ..." top first, and list items "- `a` -> `b`: why".
    """
    text = read(path)
    m = re.search(r"^## Layers\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        sys.exit(f"{path}: no \"## Layers\" section")
    layers, allowed = [], set()
    for line in m.group(1).splitlines():
        row = re.match(r"\|\s*(\w+)\s*\|([^|]*)\|", line)
        if row and "`" in row.group(2):
            layers.append((row.group(1), re.findall(r"`(\w+)`", row.group(2))))
        arrow = re.match(r"- `(\w+)` -> `(\w+)`", line)
        if arrow:
            allowed.add(arrow.groups())
    return layers[::-1], allowed


LAYERS, ALLOWED = [], set()

# Memory must reach neither the engine nor the transport nor the wire,
# whatever the document says.
MEMORY = {"mem", "mr", "mw", "odp", "dmabuf", "kmem"}
ENGINE = {"qp", "task", "req", "resp", "comp", "net"}


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def strip_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def nm(obj, *flags):
    """Symbol names of nm's output for @obj."""
    out = subprocess.run(["nm", *flags, obj], check=True, text=True,
                         capture_output=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


class Graph:
    def __init__(self, objdir):
        names = sorted(os.listdir(KDIR))
        self.nodes = [n[len("sroce_"):-2] for n in names
                      if re.fullmatch(r"sroce_\w+\.c", n)]
        self.objdir = objdir
        # arrows[(a, b)][kind] = set of symbols (or header chains)
        self.arrows = {}
        # objects the build should have made and did not, and those older
        # than their sources; the files it leaves out
        self.missing, self.stale, self.left_out = [], [], []

    def add(self, a, b, kind, what):
        if a != b:
            kinds = self.arrows.setdefault((a, b), {})
            kinds.setdefault(kind, set()).add(what)

    def files(self, node):
        """The source files of @node: its .c and its own header, if any."""
        return [p for p in (f"sroce_{node}.c", f"sroce_{node}.h")
                if os.path.exists(os.path.join(KDIR, p))]

    def header_owner(self, header):
        m = re.fullmatch(r"sroce_(\w+)\.h", header)
        return m.group(1) if m and m.group(1) in self.nodes else None

    def built(self):
        """The objects' names the module is linked from (sroce.mod)."""
        mod = os.path.join(self.objdir, "sroce.mod")
        if not os.path.exists(mod):
            self.missing.append(mod)
            return set()
        return {os.path.basename(o) for o in read(mod).split()}

    def scan_calls(self):
        defined, undef = {}, {}
        built = self.built()
        for node in self.nodes:
            obj = os.path.join(self.objdir, f"sroce_{node}.o")
            if os.path.basename(obj) not in built:
                self.left_out.append(obj)
                continue
            if not os.path.exists(obj):
                self.missing.append(obj)
                continue
            srcs = [os.path.join(KDIR, f) for f in self.files(node)]
            if any(os.path.getmtime(s) > os.path.getmtime(obj) for s in srcs):
                self.stale.append(obj)
            for sym in nm(obj, "-g", "--defined-only"):
                defined[sym] = node
            undef[node] = nm(obj, "-u")
        for node, syms in undef.items():
            for sym in syms & defined.keys():
                self.add(node, defined[sym], "call", sym)
        return defined

    def scan_inlines(self, defined):
        inline = re.compile(r"static\s+inline\b[^;{(]*?\b(\w+)\s*\(")
        text = {n: strip_comments("".join(read(os.path.join(KDIR, f))
                                          for f in self.files(n)))
                for n in self.nodes}
        for owner in self.nodes:
            header = os.path.join(KDIR, f"sroce_{owner}.h")
            if not os.path.exists(header):
                continue
            for name in set(inline.findall(strip_comments(read(header)))):
                if name in defined:
                    continue
                use = re.compile(rf"\b{name}\s*\(")
                for node in self.nodes:
                    if node != owner and use.search(text[node]):
                        self.add(node, owner, "inline", name)

    def scan_includes(self):
        inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
        for node in self.nodes:
            todo = [(f, "") for f in self.files(node)]
            seen = set(self.files(node))
            while todo:
                path, chain = todo.pop()
                for header in inc.findall(read(os.path.join(KDIR, path))):
                    owner = self.header_owner(header)
                    if owner:
                        self.add(node, owner, "include", chain + header)
                    elif header not in seen and \
                            os.path.exists(os.path.join(KDIR, header)):
                        seen.add(header)
                        todo.append((header, chain + header + ">"))

    def build(self):
        self.scan_inlines(self.scan_calls())
        self.scan_includes()
        return self


def rank_of():
    return {f: i for i, (_, files) in enumerate(LAYERS) for f in files}


def describe(kinds):
    return "; ".join(f"{k}: {' '.join(sorted(s))}"
                     for k, s in sorted(kinds.items()))


def sccs(nodes, edges):
    """Tarjan's strongly connected components of more than one node."""
    succ = {n: sorted(b for a, b in edges if a == n) for n in nodes}
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in succ[v]:
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

    for n in nodes:
        if n not in index:
            visit(n)
    return out


def print_dot(g, up):
    print("digraph sroce {\n\trankdir=BT;\n\tnode [shape=box];")
    for i, (name, files) in enumerate(LAYERS):
        print(f'\tsubgraph cluster_{i} {{ label="{name}"; '
              + " ".join(f'"{f}";' for f in files) + " }")
    for a, b in sorted(g.arrows):
        style = ' [color=red, penwidth=2]' if (a, b) in up else ""
        print(f'\t"{a}" -> "{b}"{style};')
    print("}")


def print_mermaid(g, up):
    print("flowchart BT")
    for name, files in LAYERS:
        print(f"    subgraph {name}")
        for f in files:
            print(f"        {f}[sroce_{f}]")
        print("    end")
    red = []
    for i, (a, b) in enumerate(sorted(g.arrows)):
        print(f"    {a} --> {b}")
        if (a, b) in up:
            red.append(str(i))
    if red:
        print(f"    linkStyle {','.join(red)} stroke:red,stroke-width:2px")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, metavar="N",
                    help="exit 1 above N upward arrows or on memory -> engine")
    ap.add_argument("--objdir", metavar="DIR", default=KDIR,
                    help="where the objects are (default: kernel/, as "
                    "make kernel builds them)")
    ap.add_argument("--loops", action="store_true",
                    help="print the loops (components of more than one file)")
    ap.add_argument("--dot", action="store_true",
                    help="print a graphviz graph")
    ap.add_argument("--mermaid", action="store_true",
                    help="print a mermaid flowchart")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print every arrow with its symbols")
    args = ap.parse_args()

    LAYERS[:], allowed = read_layers(DOC)
    ALLOWED.update(allowed)
    g = Graph(args.objdir).build()
    for obj in g.left_out if not g.missing else []:
        print(f"warning: {obj} not built for this kernel: its calls are "
              "not seen", file=sys.stderr)
    if g.missing or g.stale:
        for obj in g.missing:
            print(f"error: no {obj}")
        for obj in g.stale:
            print(f"error: {obj} is older than its sources")
        print(f"FAIL: the calls come from the objects in {args.objdir}, "
              f"{len(g.missing)} missing and {len(g.stale)} out of date: "
              "run make kernel (or scripts/host/build-ko.sh, and "
              "--objdir build/ko/RELEASE/kernel)")
        return 1
    rank = rank_of()
    up = {e for e in g.arrows
          if e[0] in rank and e[1] in rank and rank[e[0]] < rank[e[1]]}
    if args.dot:
        print_dot(g, up)
        return 0
    if args.mermaid:
        print_mermaid(g, up)
        return 0

    errors = [f"sroce_{n}.c is in no layer" for n in g.nodes if n not in rank]
    errors += [f"{a} -> {b} runs up, and architecture.md does not list it"
               for a, b in sorted(up - ALLOWED)]
    errors += [f"architecture.md lists {a} -> {b}, which is not an arrow up"
               for a, b in sorted(ALLOWED - up)]
    errors += [f"memory reaches the engine: {a} -> {b}: "
               + describe(g.arrows[(a, b)])
               for a, b in sorted(g.arrows) if a in MEMORY and b in ENGINE]

    print("layers, bottom first:")
    for name, files in LAYERS:
        print(f"  {name}: {' '.join(files)}")
    if args.verbose:
        print(f"{len(g.arrows)} arrows:")
        for a, b in sorted(g.arrows, key=lambda e: (rank.get(e[0], -1), e)):
            print(f"  {a} -> {b}: {describe(g.arrows[(a, b)])}")
    print(f"{len(up)} upward arrows:")
    for a, b in sorted(up, key=lambda e: (rank[e[0]], e)):
        print(f"  {a} -> {b}: {describe(g.arrows[(a, b)])}")
    if args.loops:
        calls = {e for e, k in g.arrows.items() if k.keys() - {"include"}}
        for title, edges in (("all arrows", g.arrows),
                             ("calls and inlines only", calls)):
            comps = sccs(g.nodes, edges)
            print(f"loops, {title}: {len(comps)}")
            for comp in comps:
                print(f"  {len(comp)} files: {' '.join(comp)}")
    for e in errors:
        print(f"error: {e}")
    if errors or (args.max is not None and len(up) > args.max):
        print(f"FAIL: {len(up)} upward arrows"
              + (f" (at most {args.max})" if args.max is not None else "")
              + (f", {len(errors)} errors" if errors else ""))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

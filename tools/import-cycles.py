#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Finds import cycles between the modules of a Rust crate's source tree.

    import-cycles.py ROOT.rs     e.g. rust/rsoft.rs

Two sibling modules (children of one parent) are in a cycle when each
names the other, directly or through other siblings, counting whatever
their own child modules name. A module naming its parent or its children
is not a cycle: that is how Rust splits one module into files. Paths are
resolved through `crate::`, `super::` and `self::`, through `pub use`
re-exports and through `use` aliases of modules, so a name taken from
`crate::ib` counts as a use of the `ib` module that defines it.

Prints each cycle and exits 1 if there is one; prints nothing and exits
0 otherwise. Comments and doc links are not imports and are ignored.
"""
import os
import re
import sys


def strip_comments(src):
    src = re.sub(r'/\*.*?\*/', '', src, flags=re.S)
    return re.sub(r'//[^\n]*', '', src)


def use_trees(src):
    """The bodies of the `use` declarations of `src`, braces included."""
    for m in re.finditer(r'\buse\s+', src):
        depth, j = 0, m.end()
        while j < len(src):
            c = src[j]
            if c == '{':
                depth += 1
            elif c == '}':
                depth -= 1
            elif c == ';' and depth == 0:
                break
            j += 1
        yield m.start(), src[m.end():j]


def expand(tree, prefix=()):
    """The paths of a use tree: `a::{b, c::d as e}` -> (a, b), (a, c, d)."""
    tree = tree.strip()
    m = re.match(r'((?:\w+\s*::\s*)*)\{(.*)\}$', tree, re.S)
    if m:
        head = tuple(p.strip() for p in m.group(1).split('::') if p.strip())
        depth, cur, items = 0, '', []
        for c in m.group(2):
            if c == ',' and depth == 0:
                items.append(cur)
                cur = ''
                continue
            depth += (c == '{') - (c == '}')
            cur += c
        items.append(cur)
        for it in items:
            if it.strip():
                yield from expand(it, prefix + head)
        return
    path = re.sub(r'\s+as\s+\w+$', '', tree)
    alias = re.search(r'\s+as\s+(\w+)$', tree)
    parts = tuple(p.strip() for p in path.split('::') if p.strip())
    yield prefix + parts, (alias.group(1) if alias else parts[-1] if parts else None)


class Crate:
    def __init__(self, root):
        self.dir = os.path.dirname(root)
        self.files = {}  # module path (tuple) -> file
        self.load((), root)
        self.src = {m: strip_comments(open(f).read()) for m, f in self.files.items()}
        # Names a module brings in with `use` (re-exports and aliases):
        # module -> {name: absolute path}
        self.names = {m: {} for m in self.files}
        for m, src in self.src.items():
            for _, tree in use_trees(src):
                for path, name in expand(tree):
                    absolute = self.absolute(m, path)
                    if absolute and name and name not in ('self', '*'):
                        self.names[m][name] = absolute

    def load(self, mod, path):
        self.files[mod] = path
        src = strip_comments(open(path).read())
        base = path[:-3] if mod else os.path.dirname(path)
        for name in re.findall(r'^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;', src, re.M):
            child = os.path.join(base, name + '.rs')
            if not os.path.exists(child):
                child = os.path.join(base, name, 'mod.rs')
            if os.path.exists(child):
                self.load(mod + (name,), child)

    def absolute(self, mod, path):
        """`path` as written in `mod`, from the crate root; None if external."""
        if not path:
            return None
        if path[0] == 'crate':
            return path[1:]
        if path[0] == 'self':
            return mod + path[1:]
        if path[0] == 'super':
            at = mod
            while path and path[0] == 'super':
                at, path = at[:-1], path[1:]
            return at + path
        if mod + path[:1] in self.files:
            return mod + path
        return None

    def module_of(self, path, seen=()):
        """The module that `path` (from the root) names or names an item of."""
        for k in range(len(path), -1, -1):
            mod = path[:k]
            if mod not in self.files:
                continue
            if k < len(path):
                target = self.names[mod].get(path[k])
                if target and target not in seen:
                    return self.module_of(target + path[k + 1:], seen + (target,))
            return mod
        return ()

    def edges(self):
        for m, src in self.src.items():
            paths = [p for _, t in use_trees(src) for p, _ in expand(t)]
            paths += [tuple(x.split('::')) for x in
                      re.findall(r'\b(?:crate|super|self)(?:::\w+)+', src)]
            local = {n for n in self.names[m]}
            paths += [(w,) for w in re.findall(r'\b(\w+)::', src) if w in local]
            for p in paths:
                if p[0] in self.names[m] and p[0] not in ('crate', 'super', 'self'):
                    absolute = self.names[m][p[0]] + p[1:]
                else:
                    absolute = self.absolute(m, p)
                if absolute is not None:
                    yield m, self.module_of(absolute)


def cycles(crate):
    graph = {}  # parent -> {child: {child}}
    for a, b in crate.edges():
        common = 0
        while common < min(len(a), len(b)) and a[common] == b[common]:
            common += 1
        if common == len(a) or common == len(b):
            continue  # a module and its own ancestor or descendant
        parent = a[:common]
        graph.setdefault(parent, {}).setdefault(a[common], set()).add(b[common])
    found = []
    for parent, g in sorted(graph.items()):
        index, low, stack, on, n = {}, {}, [], set(), [0]

        def visit(v):
            index[v] = low[v] = n[0]
            n[0] += 1
            stack.append(v)
            on.add(v)
            for w in g.get(v, ()):
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
                    found.append((parent, sorted(comp)))

        for v in sorted(g):
            if v not in index:
                visit(v)
    return found


def main():
    sys.setrecursionlimit(10000)
    found = cycles(Crate(sys.argv[1]))
    for parent, comp in found:
        where = '::'.join(('crate',) + parent)
        print(f'import cycle in {where}: {", ".join(comp)}')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())

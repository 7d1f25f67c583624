#!/usr/bin/env python3
"""Import cycles between the files of the workspace's crates.

For each crate (a folder with Cargo.toml and src/), every file is a module; a file depends on
another when it names a path into it: `crate::a::b`, `super::x`, `self::x`, or a child module
(`use report::X` in protocol/mod.rs), in `use` trees (braces included) or inline. A module
that only declares a child (`mod x;`) does not depend on it. Code inside an inline `mod tests`
may use `super::` (the file itself) freely; its other paths count, as test code is code.
Prints each cycle found and exits 1 when there is one; `--graph` prints every dependency.
"""
import os
import re
import sys


def module_files(src):
    """Module path (tuple) -> file, for every .rs file below src reachable as a module."""
    files = {}
    for root, _, names in os.walk(src):
        for name in names:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel[0] == "bin":
                continue  # each bin/*.rs is a crate root of its own
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            files[tuple(rel)] = path
    return files


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text, flags=re.S)  # strings may hold `crate::`
    return re.sub(r"//[^\n]*", "", text)


def use_tree_paths(tree):
    """`a::{b::c, d}` -> [['a','b','c'], ['a','d']]."""
    tree = tree.strip()
    depth = 0
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                prefix = [p for p in tree[:i].split("::") if p.strip()]
                inner = tree[i + 1 : tree.rindex("}")]
                parts, level, start = [], 0, 0
                for j, c in enumerate(inner):
                    if c == "{":
                        level += 1
                    elif c == "}":
                        level -= 1
                    elif c == "," and level == 0:
                        parts.append(inner[start:j])
                        start = j + 1
                parts.append(inner[start:])
                out = []
                for part in parts:
                    if part.strip():
                        out += [[p.strip() for p in prefix] + sub for sub in use_tree_paths(part)]
                return out
            depth += 1
    path = tree.split(" as ")[0]
    return [[p.strip() for p in path.split("::") if p.strip()]]


def resolve(segments, here, files, in_test, reexports=None):
    """The module a path points into: the longest known module prefix, then through the
    re-exports (`pub use`) of that module to where the item is defined; None outside the
    crate."""
    if not segments:
        return None
    head = segments[0]
    if head == "crate":
        base, rest = (), segments[1:]
    elif head == "super":
        if in_test:
            return None  # `super` of an inline test module is the file itself
        base, rest = here[:-1], segments[1:]
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    elif head == "self":
        base, rest = here, segments[1:]
    elif here + (head,) in files:
        base, rest = here, segments  # a child module named without `self::`
    else:
        return None
    best, used = None, 0
    for n in range(len(rest) + 1):
        candidate = base + tuple(rest[:n])
        if candidate in files:
            best, used = candidate, n
    for _ in range(16):  # follow re-exports (a facade is not where an item lives)
        if best is None or reexports is None or used >= len(rest):
            break
        target = reexports.get(best, {}).get(rest[used])
        if target is None:
            break
        best, used = target, len(rest)
    return best


def reexports_of(path, here, files):
    """Name -> defining module of each item `pub use`d by this module."""
    text = strip_comments(open(path, encoding="utf-8").read())
    out = {}
    for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
        for segments in use_tree_paths(m.group(1)):
            if not segments or segments[-1] in ("*", "self"):
                continue
            target = resolve(segments[:-1] + ["__item__"], here, files, False)
            if target is not None:
                out[segments[-1]] = target
    return out


def dependencies(path, here, files, reexports):
    text = strip_comments(open(path, encoding="utf-8").read())
    deps = set()
    # Where inline test modules start (top level only), to read `super::` there as the file.
    test_spans = []
    for m in re.finditer(r"^(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text, flags=re.M):
        level, i = 1, m.end()
        while i < len(text) and level:
            level += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        test_spans.append((m.start(), i))
    in_test = lambda pos: any(a <= pos < b for a, b in test_spans)
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        for segments in use_tree_paths(m.group(1)):
            if m.group(0).lstrip().startswith("pub"):
                pass
            target = resolve(segments, here, files, in_test(m.start()), reexports)
            if target is not None and target != here:
                deps.add(target)
    # Paths inline (outside `use` statements, read whole above: `crate::a::{b::X}` in one
    # would otherwise read as a path into `a` itself).
    uses = [(m.start(), m.end()) for m in re.finditer(r"\buse\s+[^;]+;", text)]
    in_use = lambda pos: any(a <= pos < b for a, b in uses)
    for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", text):
        if in_use(m.start()):
            continue
        target = resolve(m.group(1).split("::"), here, files, in_test(m.start()), reexports)
        if target is not None and target != here:
            deps.add(target)
    return deps


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    show = "--graph" in sys.argv
    found = 0
    crates = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in ("target", ".git", "node_modules")]
        if "Cargo.toml" not in filenames or not os.path.isdir(os.path.join(dirpath, "src")):
            continue
        crates += 1
        src = os.path.join(dirpath, "src")
        files = module_files(src)
        reexports = {m: reexports_of(f, m, files) for m, f in files.items()}
        graph = {m: dependencies(f, m, files, reexports) for m, f in files.items()}
        name = os.path.relpath(dirpath, root)
        if show:
            for m in sorted(graph):
                for d in sorted(graph[m]):
                    print(f"{name}: {'::'.join(m) or 'lib'} -> {'::'.join(d) or 'lib'}")
        for component in cycles(graph):
            found += 1
            names = sorted(os.path.relpath(files[m], root) for m in component)
            print(f"import cycle in {name}: " + " <-> ".join(names))
    print(f"imports: {crates} crates, {found} cycles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The crate's layering, checked: each top-level module of src/ sits on a layer, and may use
(`crate::<module>`, `super::` reaching out of it excepted, `use crate::{...}`) only modules of
lower layers, or itself. Run by CI; prints each import that runs back up and exits non-zero.
Tests (`tests.rs`, `tests/` folders and `#[cfg(test)]` modules) are not held to it. Inside the
modules, no file may take part in a circle of imports (a module's own file excepted for what it
takes from the files of its folder).

The agent protocols (`src/http/protocols/`) are held to more: they call the use cases and nothing
below them, so they may use only `crate::domain`, `crate::service` and the HTTP edge (`crate::http`).

To move a module, change LAYERS here in the same commit, and say why in docs/architecture.md.
"""
import pathlib
import re
import sys

# Bottom to top. A module may use the modules of lower layers, never its own layer's others nor above.
LAYERS = [
    ["domain", "outbound", "ratelimit", "release", "sse", "text", "net", "probe"],  # leaves: no agentd import
    ["fake_llm", "local_postgres", "telemetry"],
    ["llm"],
    ["metrics", "settings"],
    ["tools"],
    ["engine"],
    ["store"],
    ["events", "webhooks", "worker", "secrets", "retention", "knowledge"],
    ["config", "service"],
    ["http", "scheduler"],
    ["app"],
    ["cli"],
    ["main", "lib"],
]
LAYER = {module: i for i, layer in enumerate(LAYERS) for module in layer}
# Within one layer a module may not use another of the same layer unless listed here.
SAME_LAYER: set[tuple[str, str]] = set()

root = pathlib.Path(__file__).resolve().parent.parent / "src"
USE = re.compile(r"crate::(\w+)|crate::\{([^}]*)\}")


def lines_of(path):
    """(number, line, modules it names after `crate::`) of each line of `path` that is not a
    comment, up to its test module (test modules at the end of a file are not held to the rules)."""
    text = path.read_text(encoding="utf-8")
    cut = text.find("#[cfg(test)]\nmod tests")
    if cut >= 0:
        text = text[:cut]
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("//"):
            continue
        used = []
        for single, group in USE.findall(line):
            names = [single] if single else [n.strip().split("::")[0] for n in group.split(",")]
            used.extend(name for name in names if name and name not in ("self", "super"))
        yield number, line, used


problems = []
for path in sorted(root.rglob("*.rs")):
    rel = path.relative_to(root)
    if rel.name == "tests.rs" or "tests" in rel.parts[:-1]:
        continue
    module = rel.parts[0].removesuffix(".rs")
    if module not in LAYER:
        problems.append(f"src/{rel}: module '{module}' has no layer in scripts/check-layers.py")
        continue
    for number, _, names in lines_of(path):
        for used in names:
            if used == module or used not in LAYER:
                continue
            up = LAYER[used] > LAYER[module]
            sideways = LAYER[used] == LAYER[module] and (module, used) not in SAME_LAYER
            if up or sideways:
                problems.append(f"src/{rel}:{number}: {module} (layer {LAYER[module]}) uses {used} (layer {LAYER[used]})")
# The agent protocols speak their wire formats over the use cases, like the REST handlers.
PROTOCOLS = root / "http" / "protocols"
PROTOCOLS_MAY_USE = {"domain", "service", "http"}
for path in sorted(PROTOCOLS.rglob("*.rs")):
    rel = path.relative_to(root)
    for number, line, names in lines_of(path):
        for used in names:
            if used not in PROTOCOLS_MAY_USE:
                problems.append(f"src/{rel}:{number}: a protocol uses crate::{used} (only the use cases: {', '.join(sorted(PROTOCOLS_MAY_USE))})")
        if re.search(r"state\.(store|bus|shutdown)\b", line):
            problems.append(f"src/{rel}:{number}: a protocol reaches past the use cases (the AppState's store, bus or shutdown)")

# Circles between files. Every import of a file (`use` statements, braces expanded, and paths
# written inline) is resolved to the file that defines the name: the deepest module file on its
# path, or, for a name a module file re-exports (`pub use child::Name`), the child's file. A
# module's own file (`mod.rs`, or `x.rs` beside its folder `x/`) is its facade: what it takes
# from the files inside its folder is containment, not an arrow. Any other circle is reported.
USE_STMT = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
INLINE = re.compile(r"\b(?:crate|super)(?:::\w+)+")


def expand(tree):
    """The flat paths of a use tree: `a::{b, c::{d, e}}` -> a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace < 0:
        return [tree.split(" as ")[0]]
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return [path for part in parts if part for path in expand(prefix + part)]


def module_path(path):
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    return parts[:-1] if parts[-1] == "mod" else parts


def module_file(parts):
    base = root.joinpath(*parts) if parts else root
    for candidate in (base.with_suffix(".rs"), base / "mod.rs"):
        if candidate.is_file():
            return candidate
    return root / "lib.rs" if not parts else None


def text_of(path):
    text = path.read_text(encoding="utf-8")
    cut = text.find("#[cfg(test)]\nmod tests")
    text = text[:cut] if cut >= 0 else text
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


SOURCES = [p for p in sorted(root.rglob("*.rs")) if p.name != "tests.rs" and "tests" not in p.relative_to(root).parts[:-1]]
REEXPORTS = {}  # (facade file, name) -> the file of the child that defines it
for path in SOURCES:
    for tree in re.findall(r"^\s*pub\s+use\s+([^;]+);", text_of(path), re.M):
        for used in expand(tree):
            segments = used.split("::")
            if segments[0] in ("crate", "super", "self"):
                continue
            child = module_file(module_path(path) + segments[:1])
            if child is not None and len(segments) > 1:
                REEXPORTS[(path, segments[-1])] = child


def resolve(path, used):
    """The file `used` (a path as written in `path`) names, or None outside the crate."""
    segments = used.split("::")
    here = module_path(path)
    if segments[0] == "crate":
        base, rest = [], segments[1:]
    elif segments[0] == "super":
        base, rest = here, segments
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    elif segments[0] == "self":
        base, rest = here, segments[1:]
    else:
        return None
    found, parts = module_file(base), list(base)
    for segment in rest:
        deeper = module_file(parts + [segment])
        if deeper is None:
            return REEXPORTS.get((found, segment), found)
        found, parts = deeper, parts + [segment]
    return found


def inside(facade, other):
    parts = module_path(facade)
    return module_path(other)[: len(parts)] == parts and module_path(other) != parts


ARROWS = {}
for path in SOURCES:
    text = text_of(path)
    used = [p for tree in USE_STMT.findall(text) for p in expand(tree)]
    used += INLINE.findall(USE_STMT.sub("", text))
    targets = {resolve(path, u) for u in used}
    ARROWS[path] = {t for t in targets if t is not None and t != path and not inside(path, t)}

# Tarjan's strongly connected components: each of more than one file is a circle.
index, low, stack, on_stack, circles, counter = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)


def visit(node):
    index[node] = low[node] = counter[0]
    counter[0] += 1
    stack.append(node)
    on_stack.add(node)
    for nxt in ARROWS.get(node, ()):
        if nxt not in index:
            visit(nxt)
            low[node] = min(low[node], low[nxt])
        elif nxt in on_stack:
            low[node] = min(low[node], index[nxt])
    if low[node] == index[node]:
        component = []
        while True:
            top = stack.pop()
            on_stack.discard(top)
            component.append(top)
            if top == node:
                break
        if len(component) > 1:
            circles.append(sorted(component))


for node in SOURCES:
    if node not in index:
        visit(node)
for circle in circles:
    members = set(circle)
    ties = [f"{a.relative_to(root)} -> {b.relative_to(root)}" for a in circle for b in sorted(ARROWS[a]) if b in members]
    problems.append(f"a circle of files: {'; '.join(ties)}")

for problem in problems:
    print(problem)
if problems:
    sys.exit(1)
print(f"check-layers: {len(LAYERS)} layers, no import runs back up, no circle of {len(SOURCES)} files")

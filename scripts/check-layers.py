#!/usr/bin/env python3
"""The crate's layering, checked: each top-level module of src/ sits on a layer, and may use
(`crate::<module>`, `super::` reaching out of it excepted, `use crate::{...}`) only modules of
lower layers, or itself. Run by CI; prints each import that runs back up and exits non-zero.
Tests (`tests.rs`, `tests/` folders and `#[cfg(test)]` modules) are not held to it.

The agent protocols (`src/http/protocols/`) are held to more: they call the use cases and nothing
below them, so they may use only `crate::domain`, `crate::service` and the HTTP edge (`crate::http`).

To move a module, change LAYERS here in the same commit, and say why in docs/architecture.md.
"""
import pathlib
import re
import sys

# Bottom to top. A module may use the modules of lower layers, never its own layer's others nor above.
LAYERS = [
    ["domain", "outbound", "ratelimit", "sse", "text", "net"],  # leaves: no agentd import
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
for problem in problems:
    print(problem)
if problems:
    sys.exit(1)
print(f"check-layers: {len(LAYERS)} layers, no import runs back up")

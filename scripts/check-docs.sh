#!/usr/bin/env bash
# Check the repository's Markdown: every relative link must lead somewhere.
#
# For every *.md file tracked by git or new (untracked but not ignored), outside target/,
# node_modules/ and tests/*/node_modules/:
# - every relative link `[text](path)`, `[text](path#anchor)`, `[text](#anchor)`, image
#   `![alt](path)` and reference definition `[label]: path` must name a file or directory that
#   exists (paths starting with `/` are taken from the repository root);
# - an anchor must match a heading of the target Markdown file under GitHub's slug rules
#   (lowercase; spaces become '-'; punctuation other than '-' and '_' is dropped; repeated
#   headings get -1, -2, ...), or an explicit `<a name="...">` / `id="..."`; an anchor into
#   another kind of file may only be a line anchor (`#L10`, `#L10-L20`).
# Links starting with http://, https:// or mailto: are not checked, nor is anything inside code
# (fenced blocks and `code spans`).
#
# Also, no *.md file and no src/**/*.rs file may mention API.md, ARCHITECTURE.md or
# CONVENTIONS.md unless such a file exists at the mentioned path (taken relative to the
# mentioning file's directory, or to the repository root).
#
# Each problem is printed as `file:line: message`; the exit status is 1 if there is any.
#
# Usage: scripts/check-docs.sh [DIR]   (DIR: the tree to check, default this repository; outside
# a git work tree every file under DIR counts as new)
set -euo pipefail

root=${1:-"$(dirname "$0")/.."}
root=$(cd "$root" && pwd)

exec python3 - "$root" <<'PY'
import os
import re
import subprocess
import sys
import unicodedata
from urllib.parse import unquote

ROOT = sys.argv[1]
DESIGN_DOCS = re.compile(
    r"(?<![A-Za-z0-9_./-])((?:[A-Za-z0-9_.-]+/)*(?:API|ARCHITECTURE|CONVENTIONS)\.md)(?![A-Za-z0-9_])"
)
problems = []


def problem(path, line, message):
    problems.append(f"{path}:{line}: {message}")


def excluded(rel):
    parts = rel.split("/")
    if parts[0] == "target" or "node_modules" in parts:
        return True
    return False


def candidate_files():
    """Tracked and new (untracked, not ignored) files, relative to ROOT."""
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            check=True,
            capture_output=True,
        ).stdout
        files = [f for f in out.decode("utf-8", "surrogateescape").split("\0") if f]
        # A tracked file deleted in the work tree is not there to check.
        return sorted(f for f in set(files) if os.path.isfile(os.path.join(ROOT, f)))
    except (subprocess.CalledProcessError, FileNotFoundError):
        found = []
        for dirpath, dirnames, filenames in os.walk(ROOT):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            for name in filenames:
                found.append(os.path.relpath(os.path.join(dirpath, name), ROOT))
        return sorted(found)


FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def outside_fences(lines):
    """(index, line) of the lines outside fenced code blocks (the fences themselves excluded)."""
    fence = None
    for index, line in enumerate(lines):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            continue
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) <= {fence[0]}:
                fence = None
            continue
        yield index, line


def prose_lines(text):
    """(line number, text) of the lines outside fenced code blocks, with code spans and HTML
    comments blanked out."""
    out = []
    in_comment = False
    for index, line in outside_fences(text.split("\n")):
        number = index + 1
        # HTML comments, possibly over several lines.
        cleaned = ""
        rest = line
        while rest:
            if in_comment:
                end = rest.find("-->")
                if end < 0:
                    rest = ""
                else:
                    rest = rest[end + 3:]
                    in_comment = False
            else:
                start = rest.find("<!--")
                if start < 0:
                    cleaned += rest
                    rest = ""
                else:
                    cleaned += rest[:start]
                    rest = rest[start + 4:]
                    in_comment = True
        out.append((number, blank_code_spans(cleaned)))
    return out


CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")


def blank_code_spans(line):
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = heading.strip()
    text = re.sub(r"\s+#+\s*$", "", text)  # closing hashes of an ATX heading
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "")
    text = text.lower()
    kept = []
    for ch in text:
        if ch in "-_ ":
            kept.append(ch)
        elif unicodedata.category(ch)[0] in "LNM":  # letters, numbers, marks
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


anchor_cache = {}


def anchors_of(path):
    if path in anchor_cache:
        return anchor_cache[path]
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        anchor_cache[path] = set()
        return anchor_cache[path]
    anchors = set()
    seen = {}
    lines = text.split("\n")
    for index, line in outside_fences(lines):
        heading = None
        atx = re.match(r"^ {0,3}#{1,6}(?:\s+(.*))?$", line)
        if atx:
            heading = atx.group(1) or ""
        elif (
            index + 1 < len(lines)
            and line.strip()
            and re.match(r"^ {0,3}(=+|-+)\s*$", lines[index + 1])
            and not re.match(r"^ {0,3}([-*+]\s|>|\|)", line)
        ):
            heading = line  # a setext heading
        if heading is not None:
            base = slug(heading)
            count = seen.get(base, 0)
            seen[base] = count + 1
            anchors.add(base if count == 0 else f"{base}-{count}")
        for explicit in re.finditer(r"""<a\s+[^>]*?(?:name|id)\s*=\s*["']([^"']+)["']""", line):
            anchors.add(explicit.group(1))
    anchor_cache[path] = anchors
    return anchors


# [text](target) or ![alt](target): target is <...> or a run without spaces, then an optional
# title. The text may hold one level of nested brackets.
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
EXTERNAL = re.compile(r"^(https?:|mailto:)", re.IGNORECASE)


def check_target(rel, number, target):
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    if not target or EXTERNAL.match(target):
        return
    path_part, _, anchor = target.partition("#")
    path_part = unquote(path_part)
    anchor = unquote(anchor)
    source_dir = os.path.dirname(os.path.join(ROOT, rel))
    if path_part == "":
        resolved = os.path.join(ROOT, rel)
    elif path_part.startswith("/"):
        resolved = os.path.normpath(os.path.join(ROOT, path_part.lstrip("/")))
    else:
        resolved = os.path.normpath(os.path.join(source_dir, path_part))
    shown = os.path.relpath(resolved, ROOT)
    if os.path.relpath(resolved, ROOT).startswith(".."):
        problem(rel, number, f"link '{target}' leads outside the repository")
        return
    if not os.path.exists(resolved):
        problem(rel, number, f"link '{target}': {shown} does not exist")
        return
    if not anchor and "#" not in target:
        return
    if not anchor:
        problem(rel, number, f"link '{target}' has an empty anchor")
        return
    if resolved.endswith(".md") and os.path.isfile(resolved):
        if anchor not in anchors_of(resolved):
            problem(rel, number, f"link '{target}': no heading of {shown} has the anchor '#{anchor}'")
    elif not re.fullmatch(r"L\d+(-L\d+)?", anchor):
        problem(rel, number, f"link '{target}': cannot check anchor '#{anchor}' in {shown} (not a Markdown file)")


def check_links(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        text = f.read()
    for number, line in prose_lines(text):
        for match in INLINE_LINK.finditer(line):
            check_target(rel, number, match.group(1))
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            check_target(rel, number, definition.group(1))


def check_design_doc_mentions(rel):
    try:
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            lines = f.read().split("\n")
    except UnicodeDecodeError:
        return
    source_dir = os.path.dirname(os.path.join(ROOT, rel))
    for number, line in enumerate(lines, start=1):
        for match in DESIGN_DOCS.finditer(line):
            mentioned = match.group(1)
            places = [os.path.normpath(os.path.join(source_dir, mentioned)),
                      os.path.normpath(os.path.join(ROOT, mentioned))]
            if not any(os.path.isfile(p) for p in places):
                problem(rel, number, f"mentions {mentioned}, which is not in the repository")


files = [f for f in candidate_files() if not excluded(f)]
markdown = [f for f in files if f.endswith(".md")]
rust = [f for f in files if f.startswith("src/") and f.endswith(".rs")]
for rel in markdown:
    check_links(rel)
for rel in markdown + rust:
    check_design_doc_mentions(rel)

for line in problems:
    print(line)
if problems:
    print(f"check-docs: {len(problems)} problem(s) in {len(markdown)} Markdown files", file=sys.stderr)
    sys.exit(1)
print(f"check-docs: {len(markdown)} Markdown files, every relative link leads somewhere", file=sys.stderr)
PY

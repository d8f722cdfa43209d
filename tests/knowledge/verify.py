#!/usr/bin/env python3
"""Sanity checks for the retrieval-test corpus and questions.json."""
import json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
STOP = set("a an the of to in on for and or is are be by with what which how many much does do can i my we our it its at from that this when who where why if before after".split())

docs = {f: open(os.path.join(CORPUS, f), encoding="utf-8").read()
        for f in sorted(os.listdir(CORPUS)) if f.endswith(".md")}
ok = True
print(f"documents: {len(docs)}")
for f, t in docs.items():
    words = len(re.findall(r"\S+", t))
    sections = len(re.findall(r"^## ", t, re.M))
    good = 120 <= words <= 400 and t.startswith("# ") and 2 <= sections <= 4
    ok &= good
    print(f"  {'OK ' if good else 'BAD'} {f}: {words} words, {sections} sections")

qs = json.load(open(os.path.join(HERE, "questions.json"), encoding="utf-8"))
print(f"questions: {len(qs)}")
ok &= len(qs) == 20
toks = lambda s: {w for w in re.findall(r"[a-z0-9]+", s.lower()) if w not in STOP}
for i, q in enumerate(qs, 1):
    a, d = q["answer"], q["document"]
    total = sum(t.count(a) for t in docs.values())
    in_doc = docs.get(d, "").count(a)
    n = len(a.split())
    good = total == 1 and in_doc == 1 and 3 <= n <= 12
    ok &= good
    qt, dt = toks(q["question"]), toks(docs.get(d, ""))
    overlap = sorted(qt & dt)
    print(f"  {'OK ' if good else 'BAD'} Q{i:02d} corpus={total} doc={in_doc} words={n} "
          f"overlap={len(overlap)}/{len(qt)} {overlap} -> {d}")
print("ALL CHECKS PASSED" if ok else "CHECKS FAILED")
sys.exit(0 if ok else 1)

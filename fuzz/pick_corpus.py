#!/usr/bin/env python3
"""Pick at most N inputs of a merged corpus to commit (docs/fuzzing.md).

A merged corpus is still hundreds of files; the committed one is kept to
a few dozen. This reads the control file of a libFuzzer merge
(-merge=1 -use_counters=0 -merge_control_file=CTL) and copies the inputs
that add the most edges, greedily, smallest first on ties. libFuzzer
writes only the edges each input adds over those merged before it, so
the pick is approximate: check what it covers with one more merge.

usage: pick_corpus.py CTL N OUT_DIR
"""
import os
import shutil
import sys

ctl, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
files, cov = [], {}
for line in open(ctl):
    parts = line.split()
    if not parts:
        continue
    if parts[0] == "COV":
        cov[int(parts[1])] = set(parts[2:])
    elif parts[0] not in ("STARTED", "FT", "DONE") and os.path.exists(line.strip()):
        files.append(line.strip())
total = set().union(*cov.values())
have, chosen = set(), []
while len(chosen) < n:
    best = max(cov, key=lambda i: (len(cov[i] - have), -os.path.getsize(files[i])))
    if not cov[best] - have:
        break
    have |= cov[best]
    chosen.append(best)
os.makedirs(out, exist_ok=True)
for i in chosen:
    shutil.copy(files[i], out)
print(f"{len(chosen)} files add {len(have)} of {len(total)} edges")

#!/usr/bin/env bash
# The layering of the source tree, checked on every #include "..." of the project's own headers:
#   core/common   the base: errors, logging; includes nothing else of the project
#   data/         tokenizer, datasets, loader: the base only
#   kernels/      the op interface and its CPU/CUDA twins: the base only
#   core/model    the transformer maths: the base, kernels, and itself (no flags, no training, no ranks)
#   core/         the rest of core: data, kernels, core; never parallel/
#   parallel/     everything below it; apps/ and tests/ may include anything
# A violation prints the file, the line and the rule it breaks. ~1 s.
set -euo pipefail
cd "${GPTRAIN_SRC:-$(dirname "$0")/../..}"
python3 - <<'PY'
import os, re, sys
# (folder prefix, allowed include prefixes); the longest matching folder wins.
RULES = [
    ("core/common/", ["core/common/"]),
    ("data/", ["core/common/", "data/"]),
    ("kernels/", ["core/common/", "kernels/"]),
    ("core/model/", ["core/common/", "core/model/", "kernels/"]),
    ("core/", ["core/", "data/", "kernels/"]),
    ("parallel/", ["core/", "data/", "kernels/", "parallel/"]),
]
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
bad = 0
files = 0
for top in ("core", "data", "kernels", "parallel"):
    for root, _, names in os.walk(top):
        for n in names:
            if not n.endswith((".h", ".cpp", ".cu", ".cuh")):
                continue
            path = os.path.join(root, n)
            files += 1
            rule = max((r for r in RULES if path.startswith(r[0])), key=lambda r: len(r[0]))
            for ln, line in enumerate(open(path, errors="replace"), 1):
                m = inc.match(line)
                if not m or "/" not in m.group(1):
                    continue  # system-style or same-folder include
                target = m.group(1)
                if not any(target.startswith(a) for a in rule[1]):
                    print(f"{path}:{ln}: includes {target}, but {rule[0]} may include only {', '.join(rule[1])}")
                    bad += 1
print(f"include layers: {files} files checked, {bad} violations")
sys.exit(1 if bad else 0)
PY

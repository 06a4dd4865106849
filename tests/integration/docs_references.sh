#!/usr/bin/env bash
# The documentation points at things that exist:
#   1. every relative link in the repository's Markdown files resolves to a file, and a #anchor to a heading
#      of it (GitHub's heading anchors);
#   2. every repository path README.md and docs/*.md name in backticks (`scripts/test.sh`, `tests/mpi/*.sh`)
#      exists, and so does every script, preset and executable (build/bin/X) that README.md's commands run;
#   3. every --flag README.md names is a flag of one of the apps (their --list-flags, inspect_data's --help).
# A failure names the file, the line and what is missing. ~3 s.
set -euo pipefail
: "${GPTRAIN_SRC:?}" "${GPTRAIN_BIN:?}"
python3 - "$GPTRAIN_SRC" "$GPTRAIN_BIN" <<'PY'
import glob, json, os, re, subprocess, sys

src, bindir = sys.argv[1], sys.argv[2]
SKIP_DIRS = {".git", ".pyref", "shared", "node_modules"}
TOPS = ("apps/", "core/", "data/", "docs/", "kernels/", "parallel/", "scripts/", "tests/", "cmake/", ".ci/")
# Flags of other tools that README.md shows on their command lines.
OTHER_TOOLS = {"output-on-failure"}  # ctest
problems = []


def markdown_files():
    for root, dirs, names in os.walk(src):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        for n in names:
            if n.endswith(".md"):
                yield os.path.relpath(os.path.join(root, n), src)


def anchors(path):
    """GitHub's heading anchors: lowercase, code marks and punctuation dropped, spaces to dashes, repeats
    numbered (-1, -2, ...)."""
    seen, out, fenced = {}, set(), False
    for line in open(os.path.join(src, path), encoding="utf-8"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


# 1. links
links = 0
for md in sorted(markdown_files()):
    fenced = False
    for i, line in enumerate(open(os.path.join(src, md), encoding="utf-8"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "``", line)):
            if re.match(r"[a-z]+:", target):
                continue
            links += 1
            file, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(md), file)) if file else md
            if not os.path.exists(os.path.join(src, path)):
                problems.append(f"{md}:{i}: link to {target}: {path} does not exist")
            elif anchor and path.endswith(".md") and anchor not in anchors(path):
                problems.append(f"{md}:{i}: link to {target}: {path} has no heading with the anchor #{anchor}")

# 2. paths named in README.md and docs/
paths = 0
for md in ["README.md"] + sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md"))):
    for i, line in enumerate(open(os.path.join(src, md), encoding="utf-8"), 1):
        for tok in re.findall(r"`([^`\s]+)`", line):
            t = tok.rstrip(",.;:").split("#")[0]
            if not t.startswith(TOPS) or "<" in t or "{" in t:
                continue
            paths += 1
            if not glob.glob(os.path.join(src, t)):
                problems.append(f"{md}:{i}: `{tok}` names no file of the repository")

# ... and in README.md's commands: the scripts and presets they run, and the built executables (build/bin/X)
fenced = False
for i, line in enumerate(open(os.path.join(src, "README.md"), encoding="utf-8"), 1):
    if line.lstrip().startswith("```"):
        fenced = not fenced
        continue
    if not fenced:
        continue
    for tok in line.split("#")[0].split():
        tok = tok.strip("'\"")
        if tok.startswith("build/bin/"):
            paths += 1
            if not os.path.exists(os.path.join(bindir, tok[len("build/bin/"):])):
                problems.append(f"README.md:{i}: {tok} is not built by this build")
        elif tok.startswith(("scripts/", "tests/", "docs/")):  # data/... in a command is the user's data
            paths += 1
            if not glob.glob(os.path.join(src, tok)):
                problems.append(f"README.md:{i}: {tok} names no file of the repository")

# 3. flags named in README.md
known = {"help", "list-flags", "config"} | OTHER_TOOLS
for app in ["pretrain_gpt", "preprocess_data", "generate", "convert_to_hf", "convert_from_hf", "gptrain_forward",
            "gptrain_preflight", "merge_datasets"]:
    out = subprocess.run([os.path.join(bindir, app), "--list-flags"], capture_output=True, text=True, check=True).stdout
    known |= {f["name"] for f in json.loads(out)}
for cmd in ["summary", "doc", "samples"]:
    out = subprocess.run([os.path.join(bindir, "inspect_data"), cmd, "--help"], capture_output=True, text=True).stdout
    known |= set(re.findall(r"--([a-zA-Z0-9][a-zA-Z0-9-]*)", out))
flags = 0
for i, line in enumerate(open(os.path.join(src, "README.md"), encoding="utf-8"), 1):
    for name in re.findall(r"(?<![\w-])--([a-zA-Z][a-zA-Z0-9-]*[a-zA-Z0-9])", line):
        flags += 1
        if name not in known:
            problems.append(f"README.md:{i}: --{name} is no flag of the apps")

print(f"docs_references: {links} links, {paths} paths, {flags} flags checked")
for p in problems:
    print("FAIL " + p)
sys.exit(1 if problems else 0)
PY

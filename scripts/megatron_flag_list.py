#!/usr/bin/env python3
"""Derives Megatron-LM's pretraining flags from its source, statically, and writes docs/megatron-flags.tsv
(the fixture that tests/integration/megatron_flag_table.sh compares with `pretrain_gpt --list-flags`).

    scripts/megatron_flag_list.py --src ~/Megatron-LM                      # a checkout
    scripts/megatron_flag_list.py --git-dir Megatron-LM/.git --rev main   # a (bare) git directory
    scripts/megatron_flag_list.py --src ~/Megatron-LM --out - --names    # the flag names only, to stdout

Nothing is imported or run: Python's `ast` reads megatron/training/arguments.py. Every `_add_<group>_args`
function (and `_add_<group>_arguments`) called by add_megatron_arguments contributes, as group <group>:
  - the option strings of its `add_argument(...)` calls;
  - the flags that `ArgumentGroupFactory(Config, exclude=[...])` makes from the fields of the dataclass
    Config (and of its base classes, base fields first): `--` + the field name with `_` -> `-`; a bool
    field whose default is not False becomes `--no-<name>` and `--disable-<name>` (argparse's store_false);
    the `arg_names` of the field's `argparse_meta` metadata replace these names; fields with init=False,
    ClassVar fields and excluded names make no flag.
The first spelling is the flag, the others are listed beside it. A flag counts as deprecated when its help
text (or its field's docstring) says "deprecated". The TSV holds names and groups only, no help text.
"""
import argparse
import ast
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
ARGUMENTS = "megatron/training/arguments.py"


class Source:
    """Reads files of a Megatron-LM tree: a checkout directory, or a git directory at a revision."""

    def __init__(self, src=None, git_dir=None, rev="HEAD"):
        self.src, self.git_dir, self.rev = src, git_dir, rev
        self.cache = {}
        if git_dir:
            self.commit = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", rev + "^{commit}"],
                                         check=True, capture_output=True, text=True).stdout.strip()
        else:
            r = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True, text=True)
            self.commit = r.stdout.strip() if r.returncode == 0 else None

    def read(self, path):
        """The file's text, or None when it does not exist."""
        if path not in self.cache:
            if self.git_dir:
                r = subprocess.run(["git", "--git-dir", self.git_dir, "show", f"{self.rev}:{path}"],
                                   capture_output=True, text=True)
                self.cache[path] = r.stdout if r.returncode == 0 else None
            else:
                full = os.path.join(self.src, path)
                self.cache[path] = open(full).read() if os.path.isfile(full) else None
        return self.cache[path]

    def module(self, dotted):
        """(path, ast) of a module (`a.b.c` -> a/b/c.py or a/b/c/__init__.py), or None."""
        base = dotted.replace(".", "/")
        for path in (base + ".py", base + "/__init__.py"):
            text = self.read(path)
            if text is not None:
                return path, ast.parse(text, path)
        return None


def module_name(path):
    name = path[:-3].replace("/", ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def absolute(importer_path, node):
    """The absolute module name of an ImportFrom inside the file importer_path."""
    if not node.level:
        return node.module
    package = module_name(importer_path)
    if not importer_path.endswith("__init__.py"):
        package = package.rsplit(".", 1)[0]
    for _ in range(node.level - 1):
        package = package.rsplit(".", 1)[0]
    return package + ("." + node.module if node.module else "")


def find_class(src, path, tree, name, scope=None, depth=0):
    """(path, tree, ClassDef) of class `name` as seen from module `path`: defined there, or imported (also
    inside `scope`, the function that uses it), following re-exports."""
    if depth > 8:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return path, tree, node
    imports = [n for n in ast.walk(scope) if isinstance(n, ast.ImportFrom)] if scope else []
    imports += [n for n in tree.body if isinstance(n, ast.ImportFrom)]
    for node in imports:
        for alias in node.names:
            if (alias.asname or alias.name) == name:
                target = src.module(absolute(path, node))
                if target:
                    found = find_class(src, target[0], target[1], alias.name, None, depth + 1)
                    if found:
                        return found
    return None


def is_classvar(annotation):
    text = ast.unparse(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar"))


def is_bool(annotation):
    """bool, Optional[bool], bool | None: argparse gets a store_true/store_false switch."""
    text = ast.unparse(annotation).replace(" ", "")
    return text in ("bool", "Optional[bool]", "typing.Optional[bool]", "bool|None", "Union[bool,None]")


def literal(node, tree):
    """A literal value (also through a module-level name), or raises ValueError."""
    if isinstance(node, ast.Name):
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in stmt.targets):
                return ast.literal_eval(stmt.value)
        raise ValueError(node.id)
    return ast.literal_eval(node)


def is_field_call(node):
    return isinstance(node, ast.Call) and ast.unparse(node.func) in ("field", "dataclasses.field")


def dataclass_fields(src, path, tree, cls, warnings):
    """[(name, [flag spellings], docstring)] of a dataclass and its bases, in dataclass field order."""
    fields = {}
    for base in cls.bases:
        base_name = ast.unparse(base)
        if base_name in ("object", "ABC"):
            continue
        found = find_class(src, path, tree, base_name)
        if found is None:
            warnings.append(f"{cls.name}: base class {base_name} not found")
            continue
        for name, spellings, doc in dataclass_fields(src, *found, warnings):
            fields[name] = (spellings, doc)
    body = cls.body
    for i, stmt in enumerate(body):
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if is_classvar(stmt.annotation):
            continue
        name = stmt.target.id
        doc = ""
        if i + 1 < len(body) and isinstance(body[i + 1], ast.Expr) and isinstance(body[i + 1].value, ast.Constant) \
                and isinstance(body[i + 1].value.value, str):
            doc = body[i + 1].value.value
        default, meta = stmt.value, None
        if is_field_call(stmt.value):
            kw = {k.arg: k.value for k in stmt.value.keywords}
            if "init" in kw and isinstance(kw["init"], ast.Constant) and kw["init"].value is False:
                fields.pop(name, None)
                continue
            default = kw.get("default")
            if "metadata" in kw:
                try:
                    meta = literal(kw["metadata"], tree).get("argparse_meta")
                except (ValueError, SyntaxError, AttributeError):
                    # A metadata dict with non-literal values (types, functions): read arg_names alone.
                    meta = None
                    m = kw["metadata"]
                    if isinstance(m, ast.Dict):
                        for k, v in zip(m.keys, m.values):
                            if isinstance(k, ast.Constant) and k.value == "argparse_meta" and isinstance(v, ast.Dict):
                                meta = {}
                                for k2, v2 in zip(v.keys, v.values):
                                    if isinstance(k2, ast.Constant) and k2.value == "arg_names":
                                        meta["arg_names"] = literal(v2, tree)
                    if meta is None:
                        warnings.append(f"{cls.name}.{name}: metadata not readable statically")
        dashed = name.replace("_", "-")
        if is_bool(stmt.annotation) and not (isinstance(default, ast.Constant) and default.value is False):
            spellings = [f"--no-{dashed}", f"--disable-{dashed}"]
        else:
            spellings = [f"--{dashed}"]
        if meta and "arg_names" in meta:
            spellings = list(meta["arg_names"])
        fields[name] = (spellings, doc)
    return [(n, s, d) for n, (s, d) in fields.items()]


def group_name(function):
    return re.sub(r"^_add_|_(args|arguments)$", "", function)


def derive(src):
    """[(group, [spellings], deprecated)] in parser order, and warnings."""
    text = src.read(ARGUMENTS)
    if text is None:
        sys.exit(f"megatron_flag_list: {ARGUMENTS} not found in the given Megatron-LM tree")
    tree = ast.parse(text, ARGUMENTS)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if "add_megatron_arguments" not in functions:
        sys.exit(f"megatron_flag_list: {ARGUMENTS} has no add_megatron_arguments()")
    order = [ast.unparse(c.func) for c in ast.walk(functions["add_megatron_arguments"])
             if isinstance(c, ast.Call) and ast.unparse(c.func) in functions]
    order = sorted(dict.fromkeys(order), key=lambda f: next(
        c.lineno for c in ast.walk(functions["add_megatron_arguments"])
        if isinstance(c, ast.Call) and ast.unparse(c.func) == f))
    rows, warnings, seen = [], [], set()

    def add(group, spellings, help_text):
        names = [s[2:] for s in spellings if s.startswith("--")]
        if not names:
            return
        if seen.intersection(names):  # argparse itself would refuse a second definition
            warnings.append(f"{group}: {', '.join(sorted(seen.intersection(names)))} defined twice")
            return
        seen.update(names)
        rows.append((group, names, bool(re.search(r"\bdeprecated\b", help_text or "", re.I))))

    for fname in order:
        fn, group = functions[fname], group_name(fname)
        calls = sorted((n for n in ast.walk(fn) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
        for call in calls:
            callee = ast.unparse(call.func)
            if callee.endswith(".add_argument"):
                spellings = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if len(spellings) != len(call.args):
                    warnings.append(f"{fname} line {call.lineno}: an option string is not a literal")
                help_kw = next((k.value for k in call.keywords if k.arg == "help"), None)
                try:
                    help_text = ast.literal_eval(help_kw) if help_kw is not None else ""
                except ValueError:
                    help_text = ast.unparse(help_kw)
                add(group, spellings, help_text)
            elif callee == "ArgumentGroupFactory":
                cls_name = ast.unparse(call.args[0])
                exclude_node = next((k.value for k in call.keywords if k.arg == "exclude"), None)
                if exclude_node is None and len(call.args) > 1:
                    exclude_node = call.args[1]
                exclude = set()
                if exclude_node is not None:
                    if isinstance(exclude_node, ast.Name):  # a local list of names
                        assigned = [s.value for s in ast.walk(fn) if isinstance(s, ast.Assign)
                                    and any(isinstance(t, ast.Name) and t.id == exclude_node.id for t in s.targets)]
                        exclude_node = assigned[0] if assigned else exclude_node
                    exclude = set(ast.literal_eval(exclude_node))
                found = find_class(src, ARGUMENTS, tree, cls_name, fn)
                if found is None:
                    warnings.append(f"{fname}: dataclass {cls_name} not found")
                    continue
                for name, spellings, doc in dataclass_fields(src, *found, warnings):
                    if name not in exclude:
                        add(group, spellings, doc)
    return rows, warnings


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", help="a Megatron-LM checkout")
    ap.add_argument("--git-dir", help="a Megatron-LM git directory (bare or .git)")
    ap.add_argument("--rev", default="HEAD", help="revision in --git-dir (default HEAD)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "megatron-flags.tsv"), help="'-' for stdout")
    ap.add_argument("--names", action="store_true", help="write only the flag names (--name), one a line")
    a = ap.parse_args()
    if bool(a.src) == bool(a.git_dir):
        ap.error("give --src or --git-dir")
    src = Source(a.src, a.git_dir, a.rev)
    rows, warnings = derive(src)
    for w in warnings:
        print(f"megatron_flag_list: warning: {w}", file=sys.stderr)
    if a.names:
        text = "".join(f"--{n}\n" for _, names, _ in rows for n in names[:1])
    else:
        groups = len(dict.fromkeys(g for g, _, _ in rows))
        text = ("# Megatron-LM's pretraining flags by argument group: megatron/training/arguments.py at commit "
                f"{src.commit or 'unknown'},\n"
                "# with the flags its ArgumentGroupFactory makes from config dataclasses "
                f"({len(rows)} flags in {groups} groups).\n"
                "# Written by scripts/megatron_flag_list.py (regenerate, do not edit). Columns: group (the "
                "_add_<group>_args function),\n# flag, other spellings (comma-separated), deprecated there. Input "
                "of scripts/gen_flag_docs.py, which writes\n# docs/megatron-flag-status.md from it and pretrain_gpt "
                "--list-flags.\n")
        text += "".join(f"{g}\t{names[0]}\t{','.join(names[1:])}\t{'yes' if dep else ''}\n"
                        for g, names, dep in rows)
    if a.out == "-":
        sys.stdout.write(text)
    else:
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, a.out)
        print(f"megatron_flag_list: {len(rows)} flags -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()

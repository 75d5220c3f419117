"""The house's rules, read from the source: no import cycle inside the package (TYPE_CHECKING and function-level
imports included: each is a module that needs the other to be read), and docs/architecture.md names only rooms
that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .conftest import REPO, write_tree

PACKAGE = "mcp_evals_pipeline"


def _module(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """module -> the package's modules it imports anywhere in its source. `from pkg import name` counts as an import
    of pkg.name when that is a module, else of pkg; a module's own parent packages are not edges (importing a
    submodule always runs its package's __init__, which is no dependency the module chose)."""
    modules = {_module(p, root): p for p in (root / package).rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for me, path in modules.items():
        here = me if path.name == "__init__.py" else me.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    base = ".".join([*parent, *([base] if base else [])])
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for name in names:
                target = resolve(name)
                if target and target != me and not me.startswith(target + "."):
                    edges.add(target)
        graph[me] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(REPO, PACKAGE)
    assert len(graph) > 100 and graph[f"{PACKAGE}.cli"], "the graph is read from the real source"
    assert cycles(graph) == []


def test_a_cycle_through_type_checking_or_a_function_is_found(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n",
        "pkg/b.py": "class B: ...\ndef f():\n    from pkg import c\n",
        "pkg/c.py": "from .a import x\n",
        "pkg/d.py": "from pkg import a\n",  # one way only: no cycle
    })
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_the_architecture_page_names_only_what_exists() -> None:
    page = (REPO / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`(mcp_evals_pipeline/[\w/.]+|dbt_like_sql/[\w/.]*|tasks/[\w/.-]*)`", page))
    assert len(named) >= 20, named
    missing = sorted(n for n in named if not (REPO / n.rstrip("/")).exists())
    assert missing == [], missing
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / PACKAGE).glob("*.py") if p.name != "__init__.py"}
    modules |= {p.relative_to(REPO).as_posix() + "/" for p in (REPO / PACKAGE).iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}
    unnamed = sorted(m for m in modules if m not in named)
    assert unnamed == [], f"rooms the page does not name: {unnamed}"


def test_the_duplicate_code_check_fails_on_a_copied_block(tmp_path: Path) -> None:
    """`make test` runs pylint's duplicate-code check (pyproject's [tool.pylint]) over the package: clean today,
    and a six-line block written twice fails it."""
    import subprocess
    import sys

    pylint = [sys.executable, "-m", "pylint", "--rcfile", str(REPO / "pyproject.toml"), "--score=n"]
    clean = subprocess.run([*pylint, PACKAGE], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert clean.returncode == 0, clean.stdout[-3000:]
    block = "".join(f"    total = total * {n} + len(items) - {n}\n" for n in range(7))
    write_tree(tmp_path, {"pkg/__init__.py": "", **{f"pkg/{name}.py": f"def {name}(items, total):\n{block}"
                                                           "    return total\n" for name in ("first", "second")}})
    copied = subprocess.run([*pylint, "pkg"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert copied.returncode != 0 and "R0801" in copied.stdout and "Similar lines in 2 files" in copied.stdout


def test_the_security_page_names_only_files_and_settings_that_exist() -> None:
    """docs/security.md promises a test beside every property: each file it names exists, and each setting it names
    is read by the package or its scripts (a renamed variable would leave the page promising a switch that does
    nothing)."""
    page = (REPO / "docs" / "security.md").read_text()
    files = set(re.findall(r"`((?:tests|scripts|sandbox|grader|agents|upstreams|reporting)/[\w/.]+\.(?:py|sh))", page))
    files |= set(re.findall(r"`(redaction\.py)`", page))
    assert len(files) >= 12, files
    where = (REPO, REPO / PACKAGE)
    missing = sorted(f for f in files if not any((root / f).is_file() for root in where))
    assert missing == [], missing
    settings = set(re.findall(r"\b(MCP_EVALS_[A-Z_]+)\b", page))
    source = "\n".join(p.read_text() for p in [*(REPO / PACKAGE).rglob("*.py"), *(REPO / "scripts").glob("*.sh")])
    unread = sorted(s for s in settings if s not in source)
    assert len(settings) >= 5 and unread == [], unread

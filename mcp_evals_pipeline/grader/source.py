"""Static facts about a workspace's source: which files, what they import, which SDK path they took."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable
from pathlib import Path

from mcp_evals_pipeline.contracts.grade import SdkPath

PY_SUFFIXES = (".py",)
JS_SUFFIXES = (".ts", ".tsx", ".mts", ".cts", ".js", ".mjs", ".cjs", ".jsx")
_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages", "dist", "build"}


def _skip_dir(path: Path) -> bool:
    return path.name.startswith(".") or path.name in _SKIP_DIRS or (path / "pyvenv.cfg").exists()


def source_files(workspace: Path, suffixes: Iterable[str]) -> list[Path]:
    """The workspace's own source files (not virtualenvs, node_modules, caches or hidden directories)."""
    suffixes = tuple(suffixes)
    found: list[Path] = []
    stack = [workspace]
    while stack:
        current = stack.pop()
        try:
            entries = sorted(current.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if not _skip_dir(entry):
                    stack.append(entry)
            elif entry.suffix in suffixes:
                found.append(entry)
    return sorted(found)


def python_imports(files: Iterable[Path]) -> set[str]:
    """Dotted module names imported anywhere (files that do not parse are skipped; typecheck reports them)."""
    modules: set[str] = set()
    for path in files:
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules.add(node.module)
                modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


_JS_IMPORT = re.compile(r"""(?:from\s+|import\s*\(\s*|require\s*\(\s*|import\s+)["']([^"']+)["']""")


def js_imports(files: Iterable[Path]) -> set[str]:
    modules: set[str] = set()
    for path in files:
        try:
            modules.update(_JS_IMPORT.findall(path.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return modules


def imports_module(modules: set[str], wanted: str) -> bool:
    """`wanted` or one of its submodules is imported (`mcp.server` is satisfied by `mcp.server.mcpserver`)."""
    return any(m == wanted or m.startswith(wanted + ".") or m.startswith(wanted + "/") for m in modules)


_HAND_ROLLED_PY = ("starlette", "fastapi", "aiohttp", "flask", "http.server", "uvicorn", "tornado", "sanic",
                   "quart", "werkzeug", "socketserver", "hypercorn", "litestar", "falcon", "bottle")
_HAND_ROLLED_JS = ("express", "hono", "fastify", "koa", "http", "node:http", "@hono/node-server")


def detect_sdk_path(workspace: Path) -> SdkPath:
    """Which way the workspace reached MCP, from its imports: a recorded fact, worth nothing ("unknown" when there
    is no workspace)."""
    if not workspace.is_dir():
        return "unknown"
    py = python_imports(source_files(workspace, PY_SUFFIXES))
    js = js_imports(source_files(workspace, JS_SUFFIXES))
    if imports_module(py, "mcp_use") or imports_module(js, "mcp-use"):
        return "mcp-use"
    if imports_module(py, "fastmcp") or imports_module(js, "fastmcp"):
        return "fastmcp"
    if imports_module(py, "mcp") or imports_module(js, "@modelcontextprotocol/sdk"):
        return "official-sdk"
    if any(imports_module(py, m) for m in _HAND_ROLLED_PY) or any(imports_module(js, m) for m in _HAND_ROLLED_JS):
        return "hand-rolled"
    return "unknown"


def compile_errors(workspace: Path, files: Iterable[Path]) -> list[str]:
    """Byte-compile each file in memory (nothing written to the workspace); one line per failure."""
    errors = []
    for path in files:
        rel = path.relative_to(workspace)
        try:
            compile(path.read_bytes(), str(rel), "exec", dont_inherit=True)
        except SyntaxError as exc:
            errors.append(f"{rel}:{exc.lineno}: {exc.msg}")
        except (ValueError, RecursionError, MemoryError) as exc:
            errors.append(f"{rel}: {type(exc).__name__}: {exc}")
    return errors


def _python_without_comments(text: str) -> str:
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type != tokenize.COMMENT]
        return tokenize.untokenize(tokens)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text  # does not tokenize: typecheck has failed it already; match what is there


def _js_without_comments(text: str) -> str:
    """`//` and `/* */` comments blanked outside string and template literals (regex literals are not told apart:
    a `//` inside one would cut the rest of its line, which can only make a pattern harder to match)."""
    out: list[str] = []
    i, n, quote = 0, len(text), ""
    while i < n:
        ch = text[i]
        if quote:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = ""
            i += 1
        elif ch in "'\"`":
            quote = ch
            out.append(ch)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            out.append(" ")
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def code_text(path: Path, text: str) -> str:
    """The source without its comments: a requirement on the code is not met by a comment that mentions it."""
    if path.suffix in PY_SUFFIXES:
        return _python_without_comments(text)
    return _js_without_comments(text)


def missing_source_patterns(files: Iterable[Path], patterns: list[str]) -> list[str]:
    texts = []
    for path in files:
        try:
            texts.append(code_text(path, path.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return [p for p in patterns if not any(re.search(p, text) for text in texts)]

"""sdkPath detection and source listing on real directory trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_evals_pipeline.grader.source import (
    PY_SUFFIXES,
    compile_errors,
    detect_sdk_path,
    missing_source_patterns,
    source_files,
)

from .conftest import write_tree


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"server.py": "from mcp.server.mcpserver import MCPServer\n"}, "official-sdk"),
        ({"src/app.py": "import mcp.server.lowlevel as ll\n"}, "official-sdk"),
        ({"server.py": "from fastmcp import FastMCP\n"}, "fastmcp"),
        ({"server.py": "import mcp_use\nfrom mcp.server import MCPServer\n"}, "mcp-use"),
        ({"server.py": "from starlette.applications import Starlette\n"}, "hand-rolled"),
        ({"server.py": "from http.server import HTTPServer\n"}, "hand-rolled"),
        ({"src/server.ts": 'import { MCPServer } from "mcp-use";\n'}, "mcp-use"),
        ({"src/index.ts": "import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';\n"}, "official-sdk"),
        ({"index.js": "const express = require('express');\n"}, "hand-rolled"),
        ({"server.py": "print('nothing')\n"}, "unknown"),
        # an SDK only inside the agent's own virtualenv or node_modules is not the workspace's choice
        ({".venv/lib/mcp/x.py": "import mcp\n", "node_modules/a/index.js": "require('mcp-use')\n",
          "server.py": "import json\n"}, "unknown"),
    ],
)
def test_detect_sdk_path(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    assert detect_sdk_path(write_tree(tmp_path, files)) == expected


def test_source_files_skip_environments_and_caches(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "server.py": "", "pkg/mod.py": "", "venv/pyvenv.cfg": "", "venv/lib/x.py": "",
        "__pycache__/a.py": "", ".hidden/b.py": "", "node_modules/c.py": "",
    })
    assert [p.relative_to(tmp_path).as_posix() for p in source_files(tmp_path, PY_SUFFIXES)] == [
        "pkg/mod.py", "server.py",
    ]


def test_compile_errors_name_file_and_line(tmp_path: Path) -> None:
    write_tree(tmp_path, {"ok.py": "x = 1\n", "bad.py": "x = 1\ndef f(:\n"})
    errors = compile_errors(tmp_path, source_files(tmp_path, PY_SUFFIXES))
    assert len(errors) == 1 and errors[0].startswith("bad.py:2:")
    assert not list(tmp_path.rglob("__pycache__")), "typecheck must not write into the workspace"


@pytest.mark.parametrize(("name", "text", "met"), [
    ("server.ts", 'server.use("mcp:tools/call", guard);\n', True),
    ("server.ts", '// server.use("mcp:tools/call") would go here\nconst x = 1;\n', False),
    ("server.ts", '/* server.use("mcp:tools/call") */ const x = 1;\n', False),
    ("server.ts", 'const s = "// server.use(\\"mcp:tools/call\\")"; server.use("mcp:tools/call", g);\n', True),
    ("server.py", "return InputRequiredResult(requests)\n", True),
    ("server.py", "# InputRequiredResult would be the raw type\nreturn {}\n", False),
])
def test_a_comment_never_meets_a_source_requirement(tmp_path: Path, name: str, text: str, met: bool) -> None:
    path = tmp_path / name
    path.write_text(text)
    patterns = [r'server\.use\(\s*"mcp:tools/call"' if name.endswith(".ts") else r"\bInputRequiredResult\b"]
    assert (missing_source_patterns([path], patterns) == []) is met

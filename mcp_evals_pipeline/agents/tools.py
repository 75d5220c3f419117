"""The one tool executor every built-in runner uses: shell, read_file, write_file, list_files in the sandbox.

A recorded session (replay) and a live model (openai) go through exactly this code, so a replayed trial exercises
the same paths, limits and error texts as a live one. Every call writes a `tool_call` and a `tool_result` event
to the transcript. Anything the agent got wrong (a path outside the workspace, a missing file, a failing command,
malformed arguments, an unknown tool) comes back to it as text: it is the agent's to handle, never an exception
that would end the trial. Only a broken sandbox (SandboxError, an infra failure) propagates.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from mcp_evals_pipeline.agents.base import TranscriptWriter
from mcp_evals_pipeline.sandbox.base import PathEscape, Sandbox, SandboxError

DEFAULT_SHELL_TIMEOUT_S = 120.0
MAX_SHELL_TIMEOUT_S = 600.0
# What one tool result may put into the model's context (the sandbox already truncates command output and file
# reads; this bounds the rest, e.g. a huge file listing).
MAX_RESULT_CHARS = 60_000

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "description": (
                "Run a bash command in the workspace directory and return its exit code and combined "
                "stdout/stderr. Commands that do not finish within timeout_s seconds are killed. A process "
                "left running in the background is killed when the session ends."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The bash command line to run."},
                    "timeout_s": {
                        "type": "number",
                        "description": f"Seconds before the command is killed (default {DEFAULT_SHELL_TIMEOUT_S:g}, "
                                       f"at most {MAX_SHELL_TIMEOUT_S:g}).",
                    },
                },
                "required": ["command"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file; the path is relative to the workspace root.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "File path relative to the workspace."}},
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": (
                "Create or overwrite a text file with the given content; parent directories are created. The "
                "path is relative to the workspace root."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace."},
                    "content": {"type": "string", "description": "The complete new content of the file."},
                },
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": (
                "List the files under a directory of the workspace, recursively (skipping .venv, node_modules, "
                "__pycache__ and .git)."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory relative to the workspace (default '.')."},
                },
                "required": [],
                "additionalProperties": False,
            },
        },
    },
]

TOOL_NAMES: tuple[str, ...] = tuple(schema["function"]["name"] for schema in TOOL_SCHEMAS)


class ToolFailure(Exception):
    """A call that cannot be done as asked: its message is reported to the agent."""


class ToolArgumentError(ToolFailure):
    """The arguments of a call do not fit the tool."""


def parse_arguments(raw: str | dict[str, Any] | None) -> dict[str, Any]:
    """Arguments as a dict: models send a JSON string, recorded sessions a dict."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ToolArgumentError(f"arguments are not valid JSON ({exc.msg} at position {exc.pos})") from exc
    if not isinstance(value, dict):
        raise ToolArgumentError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


def _string(args: dict[str, Any], key: str, *, required: bool = True, default: str | None = None) -> str:
    value = args.get(key, default)
    if value is None:
        if required:
            raise ToolArgumentError(f"missing required argument {key!r}")
        return ""
    if not isinstance(value, str):
        raise ToolArgumentError(f"argument {key!r} must be a string, got {type(value).__name__}")
    return value


def _clip(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return text[:MAX_RESULT_CHARS] + f"\n[... {len(text) - MAX_RESULT_CHARS} more characters not shown]"


class ToolExecutor:
    """Runs tool calls against one sandbox and records them. `calls` counts every call, good or bad."""

    def __init__(
        self,
        sandbox: Sandbox,
        transcript: TranscriptWriter,
        *,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.sandbox = sandbox
        self.transcript = transcript
        # time.monotonic() value at which the agent's time budget ends: no command may run past it.
        self.deadline = deadline
        self._clock = clock
        self.calls = 0

    def execute(self, tool: str, raw_args: str | dict[str, Any] | None, call_id: str | None = None) -> str:
        """Run one call; returns the text the agent sees. Raises only SandboxError (infra)."""
        self.calls += 1
        try:
            args = parse_arguments(raw_args)
        except ToolArgumentError as exc:
            # Keep what the model sent, verbatim, so the transcript shows the malformed call.
            self.transcript.emit("tool_call", tool=tool, call_id=call_id, args={"_raw": str(raw_args)})
            return self._result(tool, call_id, f"error: {exc}", error=True)
        self.transcript.emit("tool_call", tool=tool, call_id=call_id, args=args)
        started = self._clock()
        exit_code: int | None = None
        extra: dict[str, Any] = {}
        try:
            if tool == "shell":
                text, exit_code, extra = self._shell(args)
                error = exit_code != 0
            elif tool == "read_file":
                text, error = self.sandbox.read_file(_string(args, "path")), False
            elif tool == "write_file":
                path, content = _string(args, "path"), _string(args, "content")
                written = self.sandbox.write_file(path, content)
                text, error = f"wrote {written} bytes to {path}", False
            elif tool == "list_files":
                text, error = self._list_files(_string(args, "path", required=False, default=".") or "."), False
            else:
                text, error = f"error: unknown tool {tool!r} (available: {', '.join(TOOL_NAMES)})", True
        except SandboxError:
            raise
        except ToolFailure as exc:
            text, error = f"error: {exc}", True
        except PathEscape as exc:
            text, error = f"error: {exc}; every path must stay inside the workspace", True
        except FileNotFoundError:
            text, error = f"error: no such file: {args.get('path')}", True
        except IsADirectoryError:
            text, error = f"error: {args.get('path')} is a directory (use list_files)", True
        except NotADirectoryError:
            text, error = f"error: a parent of {args.get('path')} is a file, not a directory", True
        except (OSError, ValueError) as exc:
            # e.g. a permission error, or content with a lone surrogate that cannot be written as UTF-8.
            text, error = f"error: {type(exc).__name__}: {exc}", True
        extra["durationMs"] = int((self._clock() - started) * 1000)
        return self._result(tool, call_id, text, error=error, exit_code=exit_code, extra=extra)

    def _result(self, tool: str, call_id: str | None, text: str, *, error: bool, exit_code: int | None = None,
                extra: dict[str, Any] | None = None) -> str:
        text = _clip(text)
        self.transcript.emit("tool_result", tool=tool, call_id=call_id, text=text, exit_code=exit_code,
                             extra={"error": error, **(extra or {})})
        return text

    def _shell(self, args: dict[str, Any]) -> tuple[str, int | None, dict[str, Any]]:
        command = _string(args, "command")
        if not command.strip():
            raise ToolArgumentError("argument 'command' is empty")
        timeout = args.get("timeout_s", DEFAULT_SHELL_TIMEOUT_S)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ToolArgumentError("argument 'timeout_s' must be a positive number of seconds")
        timeout = min(float(timeout), MAX_SHELL_TIMEOUT_S)
        budget_note = ""
        if self.deadline is not None:
            remaining = self.deadline - self._clock()
            if remaining <= 0:
                return "error: the time budget is used up; the command was not run", None, {"timedOut": False}
            if remaining < timeout:
                # A command must not outlive the agent's own budget (a hung server would otherwise eat the
                # harness's time, not the agent's).
                timeout, budget_note = remaining, " (the rest of the time budget)"
        result = self.sandbox.run(command, timeout_s=timeout)
        if result.timed_out:
            head = f"timed out after {timeout:.3g}s{budget_note}; the command was killed"
        else:
            head = f"exit code: {result.exit_code}"
        output = result.output if result.output else "(no output)"
        return f"{head}\n{output}", result.exit_code, {"timedOut": result.timed_out}

    def _list_files(self, rel: str) -> str:
        root = self.sandbox.resolve(rel)
        if not root.exists():
            raise ToolFailure(f"no such directory: {rel}")
        if root.is_file():
            return root.relative_to(self.sandbox.workspace).as_posix()
        files = self.sandbox.list_files(rel)
        return "\n".join(files) if files else f"(no files under {rel})"

"""The functional grader: one deterministic, unweighted ladder, stopped at the first failure.

install -> typecheck -> [imports] -> [source] -> entry -> [build] -> start -> handshake -> tools -> [resources]
-> calls. Everything after `start` is a real MCP client speaking Streamable HTTP to the server under test, on one
session, so calls can assert state. The server and all its children are killed on every path. A failure of the
grader itself is an infra error (`infra.grader`), never a contract failure.

Grading works on a private copy of the workspace (grader/scratch.py), so the snapshot stays the agent's work, and
every step that runs agent-written code runs in a box: install, tsc and buildCommand in a StepBox
(grader/boxes.py), the server in the server box (sandbox/server_box.py), each as an unprivileged uid. Where no box
can be made the trial is `infra.sandbox` and nothing of the workspace runs. What each step got is in
`TrialGrade.isolation`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import subprocess
import time
import traceback
from collections import defaultdict
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from pydantic import ValidationError

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.grade import Check, TrialGrade
from mcp_evals_pipeline.contracts.ladder import BY_NAME, LADDER
from mcp_evals_pipeline.contracts.task import Invariant, ResourceRead, TaskContract, ToolCall, ToolForm
from mcp_evals_pipeline.contracts.task_base import Expectation
from mcp_evals_pipeline.grader import stages  # noqa: F401 - importing registers the opt-in stages
from mcp_evals_pipeline.grader.boxes import NoBox, StepBox
from mcp_evals_pipeline.grader.expectations import (
    clip,
    declared_type_ok,
    describe,
    expectation_failure,
    resource_text,
    schema_types,
    text_content,
    tool_result_text,
)
from mcp_evals_pipeline.grader.features import FEATURES, Feature, Step, StepFailed
from mcp_evals_pipeline.grader.runtimes import RUNTIMES, Installation, InstallError, Runtime, runtime_for
from mcp_evals_pipeline.grader.scratch import Copied, Scratch, Workdir, WorkspaceTooLarge, copy_workspace
from mcp_evals_pipeline.grader.source import detect_sdk_path, missing_source_patterns
from mcp_evals_pipeline.versions import GRADER_VERSION

# How long a server may listen only on some other port before `start` fails (a server may open a helper port
# first; one that ignores PORT never listens on it).
FOREIGN_PORT_GRACE_S = 1.5
START_ATTEMPTS = 3  # a server that lost its port to another process before binding it gets another port
BUILD_TIMEOUT_S = 600
SERVER_OUTPUT_CHARS = 20_000

# What talking to a broken server can raise. These are the server's fault (a contract failure); anything else
# raised while grading is a bug of ours and becomes infra.grader.
_SERVER_FAULTS: tuple[type[BaseException], ...] = (
    MCPError, TimeoutError, OSError, ValidationError, json.JSONDecodeError, RuntimeError, httpx2.HTTPError,
    anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
)


def _drop_termination_noise(record: logging.LogRecord) -> bool:
    # The server is killed before its session is closed (a hung server must not hang the grader), so the
    # client's closing DELETE always fails; that warning says nothing.
    return not record.getMessage().startswith("Session termination failed")


logging.getLogger("mcp.client.streamable_http").addFilter(_drop_termination_noise)


class InfraFailure(Exception):
    def __init__(self, code: Infra, detail: str):
        super().__init__(detail)
        self.code = code
        self.detail = detail


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _server_fault(exc: BaseException) -> bool:
    return all(isinstance(leaf, _SERVER_FAULTS) for leaf in _leaves(exc))


def _describe_exc(exc: BaseException) -> str:
    parts = []
    for leaf in _leaves(exc):
        if isinstance(leaf, MCPError):
            parts.append(f"MCPError {leaf.code}: {leaf.message}")
        elif isinstance(leaf, TimeoutError):
            parts.append("timed out")
        else:
            parts.append(f"{type(leaf).__name__}: {leaf}".strip())
    return clip("; ".join(dict.fromkeys(parts)), 500)


def _normalize_tool_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _mime(value: str | None) -> str:
    return (value or "").replace(" ", "").lower()


def _listing_problems(kind: str, key: str, expected: Any, listed: dict[str, Any]) -> list[str]:
    """Is `key` listed, with the expected name and MIME type (each compared only when the contract gives it)?"""
    found = listed.get(key)
    if found is None:
        return [f"missing {kind} {key!r}"]
    problems = []
    if expected.name is not None and found.name != expected.name:
        problems.append(f"{kind} {key!r} name was {found.name!r} (expected {expected.name!r})")
    if expected.mime_type is not None and _mime(found.mime_type) != _mime(expected.mime_type):
        problems.append(f"{kind} {key!r} MIME type was {found.mime_type!r} (expected {expected.mime_type!r})")
    return problems


def _signature(tool: str, args: dict[str, Any]) -> str:
    return f"{tool}({json.dumps(args, separators=(',', ':'))})"


class Grading:
    def __init__(self, contract: TaskContract, workspace: Path, runtime: Runtime):
        self._init_plan(contract)
        self.runtime = runtime
        self._scratch = Scratch()
        self.scratch = self._scratch.root
        try:
            # Every stage reads the copy (self.workspace) and the server runs in it; the original is never touched.
            copied = copy_workspace(workspace, self.scratch / "workspace")
        except WorkspaceTooLarge as exc:
            self.refused, copied = str(exc), Copied([], [])
        except BaseException:
            self._scratch.close()
            raise
        self.workspace = self.scratch / "workspace"
        self.work = Workdir(self.workspace, self.scratch, tuple(copied.outside), special=tuple(copied.special))
        self.boxes: list[StepBox] = []  # the build box (buildCommand), closed before the server starts
        self.installation: Installation | None = None
        self.entry: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.url: str | None = None
        self.box = "none"  # how the server was isolated (sandbox/server_box.py)
        self.client: Client | None = None
        self.stack = AsyncExitStack()
        self.tool_names: dict[str, str] = {}
        self.stage_ms: dict[str, float] = defaultdict(float)
        self.handshake_info: dict[str, str | None] = {}
        # What the MCP client sends; features (oauth) set them before the handshake.
        self.http_headers: dict[str, str] = {}
        self.http_auth: httpx2.Auth | None = None

    def _init_plan(self, contract: TaskContract) -> None:
        """What planning needs (and nothing that touches a workspace): planned_checks() plans with only this."""
        self.contract = contract
        self.refused: str | None = None  # why the workspace was not copied (over the size cap): contract.install
        self.read_counts: dict[str, int] = defaultdict(int)
        self.call_counts: dict[str, int] = defaultdict(int)
        self.results: dict[str, types.CallToolResult] = {}  # call check id -> its result, for its form checks
        self.features: list[Feature] = [cls(self) for cls in FEATURES.values() if cls.applies(contract)]

    # ---- the plan -------------------------------------------------------------------------------------------

    def plan(self) -> list[Step]:
        """Every check, stage by stage in the ladder's order (contracts/ladder.py)."""
        if self.contract.deterministic_readiness is not None:
            # Open-ended tasks: typecheck + required imports only, reported apart from the headline.
            steps = [Step("typecheck", "typecheck", self._typecheck), Step("imports", "imports", self._imports)]
        else:
            steps = self._ladder_steps()
        if self.refused is not None:  # nothing of it is graded: the install stage fails, naming why
            return [Step("install", "install", self._refuse), *(s for s in steps if s.stage != "install")]
        return steps

    def _ladder_steps(self) -> list[Step]:
        features = {f.name: f for f in self.features}
        steps: list[Step] = []
        for stage in LADDER:
            if stage.feature is not None:
                steps += features[stage.name].steps() if stage.name in features else []
            else:
                steps += self._core_steps(stage.name)
        return steps

    def _core_steps(self, stage: str) -> list[Step]:
        c = self.contract
        if stage == "resources":
            listing = [Step("resources", "resources", self._resources)] if (
                c.expected_resources or c.expected_resource_templates) else []
            return listing + [self._read_step(r, "resources", "resource-read") for r in c.resource_reads]
        if stage == "calls":
            steps: list[Step] = []
            for call in c.calls:
                steps += [self._read_step(r, "calls", "resource-read") for r in call.reads_before]
                steps += self._call_steps(call)
                steps += [self._read_step(r, "calls", "resource-read") for r in call.reads_after]
            return steps + [self._read_step(r, "calls", "post-call-resource-read") for r in c.post_call_resource_reads]
        wanted = {"imports": False, "source": bool(c.required_source_patterns), "build": bool(c.build_command)}
        if not wanted.get(stage, True):
            return []
        run = {"install": self._install, "typecheck": self._typecheck, "source": self._source, "entry": self._entry,
               "build": self._build, "start": self._start, "handshake": self._handshake, "tools": self._tools}[stage]
        return [Step(stage, stage, run)]

    def _read_step(self, read: ResourceRead, stage: str, prefix: str) -> Step:
        key = f"{prefix}:{read.uri}"
        self.read_counts[key] += 1
        return Step(f"{key}:{self.read_counts[key]}", stage, lambda: self._read(read), list(read.requirements))

    def _call_steps(self, call: ToolCall) -> list[Step]:
        """The call, then each form of its tool that can apply to it, then each invariant it triggers."""
        self.call_counts[call.tool] += 1
        n = self.call_counts[call.tool]
        call_id = f"call:{call.tool}:{n}"
        steps = [Step(call_id, "calls", lambda: self._call(call, call_id), list(call.requirements))]
        tool = next(t for t in self.contract.expected_tools if t.name == call.tool)
        for k, form in enumerate(tool.forms, start=1):
            # A form for the other outcome than the call declares can never apply: no check (the call's own
            # isError check fails first if the outcome differs).
            if (form.when == "ok" and call.is_error is True) or (form.when == "error" and call.is_error is False):
                continue
            where = f"{call_id}'s result, by form {k} of {call.tool}"
            steps.append(Step(f"form:{call.tool}:{n}:{k}", "calls", lambda f=form, w=where: self._form(call_id, f, w),
                              list(form.requirements)))
        for i, inv in enumerate(self.contract.invariants, start=1):
            if call.tool in inv.after:
                steps.append(Step(f"invariant:{i}:after:{call_id}", "calls", lambda v=inv: self._invariant(v),
                                  list(inv.requirements)))
        return steps

    def requirements_of(self, step: Step) -> list[str]:
        """The requirement ids a check tests: its element's, plus those checked by its whole stage."""
        by_stage = [r.id for r in self.contract.requirements if step.stage in r.checked_by]
        if step.stage == "tools":
            by_stage += [rid for t in self.contract.expected_tools for rid in t.requirements]
        if step.stage == "resources" and not step.id.startswith("resource-read"):
            by_stage += [rid for r in (*self.contract.expected_resources, *self.contract.expected_resource_templates)
                         for rid in r.requirements]
        return list(dict.fromkeys([*step.requirements, *by_stage]))

    # ---- running it ------------------------------------------------------------------------------------------

    async def run(self) -> TrialGrade:
        checks: list[Check] = []
        failure_code: str | None = None
        error: str | None = None
        permanent = False
        sdk_path = detect_sdk_path(self.workspace)
        try:
            steps = self.plan()
            for index, step in enumerate(steps):
                started = time.perf_counter()
                try:
                    detail = await step.run()
                    checks.append(Check(id=step.id, passed=True, detail=detail, stage=step.stage,
                                        requirements=self.requirements_of(step)))
                except StepFailed as failed:
                    checks.append(Check(id=step.id, passed=False, detail=failed.detail, stage=step.stage,
                                        requirements=self.requirements_of(step)))
                    checks += [
                        Check(id=s.id, passed=False, detail=f"blocked by {step.stage}", stage=s.stage,
                              requirements=self.requirements_of(s))
                        for s in steps[index + 1 :]
                    ]
                    failure_code = BY_NAME[step.stage].failure_code
                    break
                finally:
                    self.stage_ms[step.stage] += (time.perf_counter() - started) * 1000
        except InfraFailure as infra:
            failure_code, error = infra.code, infra.detail
        except NoBox as exc:  # this host cannot box agent code: another attempt here would meet the same
            failure_code, error, permanent = Infra.SANDBOX, str(exc), True
        except Exception as exc:  # a bug of the grader: the trial is invalid, not failed
            failure_code = Infra.GRADER
            error = f"grader crashed: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
        finally:
            server_output = await self._cleanup()
        return TrialGrade(
            contract_pass=failure_code is None,
            checks=checks,
            failure_code=failure_code,
            sdk_path=sdk_path,
            scored_for_pass_rate=self.contract.scored_for_pass_rate,
            grader_version=GRADER_VERSION,
            sdk_version=self.installation.sdk_version(sdk_path) if self.installation else None,
            sdk_package=self.installation.sdk_package(sdk_path) if self.installation else None,
            protocol_version=self.handshake_info.get("protocol_version"),
            server_name=self.handshake_info.get("server_name"),
            server_version=self.handshake_info.get("server_version"),
            stage_ms={k: round(v, 1) for k, v in self.stage_ms.items()},
            isolation=dict(self.work.isolation),
            server_output=server_output,
            error=error,
            permanent=permanent,
        )

    async def _cleanup(self) -> str | None:
        """Close the session, kill the server tree, collect its output; on every path."""
        output = None
        if self.proc is not None:
            from mcp_evals_pipeline.sandbox import server_box  # lazily: the sandbox package imports docker

            # Kill first: closing the session against a dead server fails fast, against a hung one it could hang.
            server_box.stop(self.proc)
            output = procs.tail(self.scratch / "server.log", SERVER_OUTPUT_CHARS)
        with contextlib.suppress(Exception):
            await self.stack.aclose()
        for feature in self.features:
            with contextlib.suppress(Exception):
                await feature.close()
        self.close_boxes()
        self._scratch.close()
        return output

    def open_box(self) -> StepBox:
        """The box of a buildCommand: no network, the runtime read-only."""
        if not self.boxes:
            inst = self.installation
            from mcp_evals_pipeline.sandbox import server_box  # lazily: the sandbox package imports docker

            roots = server_box.runtime_roots(inst.interpreter, inst.path_prefix, inst.runtime_roots) if inst else []
            self.boxes.append(StepBox(self.scratch, net="none", ro_paths=roots,
                                      ro_binds=inst.ro_binds if inst else []))
        return self.boxes[0]

    def close_boxes(self) -> None:
        for box in self.boxes:
            box.close()  # kills whatever a build command left running
        self.boxes.clear()

    def server_status(self) -> str:
        if self.proc is not None and self.proc.poll() is not None:
            return f" (server exited with code {self.proc.returncode})"
        return ""

    async def talk(self, what: str, op: Callable[[], Awaitable[Any]], timeout: float) -> Any:
        """Run one exchange with the server; its failures are the server's, with a backstop timeout."""
        try:
            with anyio.fail_after(timeout):
                return await op()
        except Exception as exc:
            if not _server_fault(exc):
                raise
            raise StepFailed(f"{what} failed: {_describe_exc(exc)}{self.server_status()}") from exc

    # ---- stages ----------------------------------------------------------------------------------------------

    async def _refuse(self) -> str:
        raise StepFailed(self.refused or "the workspace was refused")

    async def _install(self) -> str:
        try:
            self.installation = await anyio.to_thread.run_sync(self.runtime.install, self.work)
        except InstallError as exc:
            if exc.infra:
                raise InfraFailure(Infra.INSTALL, exc.detail) from exc
            raise StepFailed(exc.detail) from exc
        self.work.isolation.setdefault("install", "reused build: nothing ran")
        if self.work.special:  # named, so a workspace that relied on one learns why it is missing
            return f"{self.installation.detail}; left out (never opened): {', '.join(self.work.special[:10])}"
        return self.installation.detail

    async def _typecheck(self) -> str | None:
        try:
            problems = await anyio.to_thread.run_sync(self.runtime.typecheck, self.work, self.installation)
        except InstallError as exc:  # the toolchain of a source-only typecheck could not be installed
            raise InfraFailure(Infra.INSTALL, exc.detail) from exc
        if problems:
            more = f" (+{len(problems) - 10} more)" if len(problems) > 10 else ""
            raise StepFailed("; ".join(problems[:10]) + more)
        return f"{len(self.runtime.source_files(self.workspace))} source files"

    async def _imports(self) -> str:
        assert self.contract.deterministic_readiness is not None
        modules = self.runtime.imported_modules(self.workspace)
        wanted = [i.source for i in self.contract.deterministic_readiness.imports]
        missing = [w for w in wanted if not any(m == w or m.startswith(w + ".") for m in modules)]
        if missing:
            raise StepFailed(f"required imports missing: {', '.join(missing)}")
        return f"imports {', '.join(wanted)}"

    async def _source(self) -> None:
        missing = missing_source_patterns(self.runtime.source_files(self.workspace),
                                          self.contract.required_source_patterns)
        if missing:
            raise StepFailed(f"no source file matches {', '.join(repr(p) for p in missing)}")

    async def _entry(self) -> str:
        for candidate in self.contract.entry_candidates:
            path = self.workspace / candidate
            if path.is_file():
                self.entry = path
                return candidate
        raise StepFailed(f"no entry file found (tried: {', '.join(self.contract.entry_candidates)})")

    def _env(self, port: int | None = None) -> dict[str, str]:
        for sub in ("home", "tmp"):
            (self.scratch / sub).mkdir(exist_ok=True)
        assert self.installation is not None
        return procs.sanitized_env(
            home=self.scratch / "home", tmp=self.scratch / "tmp", path_prefix=self.installation.path_prefix,
            extra={"PORT": str(port)} if port is not None else None,
        )

    def _run_dir(self) -> Path:
        return self.workspace

    def _command(self, template: list[str], port: int | None = None) -> list[str]:
        assert self.entry is not None
        rel = str(self.entry.relative_to(self.workspace))
        return [part.replace("{port}", str(port or "")).replace("{entry}", rel) for part in template]

    async def _build(self) -> str:
        assert self.contract.build_command is not None
        cmd = self._command(self.contract.build_command)
        box = self.open_box()
        self.work.isolation["build"] = box.description
        try:
            done = await anyio.to_thread.run_sync(
                lambda: box.run(cmd, cwd=self._run_dir(), env=self._env(), timeout_s=BUILD_TIMEOUT_S))
        except OSError as exc:
            raise StepFailed(f"{' '.join(cmd)} could not run: {exc}") from exc
        if done.timed_out:
            raise StepFailed(f"{' '.join(cmd)} timed out after {BUILD_TIMEOUT_S}s")
        if done.returncode != 0:
            raise StepFailed(f"{' '.join(cmd)} exited {done.returncode}: {clip(done.output, 1500)}")
        return " ".join(cmd)

    async def _start(self) -> str:
        assert self.installation is not None and self.entry is not None
        extra_env: dict[str, str] = {}
        for feature in self.features:
            try:
                extra_env.update(await feature.before_start())
            except StepFailed:
                raise
            except Exception as exc:  # a service of the harness did not come up: not the workspace's fault
                raise InfraFailure(feature.infra,
                                   f"{feature.name}: could not start: {type(exc).__name__}: {exc}") from exc
        from mcp_evals_pipeline.sandbox import server_box  # lazily: the sandbox package imports docker

        self.close_boxes()  # nothing a build step started outlives it
        rel = self.entry.relative_to(self.workspace)
        for attempt in range(1, START_ATTEMPTS + 1):
            if self.proc is not None:  # the last attempt's box and relays go before the next one's
                server_box.stop(self.proc)
            port = procs.free_port()
            cmd = (self._command(self.contract.start_command, port) if self.contract.start_command
                   else self.runtime.default_start_command(self.installation, self.entry))
            inst = self.installation
            env = {**self._env(port), **extra_env}  # HOME and TMPDIR exist before they are handed to the server's uid
            box, self.box = server_box.prefix(
                readable=server_box.runtime_roots(inst.interpreter, inst.path_prefix, inst.runtime_roots),
                writable=[self._run_dir(), self.scratch / "home", self.scratch / "tmp"], ro_binds=inst.ro_binds,
                cwd=self._run_dir(), env=env)
            self.work.isolation["start"] = self.box
            cmd = [*box, *cmd]
            try:
                self.proc = procs.spawn(cmd, cwd=self._run_dir(), env=env, log_path=self.scratch / "server.log")
            except OSError as exc:
                raise StepFailed(f"could not launch {' '.join(cmd)}: {exc}") from exc
            if await self._until_listening(port, rel, last_attempt=attempt == START_ATTEMPTS):
                at = server_box.endpoint(self.proc, port)  # a box's relay on the host, or the port itself
                self.url = f"http://127.0.0.1:{at}/mcp" if self._listens_v4(at) else f"http://[::1]:{at}/mcp"
                return f"entry {rel}, port {port} (PORT env respected); server boxed in {self.box}"
        raise AssertionError("unreachable: the last attempt raises")

    def _listens_v4(self, port: int) -> bool:
        return procs.can_connect("127.0.0.1", port)

    async def _until_listening(self, port: int, rel: Path, last_attempt: bool) -> bool:
        """True once the server *we* started listens on PORT (a connection alone is not enough: a port handed out
        and released can go to another trial's server or fake before ours binds it). False when ours exited
        because another process holds that port (not the workspace's fault: the caller starts it again on
        another port; a host that keeps taking them is infra); StepFailed for everything else."""
        from mcp_evals_pipeline.sandbox import server_box  # lazily: the sandbox package imports docker

        assert self.proc is not None
        timeout = self.contract.start_timeout_seconds
        started = time.monotonic()
        foreign_since: float | None = None
        while True:
            if self.proc.poll() is not None:
                if server_box.box_failed(self.proc):
                    raise InfraFailure(Infra.SANDBOX, "the server's container could not start: "
                                       + clip(procs.tail(self.scratch / "server.log", 800).strip(), 800))
                if any(procs.can_connect(h, port) for h in ("127.0.0.1", "::1")):  # lost the port to another process
                    if not last_attempt:
                        return False
                    raise InfraFailure(Infra.SANDBOX, f"PORT={port} and the {START_ATTEMPTS - 1} before it were "
                                                      f"taken by other processes before the server could bind them")
                output = procs.tail(self.scratch / "server.log", 800).strip()
                raise StepFailed(f"entry {rel} exited with code {self.proc.returncode} before listening on "
                                 f"PORT={port}: {clip(output, 800)}")
            now = time.monotonic()
            pid = server_box.server_pid(self.proc)
            ours = procs.listening_ports(pid) if pid is not None else set()
            if port in ours:
                return True
            elsewhere = ours - {port}
            if elsewhere:
                foreign_since = foreign_since or now
                if now - foreign_since >= FOREIGN_PORT_GRACE_S:
                    ports = ", ".join(map(str, sorted(elsewhere)))
                    raise StepFailed(f"entry {rel} listens on port {ports}, not on PORT={port}")
            if now - started >= timeout:
                raise StepFailed(f"entry {rel} did not listen on PORT={port} within {timeout:g}s")
            await anyio.sleep(0.05)

    async def _handshake(self) -> str:
        # mode="legacy": the initialize handshake (2025-11-25), so the server's info and version are recorded;
        # the client never caches, so resource reads reflect state.
        self.client = client = await self.connect(f"initialize at {self.url}", mode="legacy")
        init = client.session.initialize_result
        info = init.server_info if init else None
        self.handshake_info = {
            "protocol_version": client.protocol_version,
            "server_name": info.name if info else None,
            "server_version": info.version if info else None,
        }
        name = f"{info.name} {info.version}".strip() if info else "unnamed server"
        return f"protocol {client.protocol_version}, {name}"

    async def connect(self, what: str, mode: str = "legacy", **options: Any) -> Client:
        """A connected MCP client for the server under test, sending what features asked for (headers, auth),
        closed with the grading; `options` go to mcp.Client (e.g. an elicitation callback). A failure to connect is
        the server's (StepFailed naming `what`). No fail_after around it: the client's task group must outlive the
        step that opens it; the session's read timeout bounds the handshake."""
        assert self.url is not None
        try:
            http = await self.stack.enter_async_context(httpx2.AsyncClient(
                headers=self.http_headers, auth=self.http_auth,
                timeout=httpx2.Timeout(30, read=self.contract.call_timeout_seconds + 30)))
            client = Client(streamable_http_client(self.url, http_client=http), mode=mode,  # type: ignore[arg-type]
                            cache=None, read_timeout_seconds=self.contract.call_timeout_seconds, **options)
            return await self.stack.enter_async_context(client)
        except Exception as exc:
            if not _server_fault(exc):
                raise
            raise StepFailed(f"{what} failed: {_describe_exc(exc)}{self.server_status()}") from exc

    async def list_all(self, what: str, fetch: Callable[..., Awaitable[Any]], attr: str) -> list[Any]:
        """Every item of a paginated list (tools, resources, templates), each page one exchange."""
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(100):  # a server that pages forever is broken, not us
            page = await self.talk(what, lambda c=cursor: fetch(cursor=c), self.contract.call_timeout_seconds + 5)
            items += getattr(page, attr)
            cursor = page.next_cursor
            if not cursor:
                return items
        raise StepFailed(f"{what}: more than 100 pages")

    async def _tools(self) -> str:
        assert self.client is not None
        tools: list[types.Tool] = await self.list_all("tools/list", self.client.list_tools, "tools")
        listed = {t.name: t for t in tools}
        by_normal: dict[str, list[str]] = defaultdict(list)
        for name in listed:
            by_normal[_normalize_tool_name(name)].append(name)
        problems: list[str] = []
        notes: list[str] = []
        for expected in self.contract.expected_tools:
            actual = expected.name if expected.name in listed else None
            if actual is None and expected.name not in self.contract.exact_tool_names:
                loose = by_normal.get(_normalize_tool_name(expected.name), [])
                if len(loose) == 1:
                    actual = loose[0]
                    notes.append(f"{expected.name} matched as {actual}")
            if actual is None:
                problems.append(f"missing tool {expected.name!r}")
                continue
            self.tool_names[expected.name] = actual
            schema = listed[actual].input_schema or {}
            props = schema.get("properties") or {}
            required = schema.get("required") or []
            for prop in expected.required_props:
                if prop not in props:
                    problems.append(f"{actual}: no input parameter {prop!r} (has: {', '.join(props) or 'none'})")
                elif prop not in required:
                    problems.append(f"{actual}: input parameter {prop!r} is not required")
            for prop, wanted in expected.prop_types.items():
                if prop not in props:
                    if prop not in expected.required_props:
                        problems.append(f"{actual}: no input parameter {prop!r} (has: {', '.join(props) or 'none'})")
                    continue
                declared = schema_types(props[prop])
                if not declared_type_ok(declared, wanted):
                    problems.append(f"{actual}: input parameter {prop!r} declares type "
                                    f"{'/'.join(sorted(declared)) or 'none'} (expected {wanted})")
        if problems:
            raise StepFailed("; ".join(problems) + f" (listed: {', '.join(sorted(listed)) or 'none'})")
        return f"{len(listed)} tools" + (f"; {'; '.join(notes)}" if notes else "")

    async def _resources(self) -> str:
        assert self.client is not None
        c = self.contract
        resources: list[types.Resource] = []
        templates: list[types.ResourceTemplate] = []
        if c.expected_resources:
            resources = await self.list_all("resources/list", self.client.list_resources, "resources")
        if c.expected_resource_templates:
            templates = await self.list_all("resources/templates/list", self.client.list_resource_templates,
                                            "resource_templates")
        by_uri = {str(r.uri): r for r in resources}
        by_template = {t.uri_template: t for t in templates}
        problems = [p for e in c.expected_resources for p in _listing_problems("resource", e.uri, e, by_uri)]
        problems += [p for e in c.expected_resource_templates
                     for p in _listing_problems("resource template", e.uri_template, e, by_template)]
        if problems:
            listed = sorted(by_uri) + sorted(by_template)
            raise StepFailed("; ".join(problems) + f" (listed: {', '.join(listed) or 'none'})")
        return f"{len(resources)} resources, {len(templates)} templates"

    async def _read(self, read: ResourceRead) -> str | None:
        assert self.client is not None
        client = self.client
        try:
            with anyio.fail_after(self.contract.call_timeout_seconds + 5):
                result = await client.read_resource(read.uri)
        except MCPError as exc:
            if not read.is_error:
                raise StepFailed(f"read {read.uri} failed: MCPError {exc.code}: {exc.message}") from exc
            for exp in read.expect:
                why = expectation_failure(exp, exc.message)
                if why:
                    raise StepFailed(f'read {read.uri} -> error "{clip(exc.message)}" did not match '
                                     f"{describe(exp)}: {why}") from exc
            return f"read failed as required: {clip(exc.message, 120)}"
        except Exception as exc:
            if not _server_fault(exc):
                raise
            raise StepFailed(f"read {read.uri} failed: {_describe_exc(exc)}{self.server_status()}") from exc
        text = resource_text(result)
        if read.is_error:
            raise StepFailed(f'read {read.uri} succeeded but must fail: "{clip(text)}"')
        if read.mime_type is not None:
            got = result.contents[0].mime_type if result.contents else None
            if _mime(got) != _mime(read.mime_type):
                raise StepFailed(f"read {read.uri} returned MIME type {got!r} (expected {read.mime_type!r})")
        for exp in read.expect:
            why = expectation_failure(exp, text)
            if why:
                raise StepFailed(f'read {read.uri} -> "{clip(text)}" did not match {describe(exp)}: {why}')
        return None

    async def _form(self, call_id: str, form: ToolForm, where: str) -> str | None:
        result = self.results[call_id]
        if form.when != "any" and bool(result.is_error) != (form.when == "error"):
            return f"applies to {'error' if form.when == 'error' else 'normal'} results only"
        self.check_result(where, result, None, form.expect)
        return None

    async def _invariant(self, inv: Invariant) -> str | None:
        assert self.client is not None
        client = self.client
        name = self.tool_names.get(inv.call.tool, inv.call.tool)
        timeout = self.contract.call_timeout_seconds
        sig = _signature(name, inv.call.args)
        result: types.CallToolResult = await self.talk(
            sig, lambda: client.call_tool(name, inv.call.args, read_timeout_seconds=timeout), timeout + 5)
        self.check_result(sig, result, False, inv.expect)
        return None

    async def _call(self, call: ToolCall, call_id: str | None = None) -> str | None:
        assert self.client is not None
        client = self.client
        name = self.tool_names.get(call.tool, call.tool)
        timeout = call.timeout_seconds or self.contract.call_timeout_seconds
        sig = _signature(name, call.args)
        if call.as_user is not None:  # oauth: a session of its own, with a token for that seeded user
            from mcp_evals_pipeline.grader.stages.oauth import OAuthFeature

            oauth = next(f for f in self.features if isinstance(f, OAuthFeature))
            client = await oauth.session_as(call.as_user)
            sig += f" as the {call.as_user} user"
        result: types.CallToolResult = await self.talk(
            sig, lambda: client.call_tool(name, call.args, read_timeout_seconds=timeout), timeout + 5
        )
        if call_id is not None:
            self.results[call_id] = result
        self.check_result(sig, result, call.is_error, call.expect)
        return None

    def check_result(self, where: str, result: types.CallToolResult, is_error: bool | None,
                     expect: list[Expectation]) -> str:
        """A tool result against its isError flag and expectations (StepFailed naming `where`); its text."""
        text = tool_result_text(result)
        if is_error is not None and bool(result.is_error) != is_error:
            want = "an error result (isError true)" if is_error else "a normal result (isError false)"
            raise StepFailed(f'{where} -> "{clip(text)}" with isError {str(bool(result.is_error)).lower()}; '
                             f"expected {want}")
        for exp in expect:
            why = expectation_failure(exp, text, result.structured_content, text_part=text_content(result))
            if why:
                raise StepFailed(f'{where} -> "{clip(text)}" did not match {describe(exp)}: {why}')
        return text


def planned_checks(contract: TaskContract) -> list[Step]:
    """The checks a grading of this contract makes, in order, with the requirements each names; nothing is run
    (the catalog checks a negative's `breaksAt` against them, the coverage test counts exchanges on them)."""
    planner = Grading.__new__(Grading)
    planner._init_plan(contract)
    return planner.plan()


def unsupported_features(contract: TaskContract) -> list[str]:
    """What the contract declares that this grader cannot check (grading it anyway would be a lie)."""
    missing = [] if contract.effective_runtime in RUNTIMES else [f"runtime {contract.effective_runtime!r}"]
    return missing + sorted(contract.declared_features() - FEATURES.keys())


def _infra(contract: TaskContract, workspace: Path, error: str, *, permanent: bool = False) -> TrialGrade:
    return TrialGrade.infra(Infra.GRADER, error, sdk_path=detect_sdk_path(workspace),
                            scored=contract.scored_for_pass_rate, permanent=permanent)


async def grade_workspace(contract: TaskContract, workspace: Path) -> TrialGrade:
    """Grade one workspace against a task contract. Never raises for anything the workspace or the host does."""
    workspace = workspace.resolve()
    if not workspace.is_dir():
        return _infra(contract, workspace, f"workspace {workspace} is not a directory")
    if unsupported := unsupported_features(contract):
        return _infra(contract, workspace, f"the task declares {', '.join(unsupported)}, "
                                           f"which grader {GRADER_VERSION} cannot check", permanent=True)
    try:
        grading = Grading(contract, workspace, runtime_for(contract.effective_runtime))
    except Exception as exc:
        return _infra(contract, workspace, f"grader could not prepare: {type(exc).__name__}: {exc}")
    return await grading.run()


def grade_workspace_sync(contract: TaskContract, workspace: Path) -> TrialGrade:
    return anyio.run(grade_workspace, contract, workspace)

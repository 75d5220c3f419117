"""The life cycle every CLI agent shares (agents/codex_agent.py, agents/claude_agent.py): a pinned CLI from npm
run as one sandbox command, its JSONL event stream written to the transcript as it arrives.

    key        options["api_key"] (tests), else the first of the pin's key variables that is set
               (models.AGENT_PINS); none: infra.agent, not retried. check_credentials names the variables.
    CLI        the pinned package (cli_tools.CLI_PINS), installed once into the cache; failing: infra.agent
    endpoint   a KeyProxy on the host holds the key (cli_tools.keyed_endpoint); the CLI gets its URL as the sandbox
               reaches it and a per-run placeholder key, so nothing the agent's commands can read holds the key
    MCP        a usage task's server (request.mcp_url) as the sandbox reaches it, configured by `mcp_config`
    run dir    the sandbox's private directory (HOME, config, env.sh with the placeholder, prompt.md, the CLI's
               events and stderr), outside the workspace, removed afterwards
    run        one sandbox command (the time budget is its hard timeout) in a thread, while the events file is
               tailed into the subclass's translator; every process carries RUN_MARKER_ENV and whatever is left
               running afterwards is killed
    verdict    the subclass's `usage` and `classify` (infra.model_api, infra.agent, budget_exhausted), then the
               zero-model-token rule (DESIGN "Validity"): no model tokens, no model turn, infra.agent
    records    the CLI's own files are kept next to the transcript (<name>-events.jsonl, ...), never graded

A subclass supplies only what is its CLI's own: its environment and command line (`cli_env`, `argv`), its event
translator, where its usage comes from and how its failures read.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import threading
import time
import uuid
from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

import psutil

from mcp_evals_pipeline.agents.base import AgentRequest, AgentResult, AgentRunner
from mcp_evals_pipeline.agents.cli_tools import CLI_PINS, cli_path, ensure_pinned_cli, keyed_endpoint, private_run_dir
from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.records import TrialPerf
from mcp_evals_pipeline.models import cost_usd
from mcp_evals_pipeline.sandbox.base import CommandResult, SandboxError

POLL_S = 0.1
# After the session's end the CLI may still wait for the agent's background commands (a server it started): it
# gets this long to exit on its own, then its tree is killed. The grader starts its own server.
RESULT_GRACE_S = 3.0
# Every process of one run carries this variable with a fresh value: what the CLI and the agent's commands leave
# running (reparented away from the process group, e.g. `(server &)`) is found and killed by it.
RUN_MARKER_ENV = "MCP_EVALS_AGENT_RUN"
STDERR_TAIL = 4000  # what of the CLI's stderr is read for error messages


class EventStream(Protocol):
    """A CLI's event translator: fed each line of the events file, it writes transcript events and counts."""

    tool_calls: int

    def feed_line(self, line: str) -> None: ...


# A usage task's server under evaluation (the recording proxy in front of it), as every CLI's config names it: its
# tools reach the model as mcp__server__<tool>.
MCP_SERVER_NAME = "server"

@dataclass
class CliRun:
    """One run of a CLI agent: what the base set up, for the subclass's command line, translator and verdict."""

    request: AgentRequest
    model: str
    effort: str | None
    bin_dir: Path
    path: str  # PATH entries that run the CLI with the pinned node (cli_tools.cli_path)
    private: Path  # the run's private directory
    upstream: str  # the model endpoint the KeyProxy forwards to
    endpoint: str  # where the CLI in the sandbox reaches the KeyProxy
    key_env: str  # the variable the key came from
    pass_key: str  # the KeyProxy's per-run placeholder: the only key the CLI holds
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    # A usage task's MCP server as the sandbox reaches it, and the CLI arguments `mcp_config` made of it.
    mcp_url: str | None = None
    mcp_args: list[str] = field(default_factory=list)
    # Filled in as the run goes.
    stream: Any = None  # the subclass's EventStream
    result: CommandResult | None = None
    sandbox_error: str | None = None
    stderr: str = ""
    duration_ms: int = 0

    @property
    def home(self) -> Path:
        return self.private / "home"

    @property
    def events_path(self) -> Path:
        return self.private / "events.jsonl"

    @property
    def stderr_path(self) -> Path:
        return self.private / "stderr.log"


@dataclass
class Usage:
    """What the CLI's records say the run used (None: unknown)."""

    turns: int | None = 0
    tokens_in: int | None = 0
    tokens_out: int | None = 0
    cost_usd: float | None = None  # None: priced from models.PRICES_PER_MTOK, when the model is there
    served_model: str | None = None


@dataclass
class Verdict:
    infra_reason: Infra | None = None
    error: str | None = None
    budget_exhausted: bool = False


class CliAgentRunner(AgentRunner):
    """A pinned agent CLI (CLI_PINS[name]) in the sandbox; see the module docstring for the life cycle."""

    default_endpoint: ClassVar[str]
    prompt_on_stdin: ClassVar[bool] = True  # else the command line carries it (argv) and stdin is /dev/null

    # --- the subclass's CLI --------------------------------------------------------------------------------

    def ensure_cli(self) -> Path:
        """The bin dir of the pinned CLI (installed on first use; raises CliInstallError)."""
        return ensure_pinned_cli(self.name)

    def upstream(self, request: AgentRequest) -> str:
        return str(request.options.get("base_url") or self.default_endpoint)

    def keyless(self, request: AgentRequest) -> bool:
        """Whether the run may go on without a key (an endpoint that needs none): then no credential is added."""
        return False

    def credentials(self, key_env: str, secret: str) -> dict[str, str]:
        """The headers the KeyProxy adds to each request."""
        return {"Authorization": f"Bearer {secret}"} if secret else {}

    def prepare(self, run: CliRun) -> None:
        """Create what the CLI expects in the private directory before it starts."""
        run.home.mkdir()

    def mcp_config(self, run: CliRun, reachable_url: str) -> list[str]:
        """The CLI arguments that configure a usage task's MCP server (Streamable HTTP at `reachable_url`, as the
        sandbox reaches request.mcp_url), written where the subclass's `argv` takes `run.mcp_args`; a file they
        name belongs under run.private. None by default."""
        return []

    @abstractmethod
    def cli_env(self, run: CliRun) -> dict[str, str]:
        """The CLI's environment (the placeholder key included), written to the private env.sh."""

    @abstractmethod
    def argv(self, run: CliRun) -> list[str]:
        """The CLI's command line (run with the pinned CLI's bin dir first on PATH)."""

    def info_extra(self, run: CliRun) -> dict[str, Any]:
        """More of the run's settings for the transcript's opening info event."""
        return {}

    @abstractmethod
    def translator(self, run: CliRun) -> EventStream: ...

    def session_over(self, run: CliRun) -> bool:
        """Whether the events said the session ended (the CLI then gets RESULT_GRACE_S to exit)."""
        return False

    @abstractmethod
    def usage(self, run: CliRun) -> Usage:
        """Turns, tokens and cost of the finished (or killed) run, from the CLI's records."""

    @abstractmethod
    def classify(self, run: CliRun, usage: Usage) -> Verdict:
        """infra.model_api / infra.agent / budget_exhausted of the finished or killed run (run.result, run.stream,
        run.stderr); the zero-model-token rule is applied afterwards."""

    def zero_tokens(self, run: CliRun, verdict: Verdict) -> Verdict:
        """DESIGN "Validity": a run with no model tokens made no model turn; neither a pass nor a fail."""
        detail = f" ({verdict.error})" if verdict.error else ""
        stderr = run.stderr.strip()[-1000:]
        return Verdict(Infra.AGENT, f"the agent run used zero model tokens: no model turn happened{detail}"
                                    + (f". {stderr}" if stderr else ""))

    def records(self, run: CliRun) -> list[tuple[Path | None, str]]:
        """(file, name in the trial directory) of the CLI's own records to keep."""
        return [(run.events_path, f"{self.name}-events.jsonl")]

    # --- the life cycle ------------------------------------------------------------------------------------

    def run(self, request: AgentRequest) -> AgentResult:
        started = time.monotonic()
        transcript = request.transcript
        model = request.model or self.pin.model or ""
        effort = request.reasoning_effort or self.pin.reasoning_effort

        def failed(reason: Infra, error: str, permanent: bool = False) -> AgentResult:
            transcript.emit("error", text=error)
            return AgentResult(perf=TrialPerf(duration_ms=int((time.monotonic() - started) * 1000), turns=0,
                                              tool_calls=0),
                               infra_reason=reason, error=error, model=model, permanent=permanent)

        key = self.find_key(request.options)
        if key is None and self.keyless(request):
            key = (self.pin.key_env[0], "")
        if key is None:
            return failed(Infra.AGENT, self.missing_key(), permanent=True)
        transcript.emit("user", text=request.prompt)
        package, version = CLI_PINS[self.name]
        try:
            bin_dir = self.ensure_cli()
            path = cli_path(bin_dir)
        except Exception as exc:  # CliInstallError and anything under it: the host's problem, never the trial's
            return failed(Infra.AGENT, f"{self.name} CLI unavailable ({package}@{version}): "
                                       f"{type(exc).__name__}: {exc}")
        upstream = self.upstream(request)
        try:
            with keyed_endpoint(request.sandbox, upstream, self.credentials(*key)) as (endpoint, proxy), \
                    private_run_dir(request.sandbox, f"{self.name}-") as private:
                run = CliRun(request=request, model=model, effort=effort, bin_dir=bin_dir, path=path,
                             private=private, upstream=upstream, endpoint=endpoint, key_env=key[0],
                             pass_key=proxy.pass_key)
                if request.mcp_url is not None:
                    run.mcp_url = request.sandbox.allow_endpoint(request.mcp_url)
                    run.mcp_args = self.mcp_config(run, run.mcp_url)
                result = self._run_cli(run, f"{package}@{version}")
                if proxy.refusals:  # calls past the model endpoints (agents/key_proxy.py): on the trial's record
                    request.transcript.emit("info", text=f"key proxy refused {len(proxy.refusals)} request(s) that "
                                            "were no model endpoint", extra={"keyProxyRefusals": proxy.refusals})
                return result
        except SandboxError as exc:
            return failed(Infra.SANDBOX, f"sandbox failed: {exc}")

    def _command(self, run: CliRun, argv: list[str]) -> str:
        """The one sandbox command: the environment from the private env.sh (never on a command line), the CLI
        first on PATH, its events and stderr into private files."""
        (run.private / "prompt.md").write_text(run.request.prompt, encoding="utf-8")
        env_file = run.private / "env.sh"
        env_file.touch(mode=0o600)  # before the placeholder is written into it
        env = {**self.cli_env(run), RUN_MARKER_ENV: run.marker}
        env_file.write_text("".join(f"export {name}={shlex.quote(value)}\n" for name, value in env.items()))
        run.events_path.touch()
        q = shlex.quote
        stdin = q(str(run.private / "prompt.md")) if self.prompt_on_stdin else "/dev/null"
        return (f". {q(str(env_file))} && export PATH={q(run.path)}:\"$PATH\" && "
                f"exec {shlex.join(argv)} < {stdin} > {q(str(run.events_path))} 2> {q(str(run.stderr_path))}")

    def _run_cli(self, run: CliRun, cli_version: str) -> AgentResult:
        request, transcript = run.request, run.request.transcript
        self.prepare(run)
        argv = self.argv(run)
        command = self._command(run, argv)
        transcript.emit("info", text=f"{self.name} agent: {cli_version}, model {run.model} at {run.upstream}",
                        extra={"model": run.model, "reasoningEffort": run.effort, "timeBudgetS": request.time_budget_s,
                               "baseUrl": run.upstream, "viaKeyProxy": run.endpoint, "keyEnv": run.key_env,
                               "cliVersion": cli_version, "mcpUrl": run.mcp_url,
                               "argv": ["<prompt>" if a == request.prompt else a for a in argv],
                               **self.info_extra(run)})
        run.stream = stream = self.translator(run)
        usage = Usage()
        try:
            self._stream(run, command)
            run.stderr = _tail_text(run.stderr_path)
            usage = self.usage(run)
            verdict = Verdict(Infra.SANDBOX, run.sandbox_error) if run.sandbox_error else self.classify(run, usage)
        except Exception as exc:  # a bug of ours: the harness's failure, with the perf so far
            verdict = Verdict(Infra.AGENT, f"{self.name} agent crashed: {type(exc).__name__}: {exc}")
            with contextlib.suppress(Exception):
                usage = self.usage(run)
        self._keep(run)

        if verdict.infra_reason is None and (usage.turns == 0 or (not usage.tokens_in and not usage.tokens_out)):
            verdict = self.zero_tokens(run, verdict)
        if verdict.error:
            transcript.emit("error", text=verdict.error)
        served = usage.served_model or run.model
        perf = TrialPerf(duration_ms=run.duration_ms, turns=usage.turns, tokens_in=usage.tokens_in,
                         tokens_out=usage.tokens_out, tool_calls=stream.tool_calls)
        perf.cost_usd = usage.cost_usd if usage.cost_usd is not None else (
            cost_usd(served, usage.tokens_in, usage.tokens_out) or cost_usd(run.model, usage.tokens_in,
                                                                               usage.tokens_out))
        return AgentResult(perf=perf, infra_reason=verdict.infra_reason, error=verdict.error,
                           budget_exhausted=verdict.budget_exhausted and verdict.infra_reason is None, model=served)

    def _stream(self, run: CliRun, command: str) -> None:
        """Run the command in a thread while its events file is fed to run.stream; sets run.result (or
        run.sandbox_error) and run.duration_ms. Nothing of the run outlives it."""
        request, transcript = run.request, run.request.transcript
        outcome: dict[str, Any] = {}

        def target() -> None:
            try:
                outcome["result"] = request.sandbox.run(command, timeout_s=max(0.1, request.time_budget_s))
            except BaseException as exc:  # handed to the caller's thread
                outcome["exc"] = exc

        tail = _Tail(run.events_path)
        worker = threading.Thread(target=target, name=f"{self.name}-cli", daemon=True)
        started = time.monotonic()
        ended: float | None = None
        try:
            worker.start()
            while worker.is_alive():
                worker.join(POLL_S)
                for line in tail.lines():
                    run.stream.feed_line(line)
                if ended is None and self.session_over(run):
                    ended = time.monotonic()
                if ended is not None and time.monotonic() - ended > RESULT_GRACE_S and worker.is_alive():
                    killed = _kill_marked(run.marker)
                    transcript.emit("info", text=f"the session ended but the CLI was still waiting for background "
                                                 f"commands after {RESULT_GRACE_S:g}s: killed {killed} processes")
                    ended = float("inf")  # once
            for line in tail.lines(final=True):
                run.stream.feed_line(line)
        finally:
            worker.join(5)
            run.duration_ms = int((time.monotonic() - started) * 1000)
            leftover = _kill_marked(run.marker)
            if leftover:
                transcript.emit("info", text=f"killed {leftover} processes the agent left running")
        exc = outcome.get("exc")
        if isinstance(exc, SandboxError):
            run.sandbox_error = f"sandbox failed: {exc}"
        elif isinstance(exc, Exception):
            run.sandbox_error = f"sandbox command failed: {type(exc).__name__}: {exc}"
        elif exc is not None:
            raise exc  # KeyboardInterrupt and the like: not ours to turn into a verdict
        else:
            run.result = outcome.get("result")

    def _keep(self, run: CliRun) -> None:
        """The CLI's own records, next to the transcript, for debugging a trial (never graded)."""
        trial_dir = run.request.transcript.path.parent
        for source, name in self.records(run):
            if source is not None and source.exists():
                with contextlib.suppress(OSError):
                    shutil.copyfile(source, trial_dir / name)


class _Tail:
    """Reads whole lines appended to a file by another process (bytes first: a read may end inside a character)."""

    def __init__(self, path: Path):
        self.path = path
        self._offset = 0
        self._partial = b""

    def lines(self, final: bool = False) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        data = self._partial + data
        *complete, self._partial = data.split(b"\n")
        if final and self._partial:
            complete.append(self._partial)
            self._partial = b""
        return [c.decode("utf-8", errors="replace") for c in complete]


def _marked(marker: str) -> list[psutil.Process]:
    """Live processes whose environment carries the run's marker."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if proc.environ().get(RUN_MARKER_ENV) == marker:
                found.append(proc)
    return found


def _kill_marked(marker: str) -> int:
    """SIGKILL every process of the run (the CLI and whatever the agent left running); returns how many."""
    procs = _marked(marker)
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(procs, timeout=2)
    return len(procs)


def _tail_text(path: Path) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(encoding="utf-8", errors="replace")[-STDERR_TAIL:]
    return ""

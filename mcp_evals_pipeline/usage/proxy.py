"""The recording MCP proxy: what every runner of a usage trial talks to instead of the server under evaluation.

The CLI runners run MCP clients of their own, so the harness cannot see their calls from inside the runner. The
proxy is one MCP server (Streamable HTTP on the host's loopback, at a per-run secret path) that relays tools,
resources and prompts to the server under evaluation through the real `mcp` client, and appends every request,
result and error to `mcp-calls.jsonl` as it happens (a crash keeps what came before it): the same record whichever
runner ran, for the marker. The server's confirmation requests (elicitations) are answered by the proxy itself,
declined by default (seed 004: a case can then check that the model accepted the no), and recorded with the calls
that were in flight.

One upstream session serves every downstream session of a trial: a CLI that reconnects sees the same server state.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import uvicorn
from anyio.from_thread import start_blocking_portal
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field

from mcp_evals_pipeline.trial_dir import PROXY_LOG
from mcp_evals_pipeline.usage.world import Upstream, mcp_client, result_text

TEXT_LIMIT = 20_000  # per recorded result: a listing can be long, the record must stay readable
ElicitationAnswer = Literal["decline", "cancel"]


class ProxyEvent(BaseModel):
    """One line of mcp-calls.jsonl. `request` opens an exchange (`id`), `result` or `error` closes it;
    `elicitation` is a confirmation request of the server and the proxy's answer."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")

    seq: int
    t_ms: int
    at: float | None = None  # epoch seconds: orders it against the world's record
    event: Literal["request", "result", "error", "elicitation"]
    id: int | None = None  # the exchange a result or error closes
    method: str | None = None  # tools/call, tools/list, resources/read, ...
    name: str | None = None  # the tool or prompt name, the resource URI
    arguments: dict[str, Any] | None = None
    is_error: bool | None = Field(default=None, alias="isError")
    text: str | None = None  # a result's text, an error's message, an elicitation's message
    code: int | None = None  # a JSON-RPC error's code
    requested_schema: dict[str, Any] | None = Field(default=None, alias="requestedSchema")
    answer: str | None = None  # what the proxy answered an elicitation
    during: list[int] | None = None  # the exchanges in flight when the server asked


@dataclass
class ToolCall:
    """One tools/call exchange as the marker reads it."""

    id: int
    tool: str
    arguments: dict[str, Any]
    is_error: bool | None  # None: no answer recorded (the run ended mid-call)
    text: str | None
    error_code: int | None  # a protocol error instead of a result


def read_events(path: Path) -> list[ProxyEvent]:
    """Every event of a record; a torn last line (a crash mid-write) is left out."""
    events = []
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                events.append(ProxyEvent.model_validate_json(line))
    return events


def tool_calls(events: list[ProxyEvent]) -> list[ToolCall]:
    """The tools/call exchanges of a record, in the order they were made, each with its outcome."""
    calls: dict[int, ToolCall] = {}
    for e in events:
        if e.event == "request" and e.method == "tools/call" and e.id is not None:
            calls[e.id] = ToolCall(e.id, e.name or "", e.arguments or {}, None, None, None)
        elif e.event in ("result", "error") and e.id in calls:
            call = calls[e.id]
            call.text = e.text
            call.is_error = True if e.event == "error" else bool(e.is_error)
            call.error_code = e.code if e.event == "error" else None
    return list(calls.values())


class _Record:
    """Appends events to the record file, one JSON line each, flushed as they happen (threads and tasks share
    it)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close(); one proxy, one record
        self._lock = threading.Lock()
        self._seq = 0
        self._exchanges = 0
        self._started = time.monotonic()
        self.in_flight: set[int] = set()

    def write(self, event: str, **fields: Any) -> int:
        with self._lock:
            self._seq += 1
            line = ProxyEvent(seq=self._seq, t_ms=int((time.monotonic() - self._started) * 1000),
                              at=round(time.time(), 6), event=event, **fields)  # type: ignore[arg-type]
            self._file.write(line.model_dump_json(by_alias=True, exclude_none=True) + "\n")
            self._file.flush()
            return self._seq

    def open_exchange(self, method: str, name: str | None = None, arguments: dict[str, Any] | None = None) -> int:
        with self._lock:
            self._exchanges += 1
            exchange = self._exchanges
        self.write("request", id=exchange, method=method, name=name, arguments=arguments)
        self.in_flight.add(exchange)
        return exchange

    def close_exchange(self, exchange: int, **fields: Any) -> None:
        self.in_flight.discard(exchange)
        self.write(fields.pop("event", "result"), id=exchange, **fields)

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _clip(text: str) -> str:
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + f"\n[... {len(text) - TEXT_LIMIT} more chars]"


def _content_text(contents: list[Any]) -> str:
    return " ".join(str(getattr(c, "text", None) or getattr(c, "uri", "")) for c in contents)


@dataclass
class Proxy:
    url: str  # what the runner is given as its MCP server
    record_path: Path
    # What the server under evaluation sent as its instructions. Never relayed to the runner: a usage condition
    # decides whether the model reads them (usage/conditions.py), the same way for every runner.
    server_instructions: str | None = None


def _relay(record: _Record, method: str, send: Callable[[], Awaitable[Any]], name: str | None = None,
           arguments: dict[str, Any] | None = None, text: Callable[[Any], str] | None = None) -> Awaitable[Any]:
    async def relay() -> Any:
        exchange = record.open_exchange(method, name, arguments)
        try:
            result = await send()
        except MCPError as exc:  # the server's own error: relayed as it is
            record.close_exchange(exchange, event="error", code=exc.error.code, text=exc.error.message)
            raise
        except Exception as exc:  # the server broke the exchange: the runner gets an error, the record says why
            record.close_exchange(exchange, event="error", text=f"{type(exc).__name__}: {exc}")
            raise MCPError(types.INTERNAL_ERROR, f"the server under evaluation failed: {exc}") from exc
        record.close_exchange(exchange, is_error=bool(getattr(result, "is_error", False)) if text is None else None,
                              text=_clip(text(result)) if text else _clip(result_text(result)))
        return result
    return relay()


def _list_relay(record: _Record, method: str, fetch: Callable[..., Awaitable[Any]],
                names: Callable[[Any], Iterator[str]]) -> Callable[..., Awaitable[Any]]:
    """A paginated list request relayed page by page (the runner's cursor passed on), recorded by item names."""
    async def handler(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        cursor = params.cursor if params else None
        return await _relay(record, method, lambda: fetch(cursor=cursor, cache_mode="bypass"),
                            text=lambda result: ", ".join(names(result)))
    return handler


def _server(upstream: Any, record: _Record) -> Server[Any]:
    """A server with the upstream's name, version and capabilities, every request relayed; without its
    instructions (see Proxy.server_instructions)."""
    caps = upstream.server_capabilities
    info = upstream.server_info
    handlers: dict[str, Any] = {}
    if caps.tools is not None:
        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            args = dict(params.arguments or {})
            return await _relay(record, "tools/call", lambda: upstream.call_tool(params.name, args),
                                name=params.name, arguments=args)
        handlers |= {"on_list_tools": _list_relay(record, "tools/list", upstream.list_tools,
                                                  lambda r: (t.name for t in r.tools)),
                     "on_call_tool": call_tool}
    if caps.resources is not None:
        async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
            uri = str(params.uri)
            return await _relay(record, "resources/read", lambda: upstream.read_resource(uri), name=uri,
                                text=lambda r: _content_text(r.contents))
        handlers |= {"on_list_resources": _list_relay(record, "resources/list", upstream.list_resources,
                                                      lambda r: (str(x.uri) for x in r.resources)),
                     "on_list_resource_templates": _list_relay(
                         record, "resources/templates/list", upstream.list_resource_templates,
                         lambda r: (x.uri_template for x in r.resource_templates)),
                     "on_read_resource": read_resource}
    if caps.prompts is not None:
        async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> Any:
            args = dict(params.arguments or {})
            return await _relay(record, "prompts/get", lambda: upstream.get_prompt(params.name, args),
                                name=params.name, arguments=args,
                                text=lambda r: " ".join(str(getattr(m.content, "text", "")) for m in r.messages))
        handlers |= {"on_list_prompts": _list_relay(record, "prompts/list", upstream.list_prompts,
                                                    lambda r: (p.name for p in r.prompts)),
                     "on_get_prompt": get_prompt}
    return Server(info.name if info else "server-under-evaluation", version=(info.version if info else "") or "",
                  instructions=None, **handlers)


class _LogsByThread(logging.Handler):
    """Where the proxy's own logging goes: uvicorn's and mcp's records (a client that hangs up mid-stream makes
    them log ClosedResourceError or "Unexpected ASGI message" tracebacks) emitted in a proxy's event-loop thread
    go to that proxy's log file beside its record (the trial's files), not to the console where they scroll past a
    run that is fine. Every other record goes where it went before: the root logger's handlers."""

    LOGGERS = ("uvicorn", "mcp", "httpx", "httpcore", "anyio")

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self.files: dict[int, Path] = {}
        self.lock_files = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        path = self.files.get(record.thread or 0)
        if path is None:
            logging.getLogger().handle(record)  # not a proxy's thread: as if this handler were not here
            return
        try:
            with self.lock_files, path.open("a", encoding="utf-8") as log:
                log.write(self.format(record) + "\n")
        except OSError:
            self.handleError(record)

    @contextlib.contextmanager
    def routing(self, path: Path) -> Iterator[None]:
        """Records of the calling thread (the proxy's event loop) go to `path` until the block ends."""
        with self.lock_files:
            if not self.files:  # the first proxy of the process installs the handler
                for name in self.LOGGERS:
                    logger = logging.getLogger(name)
                    logger.addHandler(self)
                    logger.propagate = False
            self.files[threading.get_ident()] = path
        try:
            yield
        finally:
            with self.lock_files:
                self.files.pop(threading.get_ident(), None)


_LOGS = _LogsByThread()


class _Server(uvicorn.Server):
    """uvicorn's server, stopped the moment it is asked to (uvicorn polls `should_exit` on a 0.1 s tick: up to
    0.1 s of every trial's overhead); the once-a-second Date header refresh that tick also does is not needed."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stop_asked = anyio.Event()

    async def main_loop(self) -> None:
        await self.stop_asked.wait()

    def stop(self) -> None:
        self.should_exit = True
        self.stop_asked.set()


def _loopback_socket() -> socket.socket:
    # Bound here, handed to uvicorn: the port is ours from the start (no free-port race with other trials).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextlib.asynccontextmanager
async def _proxy_in_loop(upstream: Upstream, record_path: Path, *,
                         elicitation: ElicitationAnswer) -> AsyncIterator[Proxy]:
    """The proxy in front of `upstream`, recording into `record_path`, until the block ends; alone in its
    event loop (see running_proxy)."""
    record = _Record(record_path)

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        record.write("elicitation", text=getattr(params, "message", None),
                     requestedSchema=getattr(params, "requested_schema", None), answer=elicitation,
                     during=sorted(record.in_flight))
        return types.ElicitResult(action=elicitation)

    stop = anyio.Event()

    connected = False

    async def own_upstream(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        # The upstream session lives in a task of its own: a server that dies mid-run breaks that task's client
        # (its transport's task group), not the proxy; calls in flight then fail and are recorded as errors.
        nonlocal connected
        try:
            async with mcp_client(upstream, elicitation_callback=on_elicit) as session:
                connected = True
                task_status.started(session)
                await stop.wait()
        except Exception as exc:
            if not connected:
                raise  # no session at all: the proxy cannot start (the caller's infra error)
            record.write("error", text=f"the session with the server under evaluation broke: "
                                       f"{type(exc).__name__}: {exc}")

    sock: socket.socket | None = None
    try:
        with _LOGS.routing(record_path.parent / PROXY_LOG):
            async with anyio.create_task_group() as tg:
                session = await tg.start(own_upstream)
                path = f"/{secrets.token_urlsafe(16)}/mcp"  # per run: other code on the host's loopback cannot guess it
                app = _server(session, record).streamable_http_app(streamable_http_path=path, host="127.0.0.1")
                sock = _loopback_socket()
                # log_config=None: uvicorn leaves logging alone (its default config would put a console handler
                # back on its loggers for every proxy); _LOGS sends its records to the trial's proxy.log.
                server = _Server(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False,
                                                timeout_graceful_shutdown=2, log_config=None))
                tg.start_soon(server.serve, [sock])
                try:
                    while not server.started:
                        if server.should_exit:
                            raise RuntimeError("the recording proxy did not start")
                        await anyio.sleep(0.01)
                    yield Proxy(f"http://127.0.0.1:{sock.getsockname()[1]}{path}", record.path,
                                server_instructions=getattr(session, "instructions", None))
                finally:
                    server.stop()
                    stop.set()
    finally:
        if sock is not None:
            sock.close()  # after uvicorn has stopped serving it
        record.close()


@contextlib.contextmanager
def running_proxy(upstream: Upstream, record_path: Path, *,
                  elicitation: ElicitationAnswer = "decline") -> Iterator[Proxy]:
    """The recording proxy in front of `upstream` until the block ends, in an event loop of its own (a thread):
    uvicorn servers sharing one loop broke each other's sessions (5 of 39 verify sessions at 3 at a time)."""
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(
            _proxy_in_loop(upstream, record_path, elicitation=elicitation)) as proxy:
        yield proxy


@contextlib.asynccontextmanager
async def recording_proxy(upstream: Upstream, record_path: Path, *,
                          elicitation: ElicitationAnswer = "decline") -> AsyncIterator[Proxy]:
    """running_proxy for an event loop: entered and left in a worker thread, never blocking the caller's loop."""
    running = running_proxy(upstream, record_path, elicitation=elicitation)
    proxy = await anyio.to_thread.run_sync(running.__enter__)
    try:
        yield proxy
    finally:
        await anyio.to_thread.run_sync(running.__exit__, None, None, None)


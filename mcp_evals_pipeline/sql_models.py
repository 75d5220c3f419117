"""SQL metric models: one SELECT per file in dbt_like_sql/, materialized as DuckDB tables in dependency order.

A deliberately small subset of dbt: `{{ ref('model') }}` names another model (its table), `{{ source('trials') }}`
names the raw input (the `trials` view: current attempts only), and `{{ name('arg', ...) }}` expands a macro of
`macros/*.sql` (`{% macro name(a, b) %} ... {{ a }} ... {% endmacro %}`: one place for a formula several models
use), at load time, into the SQL every path runs. Dependencies come from those two tags alone, so
the lineage the Dagster layer draws is exactly what the SQL reads. Each model becomes
`CREATE OR REPLACE TABLE <name> AS <rendered sql>` (a VIEW with a `-- materialized: view` line); the name is the
file stem.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import duckdb

from mcp_evals_pipeline.paths import REPO_ROOT

MODELS_DIR = REPO_ROOT / "dbt_like_sql"

# source name -> relation it renders to; the store's schema creates `trials`.
SOURCES: dict[str, str] = {"trials": "trials", "trial_attempts": "trial_attempts"}  # the store's
# Relations owned by the store: a model of that name would replace the raw data.
RESERVED_NAMES = frozenset({"trials", "trial_attempts", "runs"})

_TAG = re.compile(r"\{\{\s*(?P<kind>ref|source)\(\s*(?P<quote>['\"])(?P<name>[^'\"]*)(?P=quote)\s*\)\s*\}\}")
_ANY_TAG = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.DOTALL)
_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_MACRO_DEF = re.compile(r"\{%\s*macro\s+(?P<name>[a-z_][a-z0-9_]*)\((?P<params>[^)]*)\)\s*%\}(?P<body>.*?)"
                        r"\{%\s*endmacro\s*%\}", re.DOTALL)
_MACRO_CALL = re.compile(r"\{\{\s*(?P<name>[a-z_][a-z0-9_]*)\((?P<args>[^)]*)\)\s*\}\}")
_MACRO_ARG = re.compile(r"^\s*(?P<quote>['\"])(?P<value>[^'\"]*)(?P=quote)\s*$")


class SqlModelError(ValueError):
    """A model file that cannot be used: bad name, unknown ref or source, a cycle, not a single SELECT."""


@dataclass(frozen=True)
class Macro:
    params: tuple[str, ...]
    body: str

    def expand(self, args: list[str]) -> str:
        text = self.body
        for param, arg in zip(self.params, args, strict=True):
            text = re.sub(r"\{\{\s*" + re.escape(param) + r"\s*\}\}", lambda _m, a=arg: a, text)
        return "(" + " ".join(text.split()) + ")"


@cache
def macros(macros_dir: Path) -> dict[str, Macro]:
    """The macros of a directory's *.sql files (none when it does not exist)."""
    found: dict[str, Macro] = {}
    for path in sorted(macros_dir.glob("*.sql")) if macros_dir.is_dir() else []:
        text = path.read_text()
        for match in _MACRO_DEF.finditer(text):
            params = tuple(p.strip() for p in match["params"].split(",") if p.strip())
            if match["name"] in found or match["name"] in ("ref", "source"):
                raise SqlModelError(f"{path}: macro {match['name']!r} is defined twice or shadows a tag")
            found[match["name"]] = Macro(params, match["body"])
        rest = _MACRO_DEF.sub("", text)
        if _ANY_TAG.search(rest):
            raise SqlModelError(f"{path}: a macro file holds `{{% macro %}} ... {{% endmacro %}}` blocks only")
    return found


def expand_macros(sql: str, path: Path | str, known: Mapping[str, Macro]) -> str:
    """`{{ name('arg', ...) }}` replaced by the macro's body with its parameters filled (ref and source stay)."""
    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if name in ("ref", "source"):
            return match.group(0)
        if name not in known:
            raise SqlModelError(f"{path}: unknown macro {name!r} (known: {', '.join(sorted(known)) or 'none'})")
        args = [a for a in match["args"].split(",")] if match["args"].strip() else []
        parsed = [_MACRO_ARG.match(a) for a in args]
        if any(p is None for p in parsed) or len(parsed) != len(known[name].params):
            raise SqlModelError(f"{path}: {match.group(0)} must pass {len(known[name].params)} quoted argument(s) "
                                f"({', '.join(known[name].params)})")
        return known[name].expand([p["value"] for p in parsed if p is not None])

    return _MACRO_CALL.sub(replace, sql)


@dataclass(frozen=True)
class SqlModel:
    name: str
    path: Path
    sql: str  # the file as written, tags included
    deps: tuple[str, ...]  # other models it refs, sorted, no duplicates
    depends_on_source: bool  # reads {{ source('trials') }}
    description: str  # the leading `-- ` comment block
    # "table" (default) or "view" (a `-- materialized: view` line): a view costs nothing to build, which suits a
    # staging model every other model scans anyway; writing 1M staged rows was most of the build time.
    materialized: str = "table"

    @property
    def rendered_sql(self) -> str:
        """The SELECT with its tags replaced by relation names, ready for DuckDB."""
        return render(self.sql, self.path)


def render(sql: str, path: Path | str = "<sql>") -> str:
    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if match["kind"] == "source":
            if name not in SOURCES:
                raise SqlModelError(f"{path}: unknown source {name!r} (known: {', '.join(sorted(SOURCES))})")
            return SOURCES[name]
        return _quoted(name)

    rendered = _TAG.sub(replace, sql)
    if leftover := _ANY_TAG.search(rendered):
        raise SqlModelError(f"{path}: unsupported template tag {leftover.group(0)!r} (only ref, source and macros)")
    # The SELECT is wrapped in CREATE TABLE ... AS, where a trailing semicolon would end the statement early.
    return rendered.strip().rstrip(";").rstrip()


def adhoc(sql: str) -> str:
    """A query of the models written like one (ref, source, the macros of dbt_like_sql/macros), ready for DuckDB:
    reports that pair what no model can (two batches a user names) still use the one Wilson formula."""
    return render(expand_macros(sql, "<adhoc>", macros(MODELS_DIR / "macros")))


_WILSON = """
SELECT {{ wilson_low('p', 'n') }} AS low, {{ wilson_high('p', 'n') }} AS high
FROM (SELECT ?::DOUBLE AS p, ?::BIGINT AS n)
"""


def wilson_interval(con: duckdb.DuckDBPyConnection, passed: int, n: int) -> tuple[float | None, float | None]:
    """The Wilson 95% interval of passed / n by dbt_like_sql/macros/wilson.sql, the formula every model reports
    (None, None when n is 0): figures computed outside a model (compare, the CI gate) never carry a second one."""
    if n == 0:
        return None, None
    low, high = con.execute(adhoc(_WILSON), [passed / n, n]).fetchone() or (None, None)
    return (float(low), float(high)) if low is not None and high is not None else (None, None)


@cache
def _parser() -> tuple[duckdb.DuckDBPyConnection, threading.Lock]:
    """A private in-memory connection for parsing only: the module's default connection may be holding someone
    else's unfinished result, which duckdb 2 refuses to work past; opening one per file costs ~10 ms."""
    return duckdb.connect(":memory:"), threading.Lock()


def _statement_types(sql: str) -> list[str]:
    con, lock = _parser()
    with lock:
        return [statement.type.name for statement in con.extract_statements(sql)]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_MATERIALIZED = re.compile(r"^\s*--\s*materialized:\s*(?P<kind>table|view)\s*$", re.MULTILINE)


def _description(sql: str) -> str:
    """The leading comment block: consecutive lines starting with `--`, markers stripped."""
    lines: list[str] = []
    for line in sql.lstrip().splitlines():
        stripped = line.strip()
        if not stripped.startswith("--"):
            break
        if not _MATERIALIZED.match(stripped):
            lines.append(stripped[2:].strip())
    return " ".join(part for part in lines if part)


def parse_model(path: Path) -> SqlModel:
    name = path.stem
    if not _NAME.fullmatch(name):
        raise SqlModelError(f"{path}: model name {name!r} must be a lower-case SQL identifier ([a-z_][a-z0-9_]*)")
    if name in RESERVED_NAMES:
        raise SqlModelError(f"{path}: model name {name!r} is a table or view of the store")
    sql = expand_macros(path.read_text(), path, macros(path.parent / "macros"))
    refs: set[str] = set()
    uses_source = False
    for match in _TAG.finditer(sql):
        if match["kind"] == "ref":
            refs.add(match["name"])
        else:
            uses_source = True
    if name in refs:
        raise SqlModelError(f"{path}: model {name!r} refs itself")
    rendered = render(sql, path)  # fails early on unknown sources and stray tags
    try:
        kinds = _statement_types(rendered)
    except duckdb.Error as exc:
        raise SqlModelError(f"{path}: does not parse: {exc}") from exc
    if kinds != ["SELECT"]:
        raise SqlModelError(f"{path}: must hold exactly one SELECT statement, found {', '.join(kinds) or 'nothing'}")
    found = _MATERIALIZED.search(sql)
    return SqlModel(name=name, path=path, sql=sql, deps=tuple(sorted(refs)), depends_on_source=uses_source,
                    description=_description(sql), materialized=found["kind"] if found else "table")


def load_models(models_dir: Path | None = None) -> dict[str, SqlModel]:
    """Every model of the directory by name; raises SqlModelError on a bad file, an unknown ref or a cycle."""
    root = Path(models_dir) if models_dir else MODELS_DIR
    if not root.is_dir():
        raise SqlModelError(f"{root}: no such models directory")
    models = {m.name: m for m in (parse_model(p) for p in sorted(root.glob("*.sql")))}
    topological_order(models)  # validates refs and acyclicity once, at load time
    return models


def topological_order(models: Mapping[str, SqlModel]) -> list[str]:
    """Names with every model after its deps; ties broken by name so the order is stable."""
    for model in models.values():
        unknown = [d for d in model.deps if d not in models]
        if unknown:
            raise SqlModelError(f"{model.path}: refs unknown model(s) {', '.join(map(repr, unknown))} "
                                f"(known: {', '.join(sorted(models))})")
    order: list[str] = []
    state: dict[str, str] = {}  # name -> "visiting" | "done"

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            cycle = [*trail[trail.index(name):], name]
            raise SqlModelError(f"cycle between SQL models: {' -> '.join(cycle)}")
        state[name] = "visiting"
        for dep in models[name].deps:
            visit(dep, [*trail, name])
        state[name] = "done"
        order.append(name)

    for name in sorted(models):
        visit(name, [])
    return order


def sql_model_specs(models_dir: Path | None = None) -> list[SqlModel]:
    """Every model in dependency order: what the Dagster layer turns into one asset each."""
    models = load_models(models_dir)
    return [models[name] for name in topological_order(models)]


def _with_upstream(models: Mapping[str, SqlModel], names: Iterable[str]) -> set[str]:
    wanted: set[str] = set()
    pending = list(names)
    while pending:
        name = pending.pop()
        if name not in wanted:
            wanted.add(name)
            pending.extend(models[name].deps)
    return wanted


def materialize_models(
    con: duckdb.DuckDBPyConnection,
    names: Iterable[str] | None = None,
    *,
    models_dir: Path | None = None,
    include_upstream: bool = False,
) -> dict[str, int]:
    """Run `CREATE OR REPLACE TABLE <name> AS <sql>` for the models, in dependency order; returns row counts.

    `names=None` builds every model. With names, only those are built (a Dagster asset materializes its own
    model; its upstream tables must exist already) unless `include_upstream` adds everything they depend on.
    Each model is its own statement, so a failure leaves the models before it built and names the culprit."""
    models = load_models(models_dir)
    if names is None:
        wanted = set(models)
    else:
        requested = list(names)
        unknown = [n for n in requested if n not in models]
        if unknown:
            raise SqlModelError(f"unknown SQL model(s) {', '.join(map(repr, unknown))} "
                                f"(known: {', '.join(sorted(models))})")
        wanted = _with_upstream(models, requested) if include_upstream else set(requested)
    counts: dict[str, int] = {}
    for name in topological_order(models):
        if name not in wanted:
            continue
        model = models[name]
        try:
            existing = con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = ?",
                                   [name]).fetchall()
            if existing and existing[0][0] != ("VIEW" if model.materialized == "view" else "BASE TABLE"):
                con.execute(f"DROP {'VIEW' if existing[0][0] == 'VIEW' else 'TABLE'} {_quoted(name)}")
            kind = "VIEW" if model.materialized == "view" else "TABLE"
            con.execute(f"CREATE OR REPLACE {kind} {_quoted(name)} AS\n{model.rendered_sql}\n")
            # fetchall, not fetchone: duckdb 2 refuses other work on a connection with an unfinished result
            rows = con.execute(f"SELECT count(*) FROM {_quoted(name)}").fetchall()
        except duckdb.Error as exc:
            raise SqlModelError(f"SQL model {name!r} ({model.path}) failed: {exc}") from exc
        counts[name] = int(rows[0][0])
    return counts


_SCOPED_SOURCE = "scoped_trials__"


def scoped_select(name: str, trials_filter: str = "true", *, replace: Mapping[str, str] | None = None,
                  models_dir: Path | None = None) -> str:
    """The model's SELECT evaluated over a subset of the trials, without touching the materialized tables: the
    filtered trials and every model it depends on become CTEs (the filter appears once, so its `?` parameters are
    passed once). `replace` maps trial columns to SQL expressions, which regroups a model: e.g. run_id -> a
    constant makes a per-run model compute one figure over the whole subset. One definition thus serves the
    current tables, an as-of view of them (a report re-rendered later must not show what later batches taught)
    and the weekly synthesis."""
    models = load_models(models_dir)
    if name not in models:
        raise SqlModelError(f"unknown SQL model {name!r} (known: {', '.join(sorted(models))})")
    wanted = _with_upstream(models, [name])

    def body(model: SqlModel) -> str:
        text = _TAG.sub(lambda m: _SCOPED_SOURCE if m["kind"] == "source" else _quoted(m["name"]), model.sql)
        return text.strip().rstrip(";").rstrip()

    replaced = f" REPLACE ({', '.join(f'{expr} AS {_quoted(col)}' for col, expr in replace.items())})" \
        if replace else ""
    ctes = [f"{_SCOPED_SOURCE} AS (SELECT *{replaced} FROM {SOURCES['trials']} WHERE {trials_filter})"]
    ctes += [f"{_quoted(n)} AS (\n{body(models[n])}\n)" for n in topological_order(models)
             if n in wanted and n != name]
    joined = ",\n".join(ctes)
    return f"WITH {joined}\nSELECT * FROM (\n{body(models[name])}\n)"

"""The task catalog as `serve` answers it: list and fetch tasks, and describe what a task is (kinds, every contract
field, the ladder and its failure codes, a real example per kind, the authoring rules).

Everything here is read from where it is defined: the fields from the pydantic contracts' JSON schema, the stages
from contracts/ladder.py, the codes from contracts/failures.py, the rules from docs/task-authoring.md, the examples
from tasks/ (validated as they load). Nothing is written.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import Field

from mcp_evals_pipeline.contracts.failures import CODES, MEANINGS
from mcp_evals_pipeline.contracts.ladder import LADDER
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.contracts.task_base import ContractModel
from mcp_evals_pipeline.contracts.usage import UsageContract
from mcp_evals_pipeline.kinds import KINDS
from mcp_evals_pipeline.paths import REPO_ROOT, tasks_dir
from mcp_evals_pipeline.tasks import catalog
from mcp_evals_pipeline.tasks.suites import load_suites, suite_of, unknown_suite

# The filters' types, from the contracts themselves: a new kind or runtime needs no edit here.
KindName = Literal[tuple(KINDS)]  # type: ignore[valid-type]
Runtime = Literal[get_args(TaskContract.model_fields["runtime"].annotation)[0]]  # type: ignore[misc,valid-type]
# kind -> its contract model, keyed by each model's own `kind` literal.
CONTRACTS: dict[str, type[ContractModel]] = {get_args(m.model_fields["kind"].annotation)[0]: m
                                             for m in (TaskContract, UsageContract)}
AUTHORING_DOC = REPO_ROOT / "docs" / "task-authoring.md"
RULES_HEADING = "## Rules that keep a task honest"


class TaskLookupError(ValueError):
    """A task id, suite or filter that names nothing: the reason, with the nearest names."""


class TaskSummary(ContractModel):
    id: str = Field(description="The task id: its directory under tasks/.")
    kind: str = Field(description="What a trial is: build (an agent builds a server) or usage (it uses one).")
    title: str
    suite: str | None = Field(description="The suite (tasks/suites.json) the task belongs to, if any.")
    runtime: str = Field(description="python or node: the built server's runtime, or the used server's.")
    prompt_hash: str = Field(description="sha256 prefix of prompt.md + task.json: a changed one is a new task.")
    contract_path: str = Field(description="task.json, relative to the repository when inside it.")


class TaskList(ContractModel):
    tasks: list[TaskSummary]
    count: int
    unloadable: list[str] = Field(description="Task directories that do not load, each with its error (file and "
                                              "field): listed nowhere else, whatever the filters.")


class TaskView(TaskSummary):
    prompt: str = Field(description="prompt.md: what the agent reads.")
    contract: TaskContract | UsageContract = Field(description="task.json as validated (defaults filled in).")


class ContractField(ContractModel):
    path: str = Field(description="Dotted path in task.json; `[]` marks the items of a list, `{}` a map's values.")
    type: str
    required: bool
    description: str = ""


class KindSchema(ContractModel):
    kind: str
    description: str
    fields: list[ContractField]
    json_schema: dict[str, Any] = Field(description="The contract's full JSON Schema (camelCase, as on disk).")
    example_task: str = Field(description="The real task the example is taken from (the smallest of its kind).")
    example: dict[str, Any] = Field(description="That task's task.json, as written; it validates.")


class LadderStage(ContractModel):
    stage: str
    checks: str
    opt_in: str | None = Field(description="The contract feature that turns the stage on; null: always run.")
    failure_code: str


class FailureCode(ContractModel):
    code: str
    meaning: str


class TaskSchema(ContractModel):
    kinds: list[KindSchema]
    ladder: list[LadderStage] = Field(description="The build grader's stages, in the order they run; a grade "
                                                  "fails at the first failing one.")
    failure_codes: list[FailureCode] = Field(description="Every code a grade can carry: contract.<stage>, "
                                                         "usage.<outcome>[.<why>], infra.<what> (nothing judged: "
                                                         "the trial leaves every denominator).")
    authoring_rules: list[str] = Field(description="The rules a committable task keeps (docs/task-authoring.md).")


def repo_relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def _summary(task: catalog.Task, suites: dict[str, Any]) -> TaskSummary:
    return TaskSummary(id=task.id, kind=task.kind, title=task.contract.title,
                       suite=suite_of(task.id, task.prompt_hash, suites=suites),
                       runtime=task.contract.effective_runtime, prompt_hash=task.prompt_hash,
                       contract_path=repo_relative(task.dir / "task.json"))


def select_tasks(suite: str | None = None, kind: str | None = None,
                 runtime: str | None = None) -> tuple[list[catalog.Task], list[str]]:
    """The tasks that load, filtered, and the error of each task directory that does not load; a suite that does
    not exist is an error naming the nearest."""
    suites = load_suites()
    if suite is not None and suite not in suites:
        raise TaskLookupError(unknown_suite(suite, suites))
    tasks, broken = catalog.discover_tasks()
    return [t for t in tasks
            if (suite is None or suite_of(t.id, t.prompt_hash, suites=suites) == suite)
            and (kind is None or t.kind == kind)
            and (runtime is None or t.contract.effective_runtime == runtime)], [str(e) for e in broken]


def list_tasks(suite: str | None = None, kind: str | None = None, runtime: str | None = None) -> TaskList:
    selected, broken = select_tasks(suite, kind, runtime)
    suites = load_suites()
    found = [_summary(t, suites) for t in selected]
    return TaskList(tasks=found, count=len(found), unloadable=broken)


def get_task(task_id: str) -> TaskView:
    """One task's prompt and contract; an id that is no plain name, or names no task, is an error saying why
    (with the nearest ids)."""
    try:
        task = catalog.get_task(task_id)
    except catalog.UnknownTask as exc:
        raise TaskLookupError(exc.message) from None
    except catalog.TaskLoadError as exc:
        raise TaskLookupError(f"task {task_id} does not load: {exc}") from None
    return TaskView(**_summary(task, load_suites()).model_dump(), prompt=task.prompt, contract=task.contract)


def _type_name(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "anyOf" in schema:
        return " | ".join(_type_name(s) for s in schema["anyOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_type_name(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of {_type_name(schema['additionalProperties'])}"
    return str(kind)


def _fields(schema: dict[str, Any], defs: dict[str, Any], prefix: str = "",
            seen: tuple[str, ...] = ()) -> list[ContractField]:
    """Every field of a model's JSON schema, nested models expanded in place (each model once per path)."""
    out: list[ContractField] = []
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        nested = _nested_refs(prop)
        # A field without a description of its own is described by the model it holds (its docstring).
        description = prop.get("description") or " ".join(
            " ".join(defs[ref].get("description", "").split()) for ref, _ in nested[:1])
        out.append(ContractField(path=path, type=_type_name(prop), required=name in required,
                                 description=description))
        for ref, suffix in nested:
            if ref not in seen:
                out += _fields(defs[ref], defs, f"{path}{suffix}.", (*seen, ref))
    return out


def _nested_refs(prop: dict[str, Any]) -> list[tuple[str, str]]:
    """The models a property holds, with how its path reaches them: `` (itself), `[]` (items), `{}` (values)."""
    found: list[tuple[str, str]] = []
    for option in prop.get("anyOf", [prop]):
        if "$ref" in option:
            found.append((option["$ref"].rsplit("/", 1)[-1], ""))
        elif option.get("type") == "array" and "$ref" in option.get("items", {}):
            found.append((option["items"]["$ref"].rsplit("/", 1)[-1], "[]"))
        elif isinstance(option.get("additionalProperties"), dict) and "$ref" in option["additionalProperties"]:
            found.append((option["additionalProperties"]["$ref"].rsplit("/", 1)[-1], "{}"))
    return found


def _example(kind: str, loaded: list[catalog.Task]) -> catalog.Task:
    """The smallest real task of the kind that counts in a pass rate (a static source-imports task shows little):
    its task.json is the example, minimal and valid since it loaded."""
    tasks = [t for t in loaded if t.kind == kind and t.contract.scored_for_pass_rate]
    if not tasks:
        raise TaskLookupError(f"no task of kind {kind} under {tasks_dir()} to take an example from")
    return min(tasks, key=lambda t: (len((t.dir / "task.json").read_bytes()), t.id))


def authoring_rules(doc: Path = AUTHORING_DOC) -> list[str]:
    """The bullets under "Rules that keep a task honest" in docs/task-authoring.md, one string each (Markdown
    emphasis and line wrapping removed)."""
    text = doc.read_text(encoding="utf-8")
    start = text.index(RULES_HEADING) + len(RULES_HEADING)
    section = text[start:].split("\n## ", 1)[0]
    bullets = [" ".join(chunk.split()) for chunk in re.split(r"\n- ", "\n" + section.strip())[1:]]
    return [b.replace("**", "") for b in bullets if b]


def _meaning(code: str) -> str:
    stages = {s.failure_code: s for s in LADDER}
    if code in stages:
        return f"the first failing check was of stage {stages[code].name}: {stages[code].checks}"
    return MEANINGS[code]


def describe_task_schema() -> TaskSchema:
    kinds = []
    loaded = catalog.discover_tasks()[0]
    for name, model in CONTRACTS.items():
        schema = model.model_json_schema(by_alias=True)
        example = _example(name, loaded)
        kinds.append(KindSchema(
            kind=name, description=" ".join((model.__doc__ or sys.modules[model.__module__].__doc__ or "").split()),
            fields=_fields(schema, schema.get("$defs", {})), json_schema=schema, example_task=example.id,
            example=json.loads((example.dir / "task.json").read_text(encoding="utf-8"))))
    return TaskSchema(
        kinds=kinds,
        ladder=[LadderStage(stage=s.name, checks=s.checks, opt_in=s.feature, failure_code=s.failure_code)
                for s in LADDER],
        failure_codes=[FailureCode(code=code, meaning=_meaning(code)) for code in sorted(CODES)],
        authoring_rules=authoring_rules())

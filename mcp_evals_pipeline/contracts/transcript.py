"""transcript.jsonl: the one event schema every agent runner writes (and the judge quotes from)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from mcp_evals_pipeline.contracts.grade import RecordModel

EventType = Literal["system", "user", "assistant", "tool_call", "tool_result", "usage", "error", "info"]


class TranscriptEvent(RecordModel):
    seq: int
    t_ms: int  # since the agent phase started
    type: EventType
    text: str | None = None
    tool: str | None = None
    call_id: str | None = None
    args: dict[str, Any] | None = None
    exit_code: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


def read_transcript(path: Path) -> list[TranscriptEvent]:
    if not path.exists():
        return []
    return [TranscriptEvent.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def transcript_text(events: list[TranscriptEvent]) -> str:
    """The transcript as one string: what judge quotes are verified against."""
    parts = []
    for e in events:
        if e.text:
            parts.append(e.text)
        if e.args:
            parts.extend(str(v) for v in e.args.values())
    return "\n".join(parts)


def final_reply(transcript: Path) -> str | None:
    """The agent's last assistant text in transcript.jsonl."""
    reply = None
    with contextlib.suppress(OSError):
        for line in transcript.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if event.get("type") == "assistant" and isinstance(event.get("text"), str):
                    reply = event["text"]
    return reply

"""Stage `upstream`: the server's tools must really call the upstream service the task names.

Before the server starts, a fresh bundled fake (mcp_evals_pipeline/upstreams/) is started on 127.0.0.1 and its
base URL handed to the server in the contract's variable. The calls stage then checks what came back, and the
fake is the only source of the checked data (ids, totals, statuses). After the calls, check `upstream` requires
each `expectRequests` entry to have been recorded: a server that answers from a local table can produce the
same results, but never shows up here.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import anyio.to_thread

from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.upstream import ExpectedRequest, UpstreamSpec
from mcp_evals_pipeline.grader.features import Feature, Step, StepFailed, register
from mcp_evals_pipeline.upstreams import FakeService, RecordedRequest, start_service

# How many recorded requests a failure detail lists before it summarizes the rest.
LISTED_REQUESTS = 25


def _matches(expected: ExpectedRequest, request: RecordedRequest) -> bool:
    if request.method.upper() != expected.method or re.fullmatch(expected.path, request.path) is None:
        return False
    for key, want in (expected.query or {}).items():
        got = request.query.get(key)
        if (want is None) != (got is None) or (want is not None and got != [want]):
            return False
    if expected.body is not None:
        body = request.body
        if body is None and expected.exact_body and not request.raw_body.strip():
            body = {}  # no body at all: what "an empty JSON object, or no body" allows
        if not isinstance(body, dict) or (expected.exact_body and body.keys() != expected.body.keys()):
            return False
        return all(k in body and body[k] == v and type(body[k]) is type(v) for k, v in expected.body.items())
    return True


def _describe_expected(expected: ExpectedRequest) -> str:
    text = f"{expected.method} {expected.path}"
    if expected.query:
        text += "?" + "&".join(f"{k}={'<absent>' if v is None else v}" for k, v in expected.query.items())
    if expected.body is not None:
        text += " " + json.dumps(expected.body, separators=(",", ":"))
        text += " (exactly)" if expected.exact_body else ""
    return text


def _recorded_summary(recorded: list[RecordedRequest]) -> str:
    listed = "; ".join(r.describe() for r in recorded[:LISTED_REQUESTS])
    more = f"; (+{len(recorded) - LISTED_REQUESTS} more)" if len(recorded) > LISTED_REQUESTS else ""
    return listed + more


@register
class UpstreamFeature(Feature):
    name = "upstream"
    infra = Infra.UPSTREAM

    service: FakeService | None = None

    @property
    def spec(self) -> UpstreamSpec:
        spec = self.grading.contract.upstream
        assert spec is not None  # applies() only picks contracts that declare it
        return spec

    async def before_start(self) -> dict[str, str]:
        # A failure here is the harness's (the grader turns it into infra.upstream), never the workspace's.
        self.service = start_service(self.spec.service)
        return {self.spec.env: self.service.base_url}

    def steps(self) -> list[Step]:
        spec = self.spec
        return [Step("upstream", "upstream", self._check_requests,
                     [rid for r in spec.expect_requests for rid in r.requirements])]

    async def _check_requests(self) -> str:
        assert self.service is not None
        recorded = self.service.requests()
        missing = []
        for expected in self.spec.expect_requests:
            count = sum(_matches(expected, r) for r in recorded)
            if count < expected.min_count:
                missing.append(f"{_describe_expected(expected)} at least {expected.min_count}x (recorded {count}x)")
        if not self.spec.expect_requests and not recorded:
            # No particular request named: the upstream must still have been used at all.
            missing.append("any request at least 1x (recorded 0x)")
        if missing:
            wanted = f"expected upstream requests {'; '.join(missing)}"
            if not recorded:
                raise StepFailed(f"{wanted}; the {self.spec.service} service at the URL in {self.spec.env} received "
                                 "no request at all (answers made up locally, or the URL read from another "
                                 "variable?)")
            raise StepFailed(f"{wanted}; recorded {len(recorded)} requests: {_recorded_summary(recorded)}")
        counts = Counter(f"{r.method} {r.path}" for r in recorded)
        return f"{len(recorded)} upstream requests: " + ", ".join(f"{k} x{n}" for k, n in counts.items())

    async def close(self) -> None:
        if self.service is not None:
            service, self.service = self.service, None
            await anyio.to_thread.run_sync(service.stop)

"""A rubric LLM judge: one call per (hypothesis, reference), its answer parsed into a score or a recorded failure.

The request is built once (messages, schema and a cache key), so the run can
answer an identical call from the cache without calling; the outcome is either
a score 1-5 ("ok"), a parse failure with the raw answer kept ("parse_error"), or
an endpoint failure with its message ("error"). Never a guessed number.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from judging.clients import ChatAnswer, Endpoint, EndpointError, chat
from judging.parsing import parse_judge_answer
from judging.prompts import answer_schema, judge_messages

if TYPE_CHECKING:
    from judging.models import Judge

STATUS_OK = "ok"
STATUS_PARSE_ERROR = "parse_error"
STATUS_ERROR = "error"

# Temperature 0, as the paper and DESIGN.md use it.
RUBRIC_TEMPERATURE = 0.0


@dataclass(frozen=True)
class RubricRequest:
    """One rubric call ready to send, and the key that identifies identical calls."""

    messages: list[dict]
    schema: dict
    model: str
    temperature: float
    cache_key: str


def request_cache_key(
    *, base_url: str, model: str, messages: list[dict], schema: dict, temperature: float, with_reasoning: bool
) -> str:
    """sha256 of a canonical JSON of everything that decides the answer.

    The base_url is part of it: two servers can serve different weights under one
    model name (a quantised local copy and the hosted original), and a cache hit
    across them would credit one judge with the other's answer. A trailing slash
    does not make a different server.
    """
    canonical = json.dumps(
        {
            "base_url": base_url.rstrip("/"),
            "model": model,
            "messages": messages,
            "schema": schema,
            "temperature": temperature,
            "with_reasoning": with_reasoning,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def build_request(judge: Judge, rubric_text: str, hypothesis: str, reference: str) -> RubricRequest:
    """The call a rubric judge makes for one output (hypothesis) and its source (reference)."""
    messages = judge_messages(rubric_text, hypothesis, reference, with_reasoning=judge.with_reasoning)
    schema = answer_schema(judge.with_reasoning)
    return RubricRequest(
        messages=messages,
        schema=schema,
        model=judge.model,
        temperature=RUBRIC_TEMPERATURE,
        cache_key=request_cache_key(
            base_url=judge.base_url,
            model=judge.model,
            messages=messages,
            schema=schema,
            temperature=RUBRIC_TEMPERATURE,
            with_reasoning=judge.with_reasoning,
        ),
    )


@dataclass(frozen=True)
class RubricOutcome:
    """What one rubric call ended as: a score ("ok"), a parse failure with its raw answer, or an endpoint error.

    `error` is the reason for a non-ok status ("" when ok); `raw` is "" for an
    endpoint error (no answer came). `latency_seconds` is the call's whole time,
    retries and waits included, for an endpoint error as for an answer (None for
    an answer read from the cache, or a call refused before sending). `attempts`
    counts HTTP requests sent (0 for an answer read from the cache). `unreachable`: an endpoint error where the
    endpoint itself failed (no connection, a timeout, a 5xx after the retries; EndpointError.unreachable), not
    this one request.
    """

    status: str
    score: int | None
    reasoning: str
    raw: str
    error: str
    request_mode: str
    latency_seconds: float | None
    input_tokens: int | None
    output_tokens: int | None
    attempts: int
    unreachable: bool = False


def outcome_from_raw(
    raw: str,
    *,
    with_reasoning: bool,
    request_mode: str,
    input_tokens: int | None,
    output_tokens: int | None,
) -> RubricOutcome:
    """The outcome of a raw answer, parsed afresh (cache hits use this: no call, no latency)."""
    parsed = parse_judge_answer(raw, with_reasoning=with_reasoning)
    return RubricOutcome(
        status=STATUS_OK if parsed.error is None else STATUS_PARSE_ERROR,
        score=parsed.score,
        reasoning=parsed.reasoning,
        raw=raw,
        error=parsed.error or "",
        request_mode=request_mode,
        latency_seconds=None,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        attempts=0,
    )


def call_rubric_judge(
    endpoint: Endpoint, request: RubricRequest, *, with_reasoning: bool, answered_before: bool = False
) -> RubricOutcome:
    """Send one rubric call and parse its answer; an endpoint failure becomes status "error", never an exception.
    ``answered_before``: the run has had answers from this endpoint (see judging.clients.chat)."""
    try:
        answer: ChatAnswer = chat(
            endpoint, request.messages, json_schema=request.schema, temperature=request.temperature,
            answered_before=answered_before,
        )
    except EndpointError as failure:
        return RubricOutcome(
            status=STATUS_ERROR,
            score=None,
            reasoning="",
            raw="",
            error=str(failure),
            request_mode="",
            latency_seconds=failure.elapsed_seconds,  # the run waited for this failure too
            input_tokens=None,
            output_tokens=None,
            attempts=failure.attempts,
            unreachable=failure.unreachable,
        )
    outcome = outcome_from_raw(
        answer.text,
        with_reasoning=with_reasoning,
        request_mode=answer.request_mode,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
    )
    return dataclasses.replace(outcome, latency_seconds=answer.latency_seconds, attempts=answer.attempts)

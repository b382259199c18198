"""The audit queue's test scene, built with the models directly: judges, runs, judgements and flagged items on
the conftest project (adam admin, alice and bob annotators, charlie outsider), plus auditors grace and hedy;
and a small HTML reader for the page tests.

The scene (tests/conftest.py's batch: one source, three outputs):
- first pass "nli-first": an NLI judge, p = 0.30, 0.10, 0.45 for outputs 0, 1, 2 (1 + 4p = 2.2, 1.4, 2.8),
  each flagged: the queue's order, worst first, is output 1, 0, 2;
- explainer "gpt-explainer": a rubric judge with reasoning; output 0 scored 2 with a reasoning that quotes
  the output, the source, and a passage in neither; output 1 scored 3; output 2 a parse error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from typing import Any

import pytest

from annotate.models import Batch, Membership, Project, Sample
from judging.models import AuditItem, Judge, Judgement, JudgeRun, JudgingSettings
from judging.services import audits
from tests.conftest import make_user

HTMX = {"HTTP_HX_REQUEST": "true"}

EXPLANATION_0 = (
    'The output says "nine weeks of repairs" while the source says \'eight weeks\'. It also claims the project '
    "was “funded by the national government”, but the source's council paid (“the regional council”). "
    'Nothing mentions "a toll of 3 euros".'
)


def make_auditor(project: Project, username: str = "grace") -> Any:
    user = make_user(username)
    Membership.objects.create(project=project, user=user, role=Membership.Role.AUDITOR)
    return user


def make_judge(project: Project, name: str, kind: str = Judge.Kind.RUBRIC, **settings: Any) -> Judge:
    defaults: dict[str, Any] = {"base_url": "http://127.0.0.1:9/v1", "model": name} if kind == Judge.Kind.RUBRIC else {}
    return Judge.objects.create(project=project, name=name, kind=kind, **{**defaults, **settings})


def make_run(judge: Judge, purpose: str = JudgeRun.Purpose.PLAIN, **fields: Any) -> JudgeRun:
    return JudgeRun.objects.create(
        project=judge.project, judge=judge, purpose=purpose, status=JudgeRun.Status.DONE, **fields
    )


def judge_sample(run: JudgeRun, sample: Sample, *, score: int | None = None, probability: float | None = None,
                 reasoning: str = "", status: str = Judgement.Status.OK, raw: str = "", error: str = "",
                 sentence_scores: list[Any] | None = None) -> Judgement:
    return Judgement.objects.create(
        run=run, sample=sample, status=status, score=score, probability=probability, reasoning=reasoning,
        raw=raw or (f'{{"score": {score}}}' if score is not None else ""), error=error,
        sentence_scores=sentence_scores,
    )


def flag(sample: Sample, judgement: Judgement | None, reason: str = "") -> AuditItem:
    if not reason and judgement is not None:
        figure = judgement.score if judgement.score is not None else f"p {judgement.probability:.2f}"
        reason = f"{figure} from judge {judgement.run.judge.name} (run {judgement.run_id})"
    return AuditItem.objects.create(project=sample.project, sample=sample, flagged_by=judgement, reason=reason)


@dataclass
class AuditScene:
    project: Project
    auditor: Any
    samples: list[Sample]
    first_pass: Judge
    explainer: Judge
    first_judgements: list[Judgement]
    explanations: list[Judgement]
    items: list[AuditItem]  # by sample position
    settings: JudgingSettings
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def queue_order(self) -> list[AuditItem]:
        """Worst first: 1 + 4p = 1.4 (output 1), 2.2 (output 0), 2.8 (output 2)."""
        return [self.items[1], self.items[0], self.items[2]]


def build_scene(project: Project, batch: Batch, *, audits_per_item: int = 1, blind: bool = False) -> AuditScene:
    samples = list(batch.samples.order_by("position"))
    auditor = make_auditor(project)
    first_pass = make_judge(project, "nli-first", Judge.Kind.NLI, nli_model_path="/models/tiny")
    explainer = make_judge(project, "gpt-explainer")
    first_run = make_run(first_pass, JudgeRun.Purpose.FIRST_PASS)
    first = [
        judge_sample(first_run, sample, probability=p)
        for sample, p in zip(samples, (0.30, 0.10, 0.45), strict=True)
    ]
    explain_run = make_run(explainer, JudgeRun.Purpose.EXPLAIN)
    explanations = [
        judge_sample(explain_run, samples[0], score=2, reasoning=EXPLANATION_0),
        judge_sample(explain_run, samples[1], score=3, reasoning="The 12.4 million figure is right; 'the bridge' is vague."),
        judge_sample(explain_run, samples[2], status=Judgement.Status.PARSE_ERROR, raw="Looks fine to me <b>really</b>",
                     error="The answer holds no JSON object."),
    ]
    items = [flag(sample, judgement) for sample, judgement in zip(samples, first, strict=True)]
    settings = JudgingSettings.objects.create(
        project=project, first_pass=first_pass, explainer=explainer, audits_per_item=audits_per_item,
        blind_by_default=blind,
    )
    return AuditScene(project, auditor, samples, first_pass, explainer, first, explanations, items, settings)


@pytest.fixture
def scene(project: Project, batch: Batch) -> AuditScene:
    return build_scene(project, batch)


class Clock:
    """The audit queue's clock (judging.services.audits.clock.now), moved by hand: no sleeping."""

    def __init__(self) -> None:
        self.moment = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.moment

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    moved = Clock()
    monkeypatch.setattr(audits.clock, "now", moved)
    return moved


# --------------------------------------------------------------------------- reading pages

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    parts: list[Any] = field(default_factory=list)  # text and child elements, in order

    @property
    def text(self) -> str:
        return "".join(part if isinstance(part, str) else part.text for part in self.parts)

    def children(self) -> list[Element]:
        return [part for part in self.parts if isinstance(part, Element)]

    def find(self, tag: str | None = None, **wanted: str) -> list[Element]:
        wanted = {name.replace("_", "-"): value for name, value in wanted.items()}
        found = []
        for child in self.children():
            if (tag is None or child.tag == tag) and all(child.attrs.get(k) == v for k, v in wanted.items()):
                found.append(child)
            found.extend(child.find(tag, **wanted))
        return found

    def one(self, tag: str | None = None, **wanted: str) -> Element:
        found = self.find(tag, **wanted)
        assert len(found) == 1, f"expected one {tag or 'element'} with {wanted}, found {len(found)}"
        return found[0]


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.stack[-1].parts.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].parts.append(data)


def read_html(html: str | bytes) -> Element:
    reader = _Reader()
    reader.feed(html.decode() if isinstance(html, bytes) else html)
    reader.close()
    return reader.root


def marks_in(text_element: Element) -> list[tuple[str, int, int, str]]:
    """(text, start, end, quote ids) of each quote mark in a rendered text, with the code-point offset of the
    mark counted from the text rendered before it."""
    found: list[tuple[str, int, int, str]] = []
    at = 0

    def walk(element: Element) -> None:
        nonlocal at
        for part in element.parts:
            if isinstance(part, str):
                at += len(part)
                continue
            if part.tag == "mark" and part.attrs.get("data-role") == "quote":
                assert int(part.attrs["data-start"]) == at, "data-start disagrees with the text before the mark"
                found.append((part.text, at, at + len(part.text), part.attrs["data-quote"]))
                at += len(part.text)
                continue
            walk(part)

    walk(text_element)
    return found


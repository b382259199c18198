"""Judge outputs made elsewhere: a cost or latency no call has (the review imported cost and latency 1e308, whose sum
overflowed to infinity, and the run's API was a 500 from then on) is refused naming the line and the field, with the
bound and why; a run whose stored figures add up past the largest number (stored before the bound) still answers,
its total null with the reason. The shared reader refuses NaN anywhere on a line and a key given twice, and a UTF-16
file is named as such, not taken for a CSV file."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotate.models import Batch, Project
from judging.models import Judge, Judgement, JudgeRun
from judging.services.ingest import import_judgements
from tests.conftest import login
from tests.judging.import_refusals import assert_judgements_api_refuses, assert_rewrite_refused
from tests.judging.test_ingest import failure

pytestmark = pytest.mark.django_db

MAX_LATENCY_SECONDS = 7 * 24 * 3600  # judging.services.ingest.lines' bounds, written out
MAX_COST_USD = 10_000.0
TOO_LARGE = ("The stored costs add up to more than a number can hold: some judgement's cost is absurd (imported before "
             "imports refused a cost over US$ 10,000 a call).")
LATENCY_WHY = "seconds (a week: a longer call is a mistake, milliseconds given as seconds, say)"
COST_WHY = "US$ for one call (no call costs that much: cents given as dollars, say)"


def test_the_reviews_overflowing_file_is_refused_naming_line_and_field(batch: Batch) -> None:
    refused = failure(
        batch.project,
        {"sample": "0", "judge": "llm", "score": 4, "latency": 1e308, "cost": 1e308},
        {"sample": "1", "judge": "llm", "score": 4, "cost": MAX_COST_USD + 0.01},
        {"sample": "2", "judge": "llm", "score": 4, "cached": True, "cached_call_latency": MAX_LATENCY_SECONDS + 1},
    )
    assert refused.messages == [
        f"judged.jsonl: line 1: field 'latency' must be at most 604800 {LATENCY_WHY}, got 1e+308",
        f"judged.jsonl: line 2: field 'cost' must be at most 10000 {COST_WHY}, got 10000.01",
        f"judged.jsonl: line 3: field 'cached_call_latency' must be at most 604800 {LATENCY_WHY}, got 604801",
    ]


def test_the_bounds_themselves_are_taken(batch: Batch, admin_user: Any) -> None:
    import_judgements(batch.project, [("j.jsonl", json.dumps(
        {"sample": "0", "judge": "llm", "score": 4, "latency": MAX_LATENCY_SECONDS, "cost": MAX_COST_USD}))])
    judgement = Judgement.objects.get()
    assert (judgement.latency_seconds, judgement.cost) == (MAX_LATENCY_SECONDS, MAX_COST_USD)


def test_the_api_refuses_the_overflowing_file(batch: Batch, admin_user: Any) -> None:
    line = b'{"sample": "0", "judge": "llm", "score": 4, "cost": 1e308}\n'
    assert_judgements_api_refuses(admin_user, line, f"j.jsonl: line 1: field 'cost' must be at most 10000 {COST_WHY}, "
                                                    "got 1e+308")


@pytest.fixture
def overflowing_run(project: Project, batch: Batch) -> JudgeRun:
    """An imported run whose judgements were stored before imports bounded cost and latency: their sums overflow
    (SQLite adds them up to infinity; PostgreSQL refuses to)."""
    judge = Judge.objects.create(project=project, name="llm", kind=Judge.Kind.IMPORTED)
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE, total=3, done=3,
                                  scored=3, scope=JudgeRun.Scope.IMPORTED)
    for sample in batch.samples.order_by("position"):
        run.judgements.create(sample=sample, status="ok", score=4, latency_seconds=1e308, cost=1e308,
                              input_tokens=10, output_tokens=5)
    return run


def test_a_run_whose_stored_figures_overflow_still_answers_with_the_reason(
    project: Project, admin_user: Any, overflowing_run: JudgeRun
) -> None:
    client = login(admin_user)
    client.raise_request_exception = True  # a 500 (JSON cannot carry infinity; PostgreSQL's overflow) fails here
    answer = client.get(f"/api/judge-runs/{overflowing_run.pk}/")
    assert answer.status_code == 200
    usage = answer.json()["summary"]
    assert usage["cost"] is None and usage["input_tokens"] == 30
    assert usage["reasons"]["cost"] == TOO_LARGE
    page = client.get(reverse("judging-run", args=[project.slug, overflowing_run.pk]))
    assert page.status_code == 200


def test_nan_anywhere_on_a_line_and_a_key_twice_are_named(batch: Batch) -> None:
    refused = failure(
        batch.project,
        '{"sample": "0", "judge": "llm", "score": 4, "cost": NaN}',
        '{"sample": "1", "judge": "llm", "score": 4, "score": 2}',
        '{"sample": "2", "judge": "llm", "score": 4, "sentence_scores": [4, Infinity]}',
    )
    assert refused.messages == [
        "judged.jsonl: line 1: field 'cost' is NaN, which JSON does not allow and no database stores; write a number "
        "or null",
        "judged.jsonl: line 2: field 'score' is given twice in one object; give each field once (a reader would "
        "silently keep only the last value)",
        "judged.jsonl: line 3: field 'sentence_scores[1]' is Infinity, which JSON does not allow and no database "
        "stores; write a number or null",
    ]


def test_a_utf16_file_is_named_as_such_not_taken_for_csv(batch: Batch, admin_user: Any) -> None:
    """The review's jj-utf16.jsonl was "this is a CSV file (its first line is '\\ufffd\\ufffd{\\x00\"\\x00s...')"."""
    content = json.dumps({"sample": "0", "judge": "llm", "score": 4}).encode("utf-16")
    message = "j.jsonl: this is UTF-16 text, not UTF-8: save it as UTF-8 JSONL (an editor's Save as, encoding UTF-8)"
    assert_judgements_api_refuses(admin_user, content, message)
    no_mark = json.dumps({"sample": "0", "judge": "llm", "score": 4}).encode("utf-16-le")
    assert_judgements_api_refuses(admin_user, no_mark, message)


def test_the_api_names_an_empty_file(batch: Batch, admin_user: Any) -> None:
    answer = login(admin_user).post("/api/projects/demo/judgements/import/",
                                    {"file": SimpleUploadedFile("empty.jsonl", b"")})
    assert (answer.status_code, answer.json()) == (
        400, {"file": ["empty.jsonl: the file is empty (0 bytes); nothing was imported"]})


def test_a_synthetic_rewrite_with_nan_is_named_by_file_line_and_field(project: Project) -> None:
    # json.dumps writes the float as NaN, as Python scripts that make such files do.
    assert_rewrite_refused(project, "nan", float("nan"),
                           "is NaN, which JSON does not allow and no database stores; write a number or null")

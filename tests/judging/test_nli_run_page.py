"""An NLI run's page shows an NLI run's figures, and an NLI run over samples scores each output sentence.

Before, the page of an NLI run (a local model: no endpoint, no cache, no tokens, no rubric) showed the LLM run's rows:
"Endpoint requests (retries included) 0" beside "Mean latency of a call sent ... over 30 calls", cache-token rows and
"Rubric version —"; and a plain NLI run stored no per-sentence p (``sentence_scores`` null), so the audit page lost
the output's shading as soon as a plain run of the first-pass judge came after the triage. Now the page shows the
samples, the windows scored (in all and per sample), the mean time per sample and the model; each scored judgement
keeps its windows' p in ``raw`` (p is their max), and every run over samples scores the sentences.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Membership, Project
from judging.clients import load_nli_model
from judging.judges.nli import score_pair_outcomes
from judging.models import AuditItem, Judge, Judgement, JudgeRun
from judging.services import runs
from judging.services.audits.view import sentence_shading
from judging.services.judges import create_judge, update_judging_settings
from tests.conftest import login
from tests.judging.run_factories import add_samples
from tests.judging.tiny_nli import tiny_nli_fixture  # noqa: F401  (the tiny_nli_path fixture)

pytestmark = pytest.mark.django_db

LLM_ONLY = ("calls", "cached", "cost", "sent_tokens", "cached_tokens", "mean_latency", "retried", "rubric_version",
            "parse_errors", "prices")


def run_of(project: Project, judge: Judge, **options: Any) -> JudgeRun:
    return runs.execute_run(runs.start_run(project, judge, queue=False, **options).pk)


def test_an_nli_runs_page_shows_windows_time_per_sample_and_model_and_no_llm_rows(
    project: Project, tiny_nli_path: str
) -> None:
    samples = add_samples(project, 3)
    judge = create_judge(project, name="tiny", kind=Judge.Kind.NLI, nli_model_path=tiny_nli_path)
    run = run_of(project, judge)
    assert run.status == JudgeRun.Status.DONE and run.scored == 3

    # Each judgement keeps its windows' p, in order; p is their max.
    model = load_nli_model(tiny_nli_path)
    windows = 0
    for sample in samples:
        judgement = Judgement.objects.get(run=run, sample=sample)
        raw = json.loads(judgement.raw)
        [whole] = score_pair_outcomes(model, [(sample.passage.text, sample.summary)])
        assert raw["windows"] == pytest.approx(list(whole.window_probabilities), abs=1e-5)
        assert judgement.probability == pytest.approx(max(raw["windows"]), abs=1e-5)
        assert raw["sentence_windows"] == len(judgement.sentence_scores) == 2  # short sources: one window each
        windows += len(raw["windows"]) + raw["sentence_windows"]

    admin = Membership.objects.get(project=project, role=Membership.Role.ADMIN).user
    page = login(admin).get(f"/projects/{project.slug}/judges/runs/{run.pk}/").content.decode()
    for figure in LLM_ONLY:
        assert f'data-figure="{figure}"' not in page, figure
    assert "Endpoint requests" not in page and "Rubric version" not in page and "Endpoint or model" not in page
    for figure in ("items", "judged", "scored", "errors", "seconds", "time_per_sample", "windows", "model",
                   "consistent_class"):
        assert f'data-figure="{figure}"' in page, figure
    assert f"{windows} in all, {windows / 3:.2f} per sample" in page
    assert f"<code>{tiny_nli_path}</code>" in page and "1 (consistent)" in page
    assert "over 3 samples" in page  # the mean time per sample is over the samples, not "calls"
    # The progress line says nothing of calls or the cache either.
    counts = page[page.index('data-role="run-counts"'):]
    assert "calls" not in counts[:counts.index("</span>")]


def test_a_plain_nli_run_after_the_triage_keeps_the_audit_pages_shading(project: Project, tiny_nli_path: str) -> None:
    [sample] = add_samples(project, 1)
    judge = create_judge(project, name="tiny", kind=Judge.Kind.NLI, nli_model_path=tiny_nli_path)
    update_judging_settings(project, first_pass=judge.pk)
    item = AuditItem.objects.create(project=project, sample=sample, reason="by hand")
    run_of(project, judge, purpose=JudgeRun.Purpose.FIRST_PASS)
    shading = sentence_shading(item)
    assert shading is not None and len(shading["sentences"]) == 2
    # A plain run of the same judge is now its latest judgement of the sample: the shading stays, from it.
    plain = run_of(project, judge)
    assert plain.judgements.get().sentence_scores is not None
    again = sentence_shading(item)
    assert again is not None and again["sentences"] == shading["sentences"]

"""Importing judge outputs made elsewhere: valid lines by external id and by texts, and every kind of bad line."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotate.models import Batch, Passage, Project, Sample
from judging.models import Judge, Judgement, JudgeRun
from judging.services.ingest import JudgementImportFailed, import_judgements
from tests.conftest import SOURCE, SUMMARIES


def jsonl(*rows: dict[str, Any] | str) -> bytes:
    return "\n".join(row if isinstance(row, str) else json.dumps(row) for row in rows).encode("utf-8")


def counts() -> tuple[int, int, int]:
    return Judge.objects.count(), JudgeRun.objects.count(), Judgement.objects.count()


def failure(project: Project, *rows: dict[str, Any] | str, name: str = "judged.jsonl") -> JudgementImportFailed:
    before = counts()
    with pytest.raises(JudgementImportFailed) as caught:
        import_judgements(project, [(name, jsonl(*rows))])
    assert counts() == before  # nothing written
    return caught.value


# --------------------------------------------------------------------------- valid files


@pytest.mark.django_db
def test_lines_by_external_id_make_one_imported_judge_and_one_done_run_per_judge(batch: Batch, admin_user: Any) -> None:
    project = batch.project
    report = import_judgements(project, [("judged.jsonl", jsonl(
        {"sample": "0", "judge": "gpt-x", "score": 2, "reasoning": 'It says "nine weeks".', "latency": 3.5,
         "input_tokens": 812, "output_tokens": 95, "cost": 0.0123},
        {"sample": 1, "judge": "gpt-x", "score": 5},
        {"sample": "2", "judge": "gpt-x", "status": "parse_error", "raw": "I would say four", "error": "no JSON"},
        "",
        {"sample": "0", "judge": "hhem", "p": 0.125, "latency": 0.007},
        {"sample": "1", "judge": "hhem", "p": 1},
    ))], by=admin_user)

    assert report.judgements == 5 and report.flagged is None
    judges = {judge.name: judge for judge in Judge.objects.filter(project=project)}
    assert set(judges) == {"gpt-x", "hhem"}
    assert {judge.kind for judge in judges.values()} == {Judge.Kind.IMPORTED}
    runs = {run.judge.name: run for run in JudgeRun.objects.filter(project=project)}
    gpt = runs["gpt-x"]
    assert (gpt.scope, gpt.status, gpt.total, gpt.done, gpt.scored, gpt.failed, gpt.calls) == (
        "imported", "done", 3, 3, 2, 1, 0)
    assert gpt.created_by == admin_user and gpt.percent == 100
    samples = {sample.external_id: sample for sample in batch.samples.all()}
    first = Judgement.objects.get(run=gpt, sample=samples["0"])
    assert (first.status, first.score, first.probability, first.reasoning) == ("ok", 2, None, 'It says "nine weeks".')
    assert (first.latency_seconds, first.input_tokens, first.output_tokens, first.cost) == (3.5, 812, 95, 0.0123)
    failed = Judgement.objects.get(run=gpt, sample=samples["2"])
    assert (failed.status, failed.score, failed.raw, failed.error) == ("parse_error", None, "I would say four", "no JSON")
    hhem = Judgement.objects.filter(run=runs["hhem"]).order_by("sample__external_id")
    assert [(j.score, j.probability, j.display_score) for j in hhem] == [(None, 0.125, 1.5), (None, 1.0, 5.0)]
    assert report.as_dict()["runs"][0] == {
        "run": gpt.pk, "judge": "gpt-x", "judge_created": True, "items": 3, "scored": 2, "failed": 1, "flagged": None,
    }


@pytest.mark.django_db
def test_lines_by_texts_match_the_passage_text_and_the_summary_exactly(batch: Batch) -> None:
    generator, summary = SUMMARIES[1]
    import_judgements(batch.project, [("t.jsonl", jsonl({"source": SOURCE, "output": summary, "judge": "j", "score": 4}))])
    judgement = Judgement.objects.get()
    assert judgement.sample.generator == generator and judgement.score == 4

    error = failure(batch.project, {"source": SOURCE + " ", "output": summary, "judge": "j", "score": 4})
    assert error.messages == [
        "judged.jsonl: line 1: no sample whose passage text and summary equal fields 'source' and 'output' in "
        "project 'demo'"
    ]


@pytest.mark.django_db
def test_sentence_scores_are_kept_one_per_output_sentence(batch: Batch) -> None:
    # Sample "0"'s summary has two sentences (split as the embedding job splits them; not embedded here).
    import_judgements(batch.project, [("s.jsonl", jsonl({"sample": "0", "judge": "j", "p": 0.3,
                                                         "sentence_scores": [0.3, None]}))])
    assert Judgement.objects.get().sentence_scores == [0.3, None]


@pytest.mark.django_db
def test_an_imported_judge_is_reused_and_each_import_makes_a_new_run(batch: Batch) -> None:
    # Different answers: the same ones again would be a repeat, refused (test_ingest_repeats).
    for score in (3, 4):
        import_judgements(batch.project, [("a.jsonl", jsonl({"sample": "0", "judge": "mine", "score": score}))])
    assert Judge.objects.filter(name="mine").count() == 1
    assert JudgeRun.objects.filter(judge__name="mine").count() == 2


@pytest.mark.django_db
def test_the_batch_field_picks_one_of_several_samples_with_the_same_external_id(batch: Batch) -> None:
    project = batch.project
    other = Batch.objects.create(project=project, name="batch-2")
    passage = Passage.objects.get(project=project)
    twin = Sample.objects.create(project=project, passage=passage, batch=other, external_id="0", summary="Another.")

    error = failure(project, {"sample": "0", "judge": "j", "score": 1})
    assert error.messages == [
        "judged.jsonl: line 1: 2 samples with external id '0' in project 'demo' (batches 'batch-1', 'batch-2'); "
        "name the batch with field 'batch'"
    ]
    import_judgements(project, [("b.jsonl", jsonl({"sample": "0", "batch": "batch-2", "judge": "j", "score": 1}))])
    assert Judgement.objects.get().sample == twin


@pytest.mark.django_db
def test_flag_runs_triage_on_each_imported_run_with_the_projects_thresholds(batch: Batch) -> None:
    from judging.models import AuditItem

    report = import_judgements(batch.project, [("f.jsonl", jsonl(
        {"sample": "0", "judge": "fast", "p": 0.2},
        {"sample": "1", "judge": "fast", "p": 0.5},  # not below 0.5
        {"sample": "2", "judge": "fast", "p": 0.49},
    ))], flag=True)
    flagged = set(AuditItem.objects.filter(project=batch.project).values_list("sample__external_id", flat=True))
    assert flagged == {"0", "2"}
    assert report.flagged == 2


# --------------------------------------------------------------------------- bad lines, each with its message


@pytest.mark.django_db
def test_a_sample_that_does_not_exist_is_named_with_its_line(batch: Batch) -> None:
    error = failure(batch.project, {"sample": "1", "judge": "j", "score": 3}, {"sample": "x", "judge": "j", "score": 3})
    assert error.messages == ["judged.jsonl: line 2: no sample with external id 'x' in project 'demo'"]
    assert "line 2: no sample with external id 'x' in project 'demo'" in str(error)


BAD_LINES = [
    ({"sample": "0", "judge": "j", "score": 0}, "field 'score' must be an integer from 1 to 5, got 0"),
    ({"sample": "0", "judge": "j", "score": 7}, "field 'score' must be an integer from 1 to 5, got 7"),
    ({"sample": "0", "judge": "j", "score": 4.0}, "field 'score' must be an integer from 1 to 5, got 4.0"),
    ({"sample": "0", "judge": "j", "score": "4"}, "field 'score' must be an integer from 1 to 5, got '4'"),
    ({"sample": "0", "judge": "j", "score": True}, "field 'score' must be an integer from 1 to 5, got True"),
    ({"sample": "0", "judge": "j", "p": 1.5}, "field 'p' must be 0 or more and at most 1, got 1.5"),
    ({"sample": "0", "judge": "j", "p": "high"}, "field 'p' must be a number, got 'high'"),
    ({"sample": "0", "judge": "j"}, "missing field 'score' (an integer 1..5) or 'p' (0..1); status is ok"),
    ({"sample": "0", "judge": "j", "score": 3, "p": 0.3},
     "fields 'score' and 'p' are both given; a judgement has one of them"),
    ({"sample": "0", "judge": "j", "status": "error", "score": 3, "raw": ""},
     "field 'score' must be absent when status is error: a failed judgement has no number"),
    ({"sample": "0", "judge": "j", "status": "failed"},
     "field 'status' must be one of ok, parse_error, error, got 'failed'"),
    ({"sample": "0", "score": 3}, "missing field 'judge'"),
    ({"sample": "0", "judge": "", "score": 3}, "field 'judge' must be a name, got ''"),
    ({"sample": "0", "judge": "j" * 101, "score": 3}, "field 'judge' has 101 characters; the limit is 100"),
    ({"judge": "j", "score": 3}, "missing field 'sample' (the sample's external id) or 'source' and 'output'"),
    ({"sample": "0", "source": SOURCE, "output": "x", "judge": "j", "score": 3},
     "give field 'sample' or fields 'source' and 'output', not both"),
    ({"source": SOURCE, "judge": "j", "score": 3},
     "field 'output' must be a string (the summary text, exactly), got None"),
    ({"sample": "0", "judge": "j", "score": 3, "latency": -1}, "field 'latency' must be 0 or more, got -1"),
    ({"sample": "0", "judge": "j", "score": 3, "input_tokens": 1.5},
     "field 'input_tokens' must be a whole number from 0 to 2147483647, got 1.5"),
    ({"sample": "0", "judge": "j", "score": 3, "reasoning": ["a"]}, "field 'reasoning' must be a string, got ['a']"),
    ({"sample": "0", "judge": "j", "score": 3, "scroe": 3},
     "unknown field 'scroe'; a judgement line has only batch, cached, cached_call_input_tokens, cached_call_latency, "
     "cached_call_output_tokens, cost, error, input_tokens, judge, latency, output, output_tokens, p, raw, reasoning, "
     "run, sample, score, sentence_scores, source, status"),
    ({"sample": "0", "batch": "nope", "judge": "j", "score": 3},
     "no sample with external id '0' in batch 'nope' of project 'demo'"),
    ({"sample": "0", "judge": "j", "p": 0.4, "sentence_scores": [0.9, 3]},
     "field 'sentence_scores' holds 3; its figures are p, from 0 to 1 like the line's number (or null)"),
    ({"sample": "0", "judge": "j", "score": 2, "sentence_scores": [0.5, 4]},
     "field 'sentence_scores' holds 0.5; its figures are scores, from 1 to 5 like the line's number (or null)"),
    ({"sample": "0", "judge": "j", "score": 2, "sentence_scores": [5, 2, 1]},
     "field 'sentence_scores' has 3 figures; the output has 2 sentences (one figure or null per sentence)"),
    ({"sample": "0", "judge": "j", "status": "error", "sentence_scores": [5, 2]},
     "field 'sentence_scores' must be absent when status is error"),
    ("{not json", "not valid JSON: Expecting property name enclosed in double quotes at column 2"),
    ("[1, 2]", "expected a JSON object, found a list of 2 items"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("row", "message"), BAD_LINES, ids=[str(i) for i in range(len(BAD_LINES))])
def test_each_bad_line_gets_a_message_naming_file_line_and_field(batch: Batch, row: Any, message: str) -> None:
    error = failure(batch.project, {"sample": "1", "judge": "j", "score": 3}, row)
    assert error.messages == [f"judged.jsonl: line 2: {message}"]


@pytest.mark.django_db
def test_a_rubric_or_nli_judges_name_is_refused_on_its_first_line(batch: Batch) -> None:
    Judge.objects.create(project=batch.project, name="gpt-4o", kind=Judge.Kind.RUBRIC, base_url="http://x", model="m")
    error = failure(batch.project, {"sample": "0", "judge": "gpt-4o", "score": 3},
                    {"sample": "1", "judge": "gpt-4o", "score": 3})
    assert error.messages == [
        "judged.jsonl: line 1: field 'judge': 'gpt-4o' is a rubric judge of project 'demo'; imported outputs "
        "need a name of their own (or an imported judge's)"
    ]


@pytest.mark.django_db
def test_one_judge_gives_one_kind_of_number_and_judges_a_sample_once(batch: Batch) -> None:
    error = failure(
        batch.project,
        {"sample": "0", "judge": "j", "score": 3},
        {"sample": "1", "judge": "j", "p": 0.3},
        {"sample": "0", "judge": "j", "score": 4},
    )
    assert error.messages == [
        "judged.jsonl: line 2: field 'p': judge 'j' gives 'score' on line 1 of judged.jsonl; one judge gives one "
        "kind of number (score 1..5 or p)",
        "judged.jsonl: line 3: judge 'j' already has a judgement of this sample on line 1 of judged.jsonl",
    ]


@pytest.mark.django_db
def test_every_problem_of_every_file_is_listed_at_once_and_nothing_is_written(batch: Batch) -> None:
    before = counts()
    with pytest.raises(JudgementImportFailed) as caught:
        import_judgements(batch.project, [
            ("good.jsonl", jsonl({"sample": "0", "judge": "j", "score": 3})),
            ("bad.jsonl", jsonl({"sample": "x", "judge": "j", "score": 3}, {"sample": "1", "judge": "j", "score": 9})),
            ("empty.jsonl", b"\n\n"),
        ])
    assert caught.value.messages == [
        "bad.jsonl: line 1: no sample with external id 'x' in project 'demo'",
        "bad.jsonl: line 2: field 'score' must be an integer from 1 to 5, got 9",
        "empty.jsonl: no rows (the file is empty or holds only blank lines)",
    ]
    assert str(caught.value).startswith("3 errors:\n")
    assert counts() == before


@pytest.mark.django_db
def test_only_an_existing_span_project_takes_judgements(batch: Batch) -> None:
    Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    rows = [("a.jsonl", jsonl({"sample": "0", "judge": "j", "score": 3}))]
    with pytest.raises(JudgementImportFailed, match="project: no project 'nope'"):
        import_judgements("nope", rows)
    with pytest.raises(JudgementImportFailed, match="'pairs' is not a span project"):
        import_judgements("pairs", rows)
    assert counts() == (0, 0, 0)


# --------------------------------------------------------------------------- the command


@pytest.mark.django_db
def test_the_command_prints_json_and_refuses_bad_files_naming_the_line(batch: Batch, tmp_path: Any) -> None:
    good = tmp_path / "good.jsonl"
    good.write_bytes(jsonl({"sample": "0", "judge": "j", "score": 3}, {"sample": "1", "judge": "k", "p": 0.9}))
    out = StringIO()
    call_command("import_judgements", str(good), "--project", "demo", "--json", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["judgements"] == 2 and printed["project"] == "demo"
    assert sorted(run["judge"] for run in printed["runs"]) == ["j", "k"]

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(jsonl({"sample": "0", "judge": "j", "score": 3}, {"sample": "zz", "judge": "j", "score": 3}))
    before = counts()
    with pytest.raises(CommandError, match=r"nothing was imported: .*bad.jsonl: line 2: no sample with external id 'zz'"):
        call_command("import_judgements", str(bad), "--project", "demo")
    assert counts() == before
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_judgements", str(tmp_path / "missing.jsonl"), "--project", "demo")

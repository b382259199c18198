"""Importing judgements imported before changes nothing and says so: the command, the API (409) and the service.

"The same": the same imported judge, sample and values. Lines naming a run match one earlier run as a whole
(each earlier run answers for one group); lines naming none repeat one by one. A group repeated whole or in
part refuses the import, naming its lines, the run that holds them and when it was imported.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from annotate.models import Batch, Membership, Project
from judging.models import Judge, Judgement, JudgeRun
from judging.services.ingest import JudgementImportFailed, JudgementsAlreadyImported, import_judgements
from tests.conftest import login, make_user

SAME = "(the same samples with the same values)"


def jsonl(*rows: dict[str, Any]) -> bytes:
    return "\n".join(json.dumps(row) for row in rows).encode("utf-8")


def counts(project: Project) -> tuple[int, int, int]:
    return (Judge.objects.filter(project=project).count(), JudgeRun.objects.filter(project=project).count(),
            Judgement.objects.filter(run__project=project).count())


def on(run: JudgeRun) -> str:
    return f"run {run.pk} on {timezone.localtime(run.created_at):%Y-%m-%d %H:%M}"


def refused(project: Project, name: str, content: bytes) -> JudgementsAlreadyImported:
    before = counts(project)
    with pytest.raises(JudgementsAlreadyImported) as caught:
        import_judgements(project, [(name, content)])
    assert counts(project) == before  # nothing written
    return caught.value


def copy_of(project: Project, slug: str) -> Project:
    """A new span project with the same batches and samples (names, external ids, texts), nothing judged."""
    other = Project.objects.create(name=slug, slug=slug)
    batches: dict[str, Batch] = {}
    for sample in project.samples.select_related("passage", "batch").order_by("batch__position", "position"):
        batch = batches.get(sample.batch.name)
        if batch is None:
            batch = batches[sample.batch.name] = Batch.objects.create(
                project=other, name=sample.batch.name, position=sample.batch.position)
        passage, _ = other.passages.get_or_create(external_id=sample.passage.external_id, text=sample.passage.text)
        other.samples.create(passage=passage, batch=batch, external_id=sample.external_id, summary=sample.summary,
                             position=sample.position, generator=sample.generator)
    return other


def export(slug: str, out: Path) -> list[dict[str, Any]]:
    call_command("export_judgements", "--project", slug, "--what", "judgements", "--format", "jsonl",
                 "--out", str(out), stdout=StringIO())
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.mark.django_db
def test_the_demo_export_imports_once_and_again_is_refused_by_the_command_and_the_api(tmp_path: Path) -> None:
    call_command("load_demo", stdout=StringIO())
    out = tmp_path / "demo.jsonl"
    rows = export("demo", out)
    copy = copy_of(Project.objects.get(slug="demo"), "copy")
    admin = make_user("ada")
    Membership.objects.create(project=copy, user=admin, role=Membership.Role.ADMIN)

    call_command("import_judgements", str(out), "--project", "copy", stdout=StringIO())
    after_first = counts(copy)
    assert after_first[2] == len(rows) == 60

    # The lines of each (judge, run) of the file, and the run the first import made of them.
    groups: dict[tuple[str, int], list[int]] = {}
    for number, row in enumerate(rows, start=1):
        groups.setdefault((row["judge"], row["run"]), []).append(number)
    made = list(JudgeRun.objects.filter(project=copy).order_by("id"))
    assert len(made) == len(groups) == 2

    def expected(file: str) -> list[str]:
        return [
            f"{file}: lines {numbers[0]}-{numbers[-1]}: judge {judge!r} (run '{source}'): these {len(numbers)} "
            f"judgements were imported before, as {on(run)} {SAME}"
            for ((judge, source), numbers), run in zip(groups.items(), made, strict=True)
        ]

    with pytest.raises(CommandError) as caught:
        call_command("import_judgements", str(out), "--project", "copy", stdout=StringIO())
    assert str(caught.value) == ("nothing was imported: 2 groups of lines were imported before:\n"
                                 + "\n".join(expected(str(out))))
    assert counts(copy) == after_first

    answer = login(admin).post("/api/projects/copy/judgements/import/",
                               {"file": SimpleUploadedFile(out.name, out.read_bytes(), "application/jsonl")})
    assert answer.status_code == 409
    assert answer.json() == {
        "detail": "Nothing was imported: 2 groups of lines were imported before (each named in 'file').",
        "file": expected(out.name),
    }
    assert counts(copy) == after_first
    assert len(export("copy", tmp_path / "copy.jsonl")) == 60


@pytest.mark.django_db
def test_lines_without_run_repeat_one_by_one_and_new_lines_import_once_the_repeats_are_removed(batch: Batch) -> None:
    project = batch.project
    zero = {"sample": "0", "judge": "j", "score": 3, "reasoning": "nine weeks"}
    one = {"sample": "1", "judge": "j", "score": 4}
    first = import_judgements(project, [("a.jsonl", jsonl(zero, one))]).runs[0].run

    # The same lines in another order and another file.
    error = refused(project, "b.jsonl", jsonl(one, zero))
    assert error.messages == [f"b.jsonl: lines 1-2: judge 'j': these 2 judgements were imported before, as "
                              f"{on(first)} {SAME}"]
    assert str(error) == error.messages[0]

    # One repeated line beside a new one: refused, naming the repeated line.
    two = {"sample": "2", "judge": "j", "score": 5}
    error = refused(project, "c.jsonl", jsonl(two, zero))
    assert error.messages == [
        f"c.jsonl: line 2: judge 'j': 1 of its 2 judgements was imported before, as {on(first)} {SAME}; the "
        "other 1 is new. A run imports whole and once: remove the repeated line to import the new one as a run of "
        "its own"
    ]

    # Without it the new line imports; so does a judgement of sample 0 that says something else.
    report = import_judgements(project, [("d.jsonl", jsonl(two, {**zero, "reasoning": "eight weeks"}))])
    assert report.judgements == 2
    assert JudgeRun.objects.filter(judge__name="j").count() == 2

    # Now sample 0's line repeats one run and sample 2's another: both are named.
    second = report.runs[0].run
    error = refused(project, "e.jsonl", jsonl(zero, two))
    assert error.messages == [f"e.jsonl: lines 1-2: judge 'j': these 2 judgements were imported before, as runs "
                              f"{on(first).removeprefix('run ')} and {on(second).removeprefix('run ')} {SAME}"]


@pytest.mark.django_db
def test_named_runs_with_the_same_answers_each_match_their_own_earlier_run(batch: Batch) -> None:
    # A judge run twice elsewhere with identical answers (say a deterministic NLI model): two runs here, once.
    lines = [{"sample": sample, "judge": "nli", "p": 0.5, "run": run} for run in (5, 6) for sample in ("0", "1")]
    runs = [imported.run for imported in import_judgements(batch.project, [("e.jsonl", jsonl(*lines))]).runs]
    assert len(runs) == 2

    error = refused(batch.project, "e.jsonl", jsonl(*lines))
    assert error.messages == [
        f"e.jsonl: lines 1-2: judge 'nli' (run '5'): these 2 judgements were imported before, as {on(runs[0])} {SAME}",
        f"e.jsonl: lines 3-4: judge 'nli' (run '6'): these 2 judgements were imported before, as {on(runs[1])} {SAME}",
    ]
    assert error.total == 2


@pytest.mark.django_db
def test_a_named_run_that_adds_samples_to_an_imported_run_is_refused_and_a_new_run_imports(batch: Batch) -> None:
    project = batch.project
    old = [{"sample": sample, "judge": "gpt", "score": 4, "run": "r1"} for sample in ("0", "1")]
    first = import_judgements(project, [("old.jsonl", jsonl(*old))]).runs[0].run

    grown = [*old, {"sample": "2", "judge": "gpt", "score": 2, "run": "r1"}]
    error = refused(project, "grown.jsonl", jsonl(*grown))
    assert error.messages == [
        f"grown.jsonl: lines 1-2: judge 'gpt' (run 'r1'): 2 of its 3 judgements were imported before, as "
        f"{on(first)} {SAME}; the other 1 is new. A run imports whole and once: remove the repeated lines to import "
        "the new one as a run of its own"
    ]
    # Another run of the same judge, even over the same samples, is new.
    again = [{**line, "run": "r2", "score": 5} for line in grown]
    assert import_judgements(project, [("r2.jsonl", jsonl(*again))]).judgements == 3


@pytest.mark.django_db
def test_bad_lines_are_reported_before_repeats_and_the_same_file_imports_into_another_project(batch: Batch) -> None:
    project = batch.project
    line = {"sample": "0", "judge": "j", "score": 3}
    import_judgements(project, [("a.jsonl", jsonl(line))])
    with pytest.raises(JudgementImportFailed) as caught:
        import_judgements(project, [("a.jsonl", jsonl(line, {"sample": "0", "judge": "j", "score": 9}))])
    assert not isinstance(caught.value, JudgementsAlreadyImported)
    assert caught.value.messages == ["a.jsonl: line 2: field 'score' must be an integer from 1 to 5, got 9"]

    other = copy_of(project, "other")
    assert import_judgements(other, [("a.jsonl", jsonl(line))]).judgements == 1


@pytest.mark.django_db
def test_the_schema_documents_the_409(client: Any, admin_user: Any) -> None:
    client.force_login(admin_user)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    answers = schema["paths"]["/api/projects/{slug}/judgements/import/"]["post"]["responses"]
    assert "409" in answers and "imported before" in answers["409"]["description"]


@pytest.mark.django_db
def test_one_line_imported_before_is_named_in_the_singular(batch: Batch) -> None:
    line = {"sample": "1", "judge": "j", "p": 0.25}
    run = import_judgements(batch.project, [("a.jsonl", jsonl(line))]).runs[0].run
    error = refused(batch.project, "a.jsonl", jsonl(line))
    assert error.messages == [f"a.jsonl: line 1: judge 'j': this judgement was imported before, as {on(run)} {SAME}"]

"""Two imports of the same samples into one project at the same moment: the second is refused as a repeat.

The repeat check (annotate.services.ingest.repeats) runs before the import's transaction, so both imports used to
pass it and both be written, every sample twice. Now an import takes its turn on the project inside its transaction
and checks again against the samples added since its first check. The race needs PostgreSQL (SQLite runs one
write transaction at a time); the first test plays the other import's commit between the check and the write, so
it runs on SQLite too:

    FAITHLAB_DATA_DIR=$(mktemp -d) scripts/with-postgres.sh \\
        .venv/bin/python -m pytest tests/annotate/test_import_repeats_race.py -q -p no:cacheprovider
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Batch, Project, Sample
from annotate.services import ingest
from annotate.services.ingest import prepare
from tests.conftest import needs_postgres
from tests.races import race, slowed

SAMPLES = [{"passage_id": "p1", "source": "One. Two.", "summary": "One.", "generator": "g"},
           {"passage_id": "p1", "source": "One. Two.", "summary": "Two.", "generator": "g"}]


def samples_file(passage_id: str = "p1") -> bytes:
    return "\n".join(json.dumps({**sample, "passage_id": passage_id}) for sample in SAMPLES).encode()


def repeat_message(file: str, line: int, holder: str, sample_id: str) -> str:
    return (f"{file}: line {line} (sample_id '{line}'): a repeat: batch '{holder}' holds it already (its sample "
            f"'{sample_id}') (the same source, summary and generator 'g'); a second copy would count twice in rates "
            "and agreement")


def another_import_between_check_and_write(monkeypatch: pytest.MonkeyPatch, project: Project) -> None:
    """The next import, once checked and prepared, lets another import of the same samples (``first.jsonl``) write
    and commit before its own transaction opens."""
    prepare_import = prepare.prepare_import
    turns: list[str] = []

    def prepared_then_another_import(*args: Any, **kwargs: Any) -> prepare.PreparedImport:
        prepared = prepare_import(*args, **kwargs)
        if not turns:
            turns.append("first.jsonl")
            ingest.import_files(project, [("first.jsonl", samples_file())])
        return prepared

    monkeypatch.setattr(ingest.write, "prepare_import", prepared_then_another_import)


@pytest.mark.django_db
def test_samples_another_import_added_after_the_check_refuse_the_import(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    another_import_between_check_and_write(monkeypatch, project)
    # The same samples under another passage id: only the repeat check can tell (a passage id taken meanwhile is
    # refused by its unique constraint already).
    with pytest.raises(ingest.ImportProblems) as refused:
        ingest.import_files(project, [("second.jsonl", samples_file("p2"))])
    assert refused.value.repeats == 2
    assert refused.value.messages == [repeat_message("second.jsonl", 1, "first-1", "1"),
                                      repeat_message("second.jsonl", 2, "first-1", "2")]
    assert list(Batch.objects.filter(project=project).values_list("name", flat=True)) == ["first-1"]
    assert Sample.objects.filter(project=project).count() == 2


@pytest.mark.django_db
def test_allow_repeats_still_imports_a_copy_added_after_the_check(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    another_import_between_check_and_write(monkeypatch, project)
    # Under another passage id: a passage id taken meanwhile refuses an import on its own.
    ingest.import_files(project, [("second.jsonl", samples_file("p2"))], allow_repeats=True)
    assert Sample.objects.filter(project=project).count() == 4


def import_as(name: str, project_pk: int) -> str:
    """The same samples, under a passage id of the importer's own (a shared one would collide on its own)."""
    return ingest.import_files(
        Project.objects.get(pk=project_pk), [(f"{name}.jsonl", samples_file(f"p-{name}"))]
    ).describe()


@pytest.mark.django_db(transaction=True)
@needs_postgres
def test_of_two_imports_of_the_same_samples_at_once_the_second_is_refused_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = Project.objects.create(name="Race", slug="race")
    monkeypatch.setattr("annotate.services.embedding.queue_embedding", lambda *args, **kwargs: None)
    # Hold each import between its check (before the transaction) and its writes (inside): without the turn on the
    # project, both checks pass before either import commits.
    slowed(monkeypatch, prepare.PreparedImport, "write", 0.5)
    outcome = race([lambda who=who: import_as(who, project.pk) for who in ("ann", "bob")], ingest.ImportProblems)

    assert len(outcome.done) == 1 and len(outcome.refused) == 1, outcome
    loser = "ann" if outcome.refused[0].startswith("2 errors:\nann.jsonl") else "bob"
    winner = "bob" if loser == "ann" else "ann"
    assert outcome.refused == ["2 errors:\n" + "\n".join(
        repeat_message(f"{loser}.jsonl", line, f"{winner}-1", str(line)) for line in (1, 2)
    )]
    assert list(Batch.objects.filter(project=project).values_list("name", flat=True)) == [f"{winner}-1"]
    assert Sample.objects.filter(project=project).count() == 2

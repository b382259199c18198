"""Importing rewrites when an external id repeats across batches: the optional "batch" field, and errors that say how."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Batch, Project, Sample
from annotate.services.agreement_admin import create_batches_from_selection
from judging.models import SyntheticItem, SyntheticRewrite, SyntheticSet
from judging.services.synthetic import SyntheticSetError, import_rewrites, output_sentences
from tests.judging.synthetic_scene import FIVE, add_outputs, rewrite_of

SUMMARIES = dict(FIVE)


def rewrites(external_id: str, kind: str = "intrinsic", *, count: int = 5, **extra: Any) -> list[dict[str, Any]]:
    """One line per sentence of a five-sentence output (the first `count`), each with the `extra` fields."""
    summary = SUMMARIES[external_id]
    sentences = [summary[start:end] for start, end in output_sentences(Sample(summary=summary))]
    return [{"sample": external_id, "sentence": index, "type": kind, "rewritten": rewrite_of(kind, sentence), **extra}
            for index, sentence in enumerate(sentences[:count])]


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return "\n".join(json.dumps(record, ensure_ascii=False) for record in records).encode()


@pytest.fixture
def copied(project: Project) -> list[Sample]:
    """The scene's outputs in batch 'synthetic-batch', then copied (same external ids) into batch 'again-1'."""
    samples = add_outputs(project, short=False)
    create_batches_from_selection(project, [samples[0].passage_id], "again")
    assert Sample.objects.filter(project=project, external_id="g1").count() == 2
    return samples


def refused(project: Project, records: list[dict[str, Any]]) -> list[str]:
    before = (SyntheticSet.objects.count(), SyntheticRewrite.objects.count(), SyntheticItem.objects.count())
    with pytest.raises(SyntheticSetError) as error:
        import_rewrites(project, "s", jsonl(records), "rewrites.jsonl")
    assert (SyntheticSet.objects.count(), SyntheticRewrite.objects.count(), SyntheticItem.objects.count()) == before
    return error.value.problems


def test_an_id_in_two_batches_is_refused_with_the_batches_to_name(project, copied):
    problems = refused(project, rewrites("g1"))
    assert problems[0] == ("rewrites.jsonl, line 1, field 'sample': external id 'g1' names 2 samples in this "
                           "project; add \"batch\": one of 'synthetic-batch', 'again-1'")
    assert len(problems) == 5


def test_naming_the_batch_imports_that_batchs_sample_only(project, copied):
    made = import_rewrites(project, "s", jsonl(rewrites("g1", batch="again-1")), "rewrites.jsonl", seed=3)
    copy = Sample.objects.get(project=project, external_id="g1", batch__name="again-1")
    items = SyntheticItem.objects.filter(synthetic_set=made)
    assert set(items.values_list("sample_id", flat=True)) == {copy.pk}
    assert items.filter(type="intrinsic").count() == 5
    assert set(SyntheticRewrite.objects.filter(synthetic_set=made).values_list("sample_id", flat=True)) == {copy.pk}
    assert made.error == ""


def test_a_batch_given_for_a_unique_id_must_hold_it(project, copied):
    Sample.objects.filter(project=project, external_id="g2", batch__name="again-1").delete()
    assert import_rewrites(project, "ok", jsonl(rewrites("g2", batch="synthetic-batch")), "r.jsonl").status == "done"
    problems = refused(project, rewrites("g2", count=1, batch="again-1"))
    assert problems == ["rewrites.jsonl, line 1, field 'batch': no sample with external id 'g2' in batch 'again-1'; "
                        "it is in batch 'synthetic-batch'"]


def test_an_unknown_batch_names_the_batches_that_hold_the_id(project, copied):
    problems = refused(project, rewrites("g1", count=1, batch="nope"))
    assert problems == ["rewrites.jsonl, line 1, field 'batch': no sample with external id 'g1' in batch 'nope'; "
                        "it is in batches 'synthetic-batch', 'again-1'"]


@pytest.mark.parametrize("bad", [True, "", ["again-1"], {"name": "again-1"}])
def test_a_batch_that_is_not_a_name_is_refused(project, copied, bad):
    problems = refused(project, rewrites("g1", count=1, batch=bad))
    assert problems == [f"rewrites.jsonl, line 1, field 'batch': must be a batch's name (text or number), got {bad!r}"]


def test_a_batch_named_by_a_number_matches_its_name(project, copied):
    Batch.objects.filter(project=project, name="again-1").update(name="7")
    made = import_rewrites(project, "s", jsonl(rewrites("g1", batch=7)), "rewrites.jsonl")
    assert set(made.items.values_list("sample__batch__name", flat=True)) == {"7"}


def test_an_id_repeated_inside_one_batch_says_the_batch_cannot_help(project, copied):
    Sample.objects.filter(project=project, external_id="g2", batch__name="synthetic-batch").update(external_id="g1")
    problems = refused(project, rewrites("g1", count=1, batch="synthetic-batch"))
    assert problems == ["rewrites.jsonl, line 1, field 'sample': external id 'g1' names 2 samples in batch "
                        "'synthetic-batch'; the import cannot tell them apart (give them distinct external ids)"]


def test_both_copies_in_one_set_are_separate_outputs(project, copied):
    records = rewrites("g1", batch="synthetic-batch") + rewrites("g1", count=4, batch="again-1")
    made = import_rewrites(project, "both", jsonl(records), "rewrites.jsonl")
    assert made.items.filter(type="gold").count() == 2
    assert made.items.filter(type="intrinsic").count() == 5  # the copy lacks a sentence: no items for it
    assert made.error == ("Not built, because the file does not rewrite every sentence: intrinsic of g1 (batch "
                          "again-1) lacks sentence(s) 4.")


def test_a_sentence_given_twice_for_the_named_batch_names_it(project, copied):
    line = rewrites("g1", count=1, batch="again-1")
    problems = refused(project, line + line)
    assert problems == ["rewrites.jsonl, line 2, field 'sentence': sentence 0 of 'g1' in batch 'again-1' "
                        "(intrinsic) was already given on line 1"]


def test_the_command_says_how_to_resolve_and_imports_with_the_batch(project, copied, tmp_path: Path):
    path = tmp_path / "rewrites.jsonl"
    path.write_bytes(jsonl(rewrites("g1")))
    with pytest.raises(CommandError) as error:
        call_command("synthetic_set", "--project", project.slug, "--name", "S2", "--import", str(path))
    assert "add \"batch\": one of 'synthetic-batch', 'again-1'" in str(error.value)
    assert not SyntheticSet.objects.exists()
    path.write_bytes(jsonl(rewrites("g1", batch="synthetic-batch")))
    call_command("synthetic_set", "--project", project.slug, "--name", "S2", "--import", str(path))
    made = SyntheticSet.objects.get(project=project, name="S2")
    assert set(made.items.values_list("sample__batch__name", flat=True)) == {"synthetic-batch"}

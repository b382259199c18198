"""The perturbation pipeline (MASK -> REPLACE -> RANK) with tiny random BERT and GPT-2 models, and its job."""

from __future__ import annotations

import io
import math
import random
from pathlib import Path
from typing import Any

import pytest
import torch
from django.core.management import CommandError, call_command

from annotate.models import Job, PairConfig, PairItem, PairOriginal, PerturbedText, Project
from annotate.perturbation.fill import (
    CONTINUATION,
    WORD_START,
    choose_pieces,
    fill_candidates,
    masked_logits,
    piece_distribution,
)
from annotate.perturbation.models import (
    CAUSAL_HINT,
    MASKED_HINT,
    PerturbationModelError,
    PerturbationModels,
    load_masked_lm,
    load_models,
    load_spacy,
)
from annotate.perturbation.pipeline import PerturbationParams, mask_text, perturb_text
from annotate.perturbation.units import choose_masked, load_pipeline, word_units
from annotate.services.pairs import perturb
from annotate.services.pairs.config import get_config, missing_model_settings
from tests.pairs.factories_perturbation import TEXTS, build_tiny_models

TEXT = TEXTS[0]
KEPT_UNTIL = TEXT.index("Mayor")  # the first two sentences end here
SHORT = "Only one sentence here. And a second one."  # nothing after the two kept sentences


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_tiny_models(tmp_path_factory.mktemp("perturbation-models"))


@pytest.fixture(scope="module")
def models(model_dirs: tuple[Path, Path]) -> PerturbationModels:
    return load_models(str(model_dirs[0]), str(model_dirs[1]))


def everything(**changes: Any) -> PerturbationParams:
    return PerturbationParams(**{"mask_ratio": 1.0, **changes})


# --- MASK: units -------------------------------------------------------------------------------------------------


def test_units_are_words_and_whole_entities_and_only_content_after_the_kept_sentences_is_maskable() -> None:
    units = word_units(TEXT, load_pipeline(""), 2)
    assert [unit.text for unit in units if unit.maskable] == [
        "Mayor Ines Varga", "said", "3 March 2024", "traffic", "stay", "slow", "summer", "council", "paid", "140",
        "workers", "bridge", "opened", "1911",
    ]
    entities = {unit.text: unit.entity for unit in units if unit.entity}
    assert entities == {
        "Harbour Bridge": "NAME", "Lintown": "NAME", "Tuesday": "DATE", "eight": "CARDINAL",
        "Mayor Ines Varga": "NAME", "3 March 2024": "DATE", "140": "CARDINAL", "1911": "DATE",
    }
    assert not any(unit.maskable for unit in units if unit.start < KEPT_UNTIL)
    for unit in units:
        assert TEXT[unit.start : unit.end] == unit.text
        if unit.text.lower() in {"the", "on", "that", "would", "until", "and", "in", ".", ","}:
            assert not unit.maskable, unit


def test_no_context_sentences_makes_the_first_sentence_maskable_too() -> None:
    units = word_units(TEXT, load_pipeline(""), 0)
    assert [unit.text for unit in units if unit.maskable][:3] == ["Harbour Bridge", "Lintown", "reopened"]


def test_mask_chooses_the_ratio_of_units_at_random_and_a_seed_repeats_the_choice() -> None:
    units = [unit for unit in word_units(TEXT, load_pipeline(""), 2) if unit.maskable]
    chosen = choose_masked(units, 0.6, random.Random(4))
    assert len(chosen) == round(0.6 * 14) == 8
    assert chosen == sorted(chosen, key=lambda unit: unit.start) and set(chosen) <= set(units)
    assert choose_masked(units, 0.6, random.Random(4)) == chosen
    assert {tuple(choose_masked(units, 0.6, random.Random(seed))) for seed in range(10)} != {tuple(chosen)}
    assert len(choose_masked(units, 0.01, random.Random(1))) == 1
    assert choose_masked(units, 1.0, random.Random(1)) == units
    assert choose_masked([], 0.6, random.Random(1)) == []


# --- REPLACE: the distribution, left-to-right fill, batching -------------------------------------------------------


def test_the_original_piece_and_pieces_not_allowed_are_removed_from_the_distribution() -> None:
    logits = torch.tensor([[9.0, 5.0, 4.0, 3.0, 2.0, 1.0]])
    allowed = torch.tensor([False, True, True, True, True, True])  # piece 0 is, say, [CLS]
    ids, probabilities = piece_distribution(logits, 1, allowed, top_k=3, temperature=1.0)
    assert ids.tolist() == [[2, 3, 4]]  # the original (1) was the best allowed piece
    by_hand = [math.exp(4) / (math.exp(4) + math.exp(3) + math.exp(2)), math.exp(3) / (math.exp(4) + math.exp(3)
               + math.exp(2)), math.exp(2) / (math.exp(4) + math.exp(3) + math.exp(2))]
    assert probabilities[0].tolist() == pytest.approx(by_hand)
    _, hotter = piece_distribution(logits, 1, allowed, top_k=3, temperature=2.0)
    assert hotter[0].tolist() == pytest.approx([math.exp(2) / (math.exp(2) + math.exp(1.5) + math.exp(1)),
                                                math.exp(1.5) / (math.exp(2) + math.exp(1.5) + math.exp(1)),
                                                math.exp(1) / (math.exp(2) + math.exp(1.5) + math.exp(1))])
    uniforms = torch.linspace(0, 0.999999, 200, dtype=torch.float64)
    picks = choose_pieces(logits.expand(200, 6), 1, allowed, 3, 1.0, uniforms)
    assert set(picks.tolist()) == {2, 3, 4}
    assert picks[0] == 2 and picks[-1] == 4  # inverse CDF: low uniforms take the likeliest piece
    with pytest.raises(ValueError, match="no word piece may replace"):
        piece_distribution(logits, 1, torch.tensor([False, True, False, False, False, False]), 3, 1.0)


def test_the_vocabulary_allows_words_by_kind_and_never_special_tokens(models: PerturbationModels) -> None:
    vocabulary = models.masked.vocabulary
    tokenizer = models.masked.tokenizer
    for token in ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", ".", ","):
        piece = tokenizer.convert_tokens_to_ids(token)
        assert not vocabulary.allowed[:, piece].any(), token
    assert vocabulary.allowed[WORD_START, tokenizer.convert_tokens_to_ids("bridge")]
    assert vocabulary.allowed[CONTINUATION, tokenizer.convert_tokens_to_ids("##ga")]
    assert not vocabulary.allowed[WORD_START, tokenizer.convert_tokens_to_ids("##ga")]
    assert vocabulary.surfaces[tokenizer.convert_tokens_to_ids("##ga")] == "ga"
    assert vocabulary.lowercases


def test_head_at_one_position_gives_the_full_models_logits(models: PerturbationModels, monkeypatch: Any) -> None:
    ids = models.masked.tokenizer(TEXT)["input_ids"]
    rows = torch.tensor([ids, [*ids[:7], models.masked.vocabulary.mask_id, *ids[8:]], ids])
    with torch.inference_mode():
        full = models.masked.model(input_ids=rows).logits[:, 7]
        assert torch.allclose(masked_logits(models.masked.model, rows, 7), full, atol=1e-5)
        monkeypatch.setattr("annotate.perturbation.fill.ROW_TOKENS", len(ids))  # one row a pass
        assert torch.allclose(masked_logits(models.masked.model, rows, 7), full, atol=1e-5)


def test_rows_go_to_the_models_device_and_the_logits_come_back_to_the_cpu(models: PerturbationModels) -> None:
    # A worker with a GPU keeps the models there (verified on a GPU by bench/bench_perturb.py, which compares the
    # GPU's perturbation with the CPU's). Here a stand-in on the "meta" device records where its input was.
    ids = models.masked.tokenizer(TEXT)["input_ids"]
    rows = torch.tensor([ids, ids])
    with torch.inference_mode():
        full = models.masked.model(input_ids=rows).logits

    class Elsewhere:
        device = torch.device("meta")
        seen: list[torch.device] = []

        def __call__(self, input_ids: torch.Tensor) -> Any:
            self.seen.append(input_ids.device)
            return type("Output", (), {"logits": full})()

    model = Elsewhere()
    logits = masked_logits(model, rows, 7)
    assert model.seen == [torch.device("meta")]
    assert logits.device == torch.device("cpu")
    assert torch.equal(logits, full[:, 7])


def test_entity_pieces_are_filled_left_to_right_each_seeing_the_pieces_filled_before_it(
    models: PerturbationModels,
) -> None:
    plan = mask_text(TEXT, models, everything(), seed=3)
    request = plan.request
    assert request is not None
    mask_id = models.masked.vocabulary.mask_id
    seen: list[torch.Tensor] = []
    base = models.masked.model.bert
    hook = base.register_forward_pre_hook(lambda module, args, kwargs: seen.append(kwargs["input_ids"].clone()),
                                          with_kwargs=True)
    try:
        for batched in (True, False):
            seen.clear()
            filled = fill_candidates(models.masked.model, models.masked.vocabulary, request, candidates=5, top_k=4,
                                     temperature=1.0, generator=torch.Generator().manual_seed(3), batched=batched)
            steps = len(request.positions)
            assert filled.shape == (5, steps)
            assert len(seen) == (steps if batched else 5 * steps)
            calls = seen if batched else [seen[c * steps + t] for t in range(steps) for c in range(5)]
            for call, rows in enumerate(calls):
                step = call if batched else call // 5
                for row in rows:
                    # Pieces left of this step are filled, this one and those right of it are still masked,
                    # and what is filled is what the candidate ends up with.
                    assert (row[request.positions[step:]] == mask_id).all()
                    left = row[request.positions[:step]]
                    assert (left != mask_id).all()
                    assert any(torch.equal(left, candidate[:step]) for candidate in filled)
    finally:
        hook.remove()


def test_fill_never_takes_the_original_piece_and_keeps_each_units_pieces_and_their_kinds(
    models: PerturbationModels,
) -> None:
    plan = mask_text(TEXT, models, everything(), seed=1)
    request = plan.request
    assert request is not None
    vocabulary = models.masked.vocabulary
    varga = next(masked for masked in plan.masked if masked.unit.text == "Mayor Ines Varga")
    varga_steps = [step for _, step in varga.pieces]
    assert [request.kinds[step] for step in varga_steps] == [WORD_START, WORD_START, WORD_START, CONTINUATION]
    filled = fill_candidates(models.masked.model, vocabulary, request, candidates=20, top_k=10, temperature=1.0,
                             generator=torch.Generator().manual_seed(1))
    assert filled.shape == (20, len(request.positions))
    for row in filled.tolist():
        for step, piece in enumerate(row):
            assert piece != request.original_ids[step]
            assert vocabulary.kind(piece) == request.kinds[step]
            assert vocabulary.allowed[request.kinds[step], piece]


def test_batched_fill_and_ranking_give_what_one_candidate_at_a_time_gives(models: PerturbationModels) -> None:
    batched = perturb_text(TEXT, models, PerturbationParams(), seed=11)
    one_by_one = perturb_text(TEXT, models, PerturbationParams(), seed=11, batched=False)
    assert batched.candidates == one_by_one.candidates and len(batched.candidates) == 20
    assert batched.perplexities == pytest.approx(one_by_one.perplexities, rel=1e-5)


# --- RANK, and the result ------------------------------------------------------------------------------------------


def independent_perplexity(models: PerturbationModels, text: str) -> float:
    """exp(mean NLL) of <|endoftext|> + the text's tokens, one unpadded pass, log-softmax by hand."""
    tokenizer, model = models.causal.tokenizer, models.causal.model
    ids = [tokenizer.bos_token_id, *tokenizer(text, add_special_tokens=False)["input_ids"]]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].double()
    log_probs = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
    nll = [-float(log_probs[position, ids[position + 1]]) for position in range(len(ids) - 1)]
    return math.exp(sum(nll) / len(nll))


def test_the_candidate_with_the_lowest_perplexity_is_kept(models: PerturbationModels) -> None:
    result = perturb_text(TEXTS[1], models, PerturbationParams(candidates=12), seed=5)
    expected = [independent_perplexity(models, candidate) for candidate in result.candidates]
    assert result.perplexities == pytest.approx(expected, rel=1e-5)
    assert len(set(result.candidates)) > 1
    best = min(range(len(expected)), key=expected.__getitem__)
    assert result.chosen == best and result.text == result.candidates[best]
    assert result.perplexity == pytest.approx(min(expected), rel=1e-5)


def test_spans_hold_their_words_in_both_texts_and_nothing_else_changes(models: PerturbationModels) -> None:
    for seed in range(4):
        for text in TEXTS:
            result = perturb_text(text, models, PerturbationParams(mask_ratio=0.6), seed=seed)
            assert result.spans
            rebuilt, cursor = [], 0
            for span in result.spans:
                assert text[span.original_start : span.original_end] == span.original_words
                assert result.text[span.perturbed_start : span.perturbed_end] == span.perturbed_words
                assert span.perturbed_words.lower() != span.original_words.lower()
                # As many words as the unit had: pieces keep their kind (word start or continuation).
                assert len(span.perturbed_words.split()) == len(span.original_words.split())
                rebuilt += [text[cursor : span.original_start], span.perturbed_words]
                cursor = span.original_end
            assert "".join([*rebuilt, text[cursor:]]) == result.text


def test_stop_words_and_the_kept_sentences_stay_and_entities_are_replaced_whole(models: PerturbationModels) -> None:
    result = perturb_text(TEXT, models, everything(), seed=2)
    assert result.text[:KEPT_UNTIL] == TEXT[:KEPT_UNTIL]
    replaced = [span.original_words for span in result.spans]
    assert replaced == [
        "Mayor Ines Varga", "said", "3 March 2024", "traffic", "stay", "slow", "summer", "council", "paid", "140",
        "workers", "bridge", "opened", "1911",
    ]
    by_words = {span.original_words: span for span in result.spans}
    varga = by_words["Mayor Ines Varga"]
    assert (varga.original_start, varga.original_end, varga.entity) == (KEPT_UNTIL, KEPT_UNTIL + 16, "NAME")
    assert by_words["3 March 2024"].entity == "DATE"
    # A lower-casing model's replacement takes the original's capitals.
    assert all(word[:1].isupper() for word in varga.perturbed_words.split())
    # The stop words between the replaced units are all still there, in order.
    kept = [TEXT[a.original_end : b.original_start] for a, b in zip(result.spans, result.spans[1:], strict=False)]
    for gap in kept:
        assert gap in result.text


def test_a_seed_gives_the_same_perturbation_and_another_seed_another(models: PerturbationModels) -> None:
    first = perturb_text(TEXT, models, PerturbationParams(candidates=6), seed=42)
    again = perturb_text(TEXT, models, PerturbationParams(candidates=6), seed=42)
    assert (first.text, first.spans, first.perplexities) == (again.text, again.spans, again.perplexities)
    other = perturb_text(TEXT, models, PerturbationParams(candidates=6), seed=43)
    assert other.candidates != first.candidates


def test_a_text_with_nothing_after_the_kept_sentences_is_left_as_it_is(models: PerturbationModels) -> None:
    result = perturb_text(SHORT, models, PerturbationParams(), seed=1)
    assert (result.text, result.spans, result.chosen, result.perplexities) == (SHORT, [], None, [])


def test_bad_parameters_are_named() -> None:
    with pytest.raises(ValueError, match=r"mask_ratio: 0 must be above 0.*candidates: 0 must be 1 or more"):
        PerturbationParams(mask_ratio=0, candidates=0).check()


# --- Settings and loading -------------------------------------------------------------------------------------------


def test_loading_a_missing_model_says_which_setting_to_fill_in(tmp_path: Path) -> None:
    with pytest.raises(PerturbationModelError) as blank:
        load_masked_lm("")
    assert str(blank.value) == MASKED_HINT
    with pytest.raises(PerturbationModelError, match=r"is not a directory on this server\. Set PAIRS_MASKED_LM"):
        load_masked_lm(str(tmp_path / "nowhere"))
    with pytest.raises(PerturbationModelError, match=r"has no config.json.*PAIRS_MASKED_LM"):
        load_masked_lm(str(tmp_path))
    with pytest.raises(PerturbationModelError, match="PAIRS_SPACY_PIPELINE: 'no_such_pipeline' is neither"):
        load_spacy("no_such_pipeline")


@pytest.mark.django_db
def test_missing_model_settings_name_exactly_what_to_fill_in(
    pairs_project: Project, model_dirs: tuple[Path, Path], tmp_path: Path, settings: Any
) -> None:
    settings.PAIRS_MASKED_LM = settings.PAIRS_CAUSAL_LM = settings.PAIRS_SPACY_PIPELINE = ""
    assert missing_model_settings(pairs_project) == [MASKED_HINT, CAUSAL_HINT]
    assert MASKED_HINT == ("Set PAIRS_MASKED_LM (environment) or the project's masked LM path to a local "
                           "BERT-style model directory.")

    settings.PAIRS_MASKED_LM = str(tmp_path / "gone")
    settings.PAIRS_CAUSAL_LM = str(model_dirs[1])
    assert missing_model_settings(pairs_project) == [
        f"The masked LM path '{tmp_path / 'gone'}' (PAIRS_MASKED_LM) is not a directory on this server. {MASKED_HINT}"
    ]
    config = get_config(pairs_project)
    config.masked_lm = str(tmp_path)  # the project's own path wins over the setting
    config.spacy_pipeline = "no_such_pipeline"
    config.save()
    problems = missing_model_settings(pairs_project)
    assert problems[0] == (f"The masked LM path '{tmp_path}' (the project's setting) has no config.json, so it is no "
                           f"model directory. {MASKED_HINT}")
    assert problems[1].startswith("The spaCy pipeline 'no_such_pipeline' (the project's setting) is neither")
    assert "PAIRS_SPACY_PIPELINE" in problems[1] and len(problems) == 2

    config.masked_lm, config.spacy_pipeline = str(model_dirs[0]), ""
    config.save()
    assert missing_model_settings(pairs_project) == []


@pytest.mark.django_db
def test_get_config_creates_the_defaults_row() -> None:
    project = Project.objects.create(name="No config", slug="no-config", kind=Project.Kind.PAIRS)
    config = get_config(project)
    assert (config.candidates, config.top_k, config.mask_ratio, config.context_sentences) == (20, 10, 0.6, 2)
    assert get_config(project).pk == config.pk and PairConfig.objects.filter(project=project).count() == 1


# --- The job -------------------------------------------------------------------------------------------------------


def use_tiny_models(project: Project, model_dirs: tuple[Path, Path], settings: Any) -> PairConfig:
    settings.PAIRS_MASKED_LM = settings.PAIRS_CAUSAL_LM = settings.PAIRS_SPACY_PIPELINE = ""
    config = get_config(project)
    config.masked_lm, config.causal_lm, config.candidates = str(model_dirs[0]), str(model_dirs[1]), 8
    config.save()
    return config


def add_originals(project: Project) -> None:
    for external_id, text in (("harbour", TEXTS[0]), ("storm", TEXTS[1]), ("short", SHORT)):
        PairOriginal.objects.create(project=project, external_id=external_id, text=text)


@pytest.mark.django_db
def test_perturbation_refuses_to_start_without_models_and_names_the_settings(
    pairs_project: Project, admin_user: Any, settings: Any
) -> None:
    settings.PAIRS_MASKED_LM = settings.PAIRS_CAUSAL_LM = ""
    add_originals(pairs_project)
    with pytest.raises(perturb.PerturbationError) as refused:
        perturb.start_perturbation(pairs_project, admin_user)
    assert str(refused.value) == f"{MASKED_HINT} {CAUSAL_HINT}"
    assert not Job.objects.filter(project=pairs_project).exists()


@pytest.mark.django_db
def test_the_job_makes_one_perturbed_text_per_original_with_pool_items_and_runs_again_without_duplicates(
    pairs_project: Project, admin_user: Any, model_dirs: tuple[Path, Path], settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    use_tiny_models(pairs_project, model_dirs, settings)
    add_originals(pairs_project)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        job = perturb.start_perturbation(pairs_project, admin_user, seed=9)
    assert len(queued) == 1 and job.kind == Job.Kind.PERTURB and job.total == 3 and job.status == Job.Status.QUEUED
    with pytest.raises(perturb.PerturbationError, match=f"already queued \\(job {job.pk}: 0 of 3"):
        perturb.start_perturbation(pairs_project, admin_user)

    # The worker dies after the first original: the task runs again and carries on.
    def die(current: Job) -> None:
        raise RuntimeError("worker lost")

    with pytest.raises(RuntimeError):
        perturb.run_perturbation_job(job.pk, progress=die)
    job.refresh_from_db()
    assert (job.status, job.done) == (Job.Status.RUNNING, 1)
    # A slice with no time left does one original, then queues the rest as a new task.
    with django_capture_on_commit_callbacks(execute=False) as requeued:
        job = perturb.run_perturbation_job(job.pk, max_seconds=0)
    assert (job.status, job.done, len(requeued)) == (Job.Status.RUNNING, 2, 1)
    job = perturb.run_perturbation_job(job.pk)
    assert (job.status, job.done, job.total) == (Job.Status.DONE, 3, 3)
    assert (job.options["perturbed"], job.options["skipped"], job.options["skipped_count"]) == (2, ["short"], 1)

    texts = list(PerturbedText.objects.filter(project=pairs_project).select_related("original"))
    assert sorted(text.original.external_id for text in texts) == ["harbour", "storm"]
    assert not PairOriginal.objects.filter(project=pairs_project, perturbed_at__isnull=True).exists()
    for perturbed in texts:
        parameters = perturbed.parameters
        assert parameters["masked_lm"] == str(model_dirs[0]) and parameters["causal_lm"] == str(model_dirs[1])
        assert parameters["spacy_pipeline"] == "blank:en+rules"
        assert {key: parameters[key] for key in ("context_sentences", "mask_ratio", "top_k", "temperature",
                                                 "candidates")} == {"context_sentences": 2, "mask_ratio": 0.6,
                                                                    "top_k": 10, "temperature": 1.0, "candidates": 8}
        assert perturbed.seed == parameters["seed"] == perturb.text_seed(9, perturbed.original.external_id)
        assert len(parameters["candidate_perplexities"]) == 8
        assert perturbed.perplexity == pytest.approx(min(parameters["candidate_perplexities"]), rel=1e-5)
        assert perturbed.source == PerturbedText.Source.PIPELINE
        # The same seed and models give the same text when perturbed again in the pipeline directly.
        again = perturb_text(perturbed.original.text, load_models(str(model_dirs[0]), str(model_dirs[1])),
                             PerturbationParams(candidates=8), perturbed.seed)
        assert again.text == perturbed.text
        items = list(perturbed.items.order_by("position"))
        assert len(items) == len(again.spans) > 0
        for item in items:
            assert item.state == PairItem.State.POOL and item.round is None
            assert perturbed.original.text[item.original_start : item.original_end] == item.original_words
            assert perturbed.text[item.perturbed_start : item.perturbed_end] == item.perturbed_words
    item_count = PairItem.objects.filter(project=pairs_project).count()
    assert job.options["items"] == item_count

    # Running the finished job again, or starting another, adds nothing.
    perturb.run_perturbation_job(job.pk)
    with pytest.raises(perturb.NothingToPerturb):
        perturb.start_perturbation(pairs_project, admin_user)
    assert PerturbedText.objects.filter(project=pairs_project).count() == 2
    assert PairItem.objects.filter(project=pairs_project).count() == item_count


@pytest.mark.django_db
def test_a_job_whose_models_went_missing_fails_with_the_setting_to_fill_in(
    pairs_project: Project, model_dirs: tuple[Path, Path], settings: Any
) -> None:
    config = use_tiny_models(pairs_project, model_dirs, settings)
    add_originals(pairs_project)
    job = perturb.start_perturbation(pairs_project, None, queue=False)
    config.causal_lm = ""
    config.save()
    job = perturb.run_perturbation_job(job.pk)
    assert (job.status, job.error) == (Job.Status.FAILED, CAUSAL_HINT)
    assert not PerturbedText.objects.exists()


@pytest.mark.django_db
def test_perturb_pairs_command_runs_the_job_in_the_foreground(
    pairs_project: Project, model_dirs: tuple[Path, Path], settings: Any
) -> None:
    settings.PAIRS_MASKED_LM = settings.PAIRS_CAUSAL_LM = ""
    add_originals(pairs_project)
    with pytest.raises(CommandError, match="perturbation not started: Set PAIRS_MASKED_LM"):
        call_command("perturb_pairs", "--project", "pairs")
    use_tiny_models(pairs_project, model_dirs, settings)
    out = io.StringIO()
    call_command("perturb_pairs", "--project", "pairs", "--seed", "3", stdout=out)
    printed = out.getvalue()
    assert "Perturbing 3 original text(s) of pairs" in printed and "seed 3" in printed
    assert "3 of 3 done" in printed
    items = PairItem.objects.filter(project=pairs_project).count()
    assert f"Done: 2 perturbed text(s), {items} item(s) in the pool; 1 original(s) had no word" in printed
    again = io.StringIO()
    call_command("perturb_pairs", "--project", "pairs", stdout=again)
    assert again.getvalue().startswith("Nothing to do: no original text of project 'pairs' is waiting")

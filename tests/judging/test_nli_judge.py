"""NLI judges with sliding windows, on a tiny random BERT saved to disk: judging/judges/nli.py and the loader."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertConfig

from judging.clients import ModelSettingError, load_nli_model
from judging.clients.nli import _consistent_index
from judging.judges.nli import score_pair_outcomes, score_pairs, score_sentences
from tests.judging.tiny_nli import reference_text, tiny_nli_fixture  # noqa: F401  (the tiny_nli_path fixture)

HYPOTHESIS = "the council paid the workers and the bridge reopened after eight weeks of repairs"


def windows_by_hand(reference_len: int, hypothesis_len: int) -> list[tuple[int, int]]:
    """DESIGN.md: segments of 512 - 3 - hypothesis - 32 tokens, each window the 32 tokens before its segment + it."""
    segment = 512 - 3 - hypothesis_len - 32  # [CLS] overlap + segment [SEP] hypothesis [SEP]
    ranges = []
    start = 0
    while start < reference_len:
        ranges.append((max(0, start - 32), min(start + segment, reference_len)))
        start += segment
    return ranges


def window_probabilities_by_hand(path: str, reference: str, hypothesis: str) -> list[float]:
    """P(class 1) of each window, one window at a time, straight from transformers (no app code)."""
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True).eval()
    reference_ids = tokenizer(reference, add_special_tokens=False, verbose=False)["input_ids"]
    hypothesis_ids = tokenizer(hypothesis, add_special_tokens=False)["input_ids"]
    probabilities = []
    for start, end in windows_by_hand(len(reference_ids), len(hypothesis_ids)):
        part = reference_ids[start:end]
        input_ids = [tokenizer.cls_token_id, *part, tokenizer.sep_token_id, *hypothesis_ids, tokenizer.sep_token_id]
        token_types = [0] * (len(part) + 2) + [1] * (len(hypothesis_ids) + 1)
        assert len(input_ids) <= 512
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([input_ids]), token_type_ids=torch.tensor([token_types])).logits
        probabilities.append(float(torch.softmax(logits, dim=-1)[0, 1]))
    return probabilities


def test_p_is_the_max_over_windows_computed_one_at_a_time(tiny_nli_path: str) -> None:
    reference = reference_text(1300, seed=3)
    by_hand = window_probabilities_by_hand(tiny_nli_path, reference, HYPOTHESIS)
    assert len(by_hand) == 3  # 1,300 tokens in segments of 512 - 3 - 14 - 32 = 463
    assert max(by_hand) - min(by_hand) > 1e-3  # the windows disagree, so taking the max matters

    model = load_nli_model(tiny_nli_path)
    [p] = score_pairs(model, [(reference, HYPOTHESIS)])
    assert p == pytest.approx(max(by_hand), abs=1e-5)
    [outcome] = score_pair_outcomes(model, [(reference, HYPOTHESIS)])
    assert outcome.windows == 3 and outcome.error == ""


def test_short_reference_is_scored_in_one_window(tiny_nli_path: str) -> None:
    reference = "the bridge reopened on tuesday after eight weeks of repairs"
    [by_hand] = window_probabilities_by_hand(tiny_nli_path, reference, HYPOTHESIS)
    [p] = score_pairs(load_nli_model(tiny_nli_path), [(reference, HYPOTHESIS)])
    assert p == pytest.approx(by_hand, abs=1e-5)


def test_batching_many_pairs_gives_the_same_p_as_one_pair_at_a_time(tiny_nli_path: str) -> None:
    model = load_nli_model(tiny_nli_path)
    pairs = [
        (reference_text(words, seed=words), reference_text(hypothesis_words, seed=words + 1))
        for words, hypothesis_words in [(40, 12), (600, 30), (1500, 5), (90, 90), (1000, 60), (3, 1), (700, 200)]
    ]
    alone = [score_pairs(model, [pair], batch_size=1)[0] for pair in pairs]
    together = score_pairs(model, pairs, batch_size=32)
    in_threes = score_pairs(model, pairs, batch_size=3)
    assert torch.allclose(torch.tensor(together), torch.tensor(alone), atol=1e-5)
    assert torch.allclose(torch.tensor(in_threes), torch.tensor(alone), atol=1e-5)
    assert all(0.0 <= p <= 1.0 for p in together)
    assert len(set(together)) == len(pairs)  # really one figure per pair, not one shared


def test_other_label_as_consistent_gives_the_complement(tiny_nli_path: str) -> None:
    reference = reference_text(800, seed=9)
    windows = window_probabilities_by_hand(tiny_nli_path, reference, HYPOTHESIS)
    model = load_nli_model(tiny_nli_path, consistent_label="Hallucinated")
    assert model.consistent_index == 0
    [p] = score_pairs(model, [(reference, HYPOTHESIS)])
    assert p == pytest.approx(max(1 - q for q in windows), abs=1e-5)


def test_hypothesis_too_long_for_any_window_is_an_error_not_a_number(tiny_nli_path: str) -> None:
    model = load_nli_model(tiny_nli_path)
    long_hypothesis = reference_text(510, seed=1)
    with pytest.raises(ValueError, match=r"pair 1: the hypothesis has 510 tokens.*512 tokens"):
        score_pairs(model, [("the bridge", "the council"), ("the bridge", long_hypothesis)])
    first, second = score_pair_outcomes(model, [("the bridge", "the council"), ("the bridge", long_hypothesis)])
    assert first.probability is not None and 0.0 <= first.probability <= 1.0
    assert second.probability is None and "510 tokens" in second.error


def test_sentences_are_scored_against_the_whole_reference(tiny_nli_path: str) -> None:
    model = load_nli_model(tiny_nli_path)
    reference = reference_text(900, seed=4)
    sentences = ["the bridge reopened", "engineers replaced the steel cables", reference_text(505, seed=2)]
    scores = score_sentences(model, reference, sentences)
    expected = score_pairs(model, [(reference, sentence) for sentence in sentences[:2]])
    assert scores[:2] == pytest.approx(expected, abs=1e-5)
    assert scores[2] is None  # too long for a window: no number


def test_missing_model_directory_names_the_setting(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-model")
    with pytest.raises(ModelSettingError, match=r"^Model directory \(on the server\) ") as caught:
        load_nli_model(missing)  # named as the judge's form labels it; .setting holds the field
    assert caught.value.setting == "nli_model_path"
    assert missing in str(caught.value)
    with pytest.raises(ModelSettingError, match="no config.json") as caught:
        load_nli_model(str(tmp_path))
    assert caught.value.setting == "nli_model_path"
    with pytest.raises(ModelSettingError, match="empty"):
        load_nli_model("")


def test_unknown_consistent_label_names_the_setting(tiny_nli_path: str) -> None:
    with pytest.raises(ModelSettingError, match="'entailed' is not a class.*0 hallucinated, 1 consistent") as caught:
        load_nli_model(tiny_nli_path, consistent_label="entailed")
    assert caught.value.setting == "nli_consistent_label"


def test_window_longer_than_the_model_takes_names_the_setting(tiny_nli_path: str) -> None:
    model = load_nli_model(tiny_nli_path)
    with pytest.raises(ModelSettingError, match="Max tokens 1024 is more than.*512") as caught:
        score_pairs(model, [("the bridge", "the council")], max_length=1024)
    assert caught.value.setting == "nli_max_length"


def test_model_is_loaded_once_per_path_and_label(tiny_nli_path: str) -> None:
    assert load_nli_model(tiny_nli_path) is load_nli_model(tiny_nli_path)
    assert load_nli_model(tiny_nli_path).template.specials == 3


def test_consistent_class_is_found_by_name_and_two_unnamed_classes_need_it_set() -> None:
    nli_three = BertConfig(num_labels=3, id2label={0: "contradiction", 1: "neutral", 2: "ENTAILMENT"})
    assert _consistent_index(nli_three, "", "x") == 2
    assert _consistent_index(nli_three, "neutral", "x") == 1
    # LABEL_0 / LABEL_1 say nothing: class 1 is not taken for consistent (a model trained the other way round would
    # score every output 1 - p); the setting names it.
    with pytest.raises(ModelSettingError, match="2 classes and none is named.*HHEM-style models: 1") as unnamed_two:
        _consistent_index(BertConfig(num_labels=2), "", "x")
    assert unnamed_two.value.setting == "nli_consistent_label"
    assert _consistent_index(BertConfig(num_labels=2), "1", "x") == 1
    assert _consistent_index(BertConfig(num_labels=1), "", "x") == 0  # one logit, read through a sigmoid
    unnamed = BertConfig(num_labels=3)
    with pytest.raises(ModelSettingError, match="3 classes and none is named") as caught:
        _consistent_index(unnamed, "", "x")
    assert caught.value.setting == "nli_consistent_label"

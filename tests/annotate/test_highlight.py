from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from annotate import embedder, highlight
from annotate.text import split_sentences
from tests.conftest import login

BRIDGE = (
    "The Harbour Bridge will close for eight weeks from 3 March while engineers replace 140 steel cables. "
    "The eastern footpath stays open for the first eleven weeks of the works. "
    "The council says the repairs will cost 12.4 million euros. "
    "Mayor Ines Varga said buses will run every ten minutes."
)


def ranked(selected_text: str, selection: str, target_text: str = BRIDGE, occurrence: int = 0) -> highlight.Ranking:
    """Rank target_text's sentences against the ``occurrence``-th ``selection`` in selected_text, with the real model."""
    start = -1
    for _ in range(occurrence + 1):
        start = selected_text.index(selection, start + 1)
    sentences = split_sentences(target_text)
    return highlight.rank(
        selected_text=selected_text,
        start=start,
        end=start + len(selection),
        selected_sentences=split_sentences(selected_text),
        target_text=target_text,
        target_sentences=sentences,
        target_vectors=embedder.embed([target_text[s:e] for s, e in sentences]),
        encode_tokens=embedder.token_vectors,
    )


def best(ranking: highlight.Ranking) -> int:
    return int(np.argmax(ranking.scores))


def test_selecting_eight_weeks_points_at_the_eight_weeks_sentence_not_the_eleven_weeks_one() -> None:
    ranking = ranked("The bridge closes for eight weeks. Repairs cost 12.4 million euros.", "eight weeks")
    assert len(ranking.scores) == 4
    assert best(ranking) == 0
    assert ranking.closest[0] == 0


def test_selecting_eleven_weeks_points_at_the_eleven_weeks_sentence() -> None:
    ranking = ranked("The footpath stays open for eleven weeks.", "eleven weeks")
    assert ranking.closest[0] == 1


def test_a_changed_figure_points_at_the_sentence_with_the_original_figure() -> None:
    source = (
        "The Harbour Bridge will close for eight weeks. "
        "Engineers will replace 140 steel cables. "
        "The repairs will cost 12.4 million euros."
    )
    summary = "Officials said the closure would last nine weeks."
    ranking = ranked(summary, "nine weeks", source)
    assert best(ranking) == 0 and ranking.closest[0] == 0
    found = highlight.evidence(
        selected_text=summary,
        start=summary.index("nine"),
        end=summary.index("nine") + len("nine weeks"),
        selected_sentences=split_sentences(summary),
        target_text=source,
        target_sentences=split_sentences(source),
        target_vectors=embedder.embed(["a", "b", "c"]),
        encode_tokens=embedder.token_vectors,
    )
    # nine weeks vs eight weeks: a different number of the same thing; the cables and euros are other things
    assert found["near_miss"].tolist() == [1.0, 0.0, 0.0]


def test_a_name_points_at_the_sentence_that_names_the_person() -> None:
    ranking = ranked("The bridge closes in March. Mayor Varga announced extra buses.", "Varga")
    assert ranking.closest[0] == 3


def test_a_short_selection_is_read_in_its_sentence() -> None:
    # "speed cap" appears nowhere in the source; its sentence (mayor, buses) says which passage it is about
    ranking = ranked("The mayor said buses keep running despite the speed cap.", "speed cap")
    assert best(ranking) == 3


def test_numbers_written_in_words_or_with_separators_match_digits() -> None:
    assert highlight.terms("eight weeks") == highlight.terms("8 weeks") == ["8", "week"]
    assert highlight.terms("spent £2,956,737 on 12.4 km") == ["spent", "2956737", "12.4", "km"]
    assert highlight.terms("the and of") == []


def test_a_selection_unrelated_to_the_other_text_points_at_nothing() -> None:
    ranking = ranked("The bridge closes. Penguins enjoy cold water in Antarctica.", "Penguins enjoy cold water")
    assert len(ranking.scores) == 4  # still scored, so the page can shade
    assert ranking.closest == []


def test_a_selection_of_noise_points_at_nothing() -> None:
    assert ranked("The bridge closes. asdf qwer zxcv.", "asdf qwer zxcv").closest == []


def test_a_selection_in_the_source_ranks_the_summary_sentences() -> None:
    summary = "Repairs will cost 12.4 million euros. The bridge shuts for eight weeks while cables are replaced."
    ranking = ranked(BRIDGE, "140 steel cables", summary)
    assert len(ranking.scores) == 2
    assert ranking.closest == [1]


def test_offsets_are_code_points_so_an_emoji_before_the_selection_does_not_shift_it() -> None:
    summary = "The bridge 🌉 reopens soon 🎉. Mayor Varga said buses run every ten minutes."
    start = summary.index("ten minutes")
    assert summary[start : start + len("ten minutes")] == "ten minutes"
    ranking = ranked(summary, "ten minutes")
    assert ranking.closest[0] == 3
    # and an emoji inside the other text's sentences keeps their offsets in code points too
    source = "Buses 🚌 will run every ten minutes. The bridge closes for eight weeks."
    assert ranked("Mayor Varga said buses run every ten minutes.", "ten minutes", source).closest[0] == 0


def test_a_selection_that_cuts_words_is_widened_to_whole_words() -> None:
    summary = "The bridge closes for eight weeks."
    cut = summary.index("eight") + 1  # "ight wee"
    whole = summary.index("eight")
    sentences = split_sentences(BRIDGE)
    vectors = embedder.embed([BRIDGE[s:e] for s, e in sentences])
    common = {
        "selected_text": summary,
        "selected_sentences": split_sentences(summary),
        "target_text": BRIDGE,
        "target_sentences": sentences,
        "target_vectors": vectors,
        "encode_tokens": embedder.token_vectors,
    }
    assert highlight.rank(start=cut, end=cut + 8, **common) == highlight.rank(start=whole, end=whole + 11, **common)


def test_a_selection_outside_the_text_or_vectors_of_another_text_are_refused() -> None:
    sentences = split_sentences(BRIDGE)
    common = {
        "selected_text": "short",
        "selected_sentences": [[0, 5]],
        "target_text": BRIDGE,
        "target_sentences": sentences,
        "encode_tokens": embedder.token_vectors,
    }
    with pytest.raises(ValueError, match="selection 2..9 is outside a text of 5 characters"):
        highlight.rank(start=2, end=9, target_vectors=np.zeros((4, 384), dtype=np.float32), **common)
    with pytest.raises(ValueError, match="3 sentence vectors for 4 sentences"):
        highlight.rank(start=0, end=5, target_vectors=np.zeros((3, 384), dtype=np.float32), **common)


def test_an_other_text_without_sentences_gets_an_empty_ranking() -> None:
    ranking = highlight.rank(
        selected_text="The bridge closes.",
        start=4,
        end=10,
        selected_sentences=[[0, 18]],
        target_text="",
        target_sentences=[],
        target_vectors=np.zeros((0, 384), dtype=np.float32),
        encode_tokens=embedder.token_vectors,
    )
    assert ranking == highlight.Ranking(scores=[], closest=[])


def test_token_vectors_are_read_in_context_and_pool_to_the_sentence_embedding() -> None:
    text = "The bridge 🌉 closes for eight weeks."
    vectors, offsets = embedder.token_vectors(text)
    assert len(vectors) == len(offsets)
    assert [text[s:e] for s, e in offsets if e > s][:4] == ["The", "bridge", "🌉", "closes"]
    pooled = vectors.mean(axis=0)
    pooled /= np.linalg.norm(pooled)
    assert float(pooled @ embedder.embed([text])[0]) > 0.999


def test_a_model_that_cannot_load_reports_why_instead_of_loading_forever(tmp_path: Any) -> None:
    missing = str(tmp_path / "no-such-model")
    embedder.start_loading(missing)
    deadline = time.monotonic() + 30
    while embedder.load_error(missing) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "cannot load embedding model" in str(embedder.load_error(missing))
    assert not embedder.is_loaded(missing)


@pytest.mark.django_db
def test_similarity_api_answers_every_source_sentence_with_score_shade_and_closest(
    embedded: Any, sample: Any, alice: Any
) -> None:
    start = sample.summary.index("nine weeks")  # the source says eight weeks, in its first sentence
    response = login(alice).post(
        f"/api/samples/{sample.pk}/similarity/",
        {"side": "summary", "start": start, "end": start + len("nine weeks")},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["side"] == "summary" and body["target"] == "source"
    assert [(s["index"], s["start"], s["end"]) for s in body["sentences"]] == [
        (i, s, e) for i, (s, e) in enumerate(sample.passage.sentences)
    ]
    assert body["closest"][0] == 0
    scores = [s["similarity"] for s in body["sentences"]]
    assert scores.index(max(scores)) == 0 and all(round(x, 3) == x for x in scores)
    assert body["sentences"][0]["shade"] == 4
    assert all(s["shade"] in range(4) for s in body["sentences"] if s["index"] not in body["closest"])


@pytest.mark.django_db
def test_similarity_api_ranks_summary_sentences_for_a_selection_in_the_source(
    embedded: Any, sample: Any, alice: Any
) -> None:
    source = sample.passage.text
    start = source.index("12.4 million euros")
    response = login(alice).post(
        f"/api/samples/{sample.pk}/similarity/",
        {"side": "source", "start": start, "end": start + len("12.4 million euros")},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["target"] == "summary" and len(body["sentences"]) == 2
    assert body["closest"] == [1]  # "The 12.4 million euro project was funded by the national government."


@pytest.mark.django_db
def test_similarity_api_answers_503_with_retry_after_while_the_model_loads(
    embedded: Any, sample: Any, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = []
    monkeypatch.setattr(embedder, "is_loaded", lambda name=None: False)
    monkeypatch.setattr(embedder, "start_loading", lambda name=None: started.append(name))
    response = login(alice).post(
        f"/api/samples/{sample.pk}/similarity/",
        {"side": "summary", "start": 0, "end": 9},
        content_type="application/json",
    )
    assert response.status_code == 503
    assert response.json() == {"detail": "loading similarity model", "loading": True}
    assert response["Retry-After"] == "1"
    assert started == [embedder.model_name()]  # the request asked for the load, and did not wait for it

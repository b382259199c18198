"""judging.quotes: which passages a judge's reasoning quotes, where they are in the source and the output (code
points, astral characters included), and the texts cut for rendering."""

from __future__ import annotations

from judging.quotes import Mark, find_quotes, fold, quoted_passages, reasoning_pieces, text_parts

SOURCE = "🌉 The Harbour Bridge reopened on Tuesday after eight weeks. The regional   council paid 12.4 million euros."
OUTPUT = "𝔘𝔫𝔦 🌉🌉 The bridge reopened after NINE weeks; Mayor Tom Price said so."


def passages(reasoning: str) -> list[str]:
    return [passage.text for passage in quoted_passages(reasoning)]


# --------------------------------------------------------------------------- finding the quotes in the reasoning


def test_double_curly_angled_and_backtick_quotes_are_read() -> None:
    reasoning = 'It says "nine weeks", then “Tom Price”, then «regional council» and `12.4 million`.'
    assert passages(reasoning) == ["nine weeks", "Tom Price", "regional council", "12.4 million"]


def test_single_quotes_are_read_but_apostrophes_open_and_close_nothing() -> None:
    reasoning = "The source's claim isn't 'eight weeks' but the summary's ‘nine weeks’; don't trust the workers' word."
    assert passages(reasoning) == ["eight weeks", "nine weeks"]


def test_a_single_quote_can_hold_an_apostrophe() -> None:
    assert passages("It calls it 'the council's money' here.") == ["the council's money"]


def test_single_quotes_inside_a_double_quoted_passage_are_not_read_again() -> None:
    assert passages("The output says \"the 'new' bridge\" twice.") == ["the 'new' bridge"]


def test_quotes_shorter_than_three_letters_and_repeats_are_dropped() -> None:
    assert passages('It says "it" and "9" and "NINE weeks" and "nine   weeks" again.') == ["NINE weeks"]


def test_passages_keep_their_place_in_the_reasoning() -> None:
    reasoning = 'Claims "Tom Price" spoke.'
    (passage,) = quoted_passages(reasoning)
    assert reasoning[passage.start : passage.end] == "Tom Price"


# --------------------------------------------------------------------------- finding them in the texts


def test_offsets_are_code_points_after_astral_characters() -> None:
    found = find_quotes('It says "nine weeks" and "Tom Price"; the source has \'eight weeks\'.', SOURCE, OUTPUT)
    where = {(hit["quote"], hit["where"]): (hit["start"], hit["end"]) for hit in found}
    # Worked out by hand: OUTPUT starts with three mathematical letters (astral: two UTF-16 units each),
    # a space, two bridge emoji and a space, then "The bridge reopened after " (26), so "NINE" starts at
    # code point 3 + 1 + 2 + 1 + 26 = 33.
    assert where[("nine weeks", "output")] == (33, 43)
    assert OUTPUT[33:43] == "NINE weeks"
    assert where[("Tom Price", "output")] == (OUTPUT.index("Tom Price"), OUTPUT.index("Tom Price") + 9)
    # The emoji and a space, then "The Harbour Bridge reopened on Tuesday after " (45): 2 + 45 = 47.
    assert where[("eight weeks", "source")] == (47, 58)
    assert SOURCE[47:58] == "eight weeks"
    # The browser counts UTF-16 units: the output's passage sits 5 units further on there.
    assert len(OUTPUT[:33].encode("utf-16-le")) // 2 == 38


def test_matching_ignores_case_and_white_space_runs() -> None:
    (hit,) = find_quotes('Paid by "the Regional council".', SOURCE, OUTPUT)
    assert (hit["where"], SOURCE[hit["start"] : hit["end"]]) == ("source", "The regional   council")


def test_curly_apostrophes_and_dashes_match_straight_ones() -> None:
    source = "The mayor’s office said 2020–2024 was hard."
    found = find_quotes("It cites \"mayor's office\" and \"2020-2024\".", source, "")
    assert [source[hit["start"] : hit["end"]] for hit in found] == ["mayor’s office", "2020–2024"]


def test_a_quote_found_in_neither_text_is_returned_without_a_place() -> None:
    assert find_quotes('It invents "a toll of 3 euros".', SOURCE, OUTPUT) == [
        {"quote": "a toll of 3 euros", "index": 0, "reasoning_start": 12, "reasoning_end": 29,
         "where": None, "start": None, "end": None}
    ]


def test_a_quote_in_both_texts_and_twice_in_one_gives_every_occurrence() -> None:
    found = find_quotes('Both say "reopened".', SOURCE + " It reopened.", OUTPUT)
    assert [(hit["where"], hit["start"]) for hit in found] == [
        ("source", SOURCE.index("reopened")),
        ("source", len(SOURCE) + 4),
        ("output", OUTPUT.index("reopened")),
    ]


def test_a_quote_must_start_and_end_on_word_boundaries() -> None:
    assert find_quotes('It says "art".', "The work started.", "")[0]["where"] is None
    assert find_quotes('It says "art".', "Modern art.", "")[0]["start"] == 7


def test_trailing_punctuation_inside_the_quote_marks_is_dropped_when_needed() -> None:
    (hit,) = find_quotes('It says "reopened on Tuesday."', SOURCE, OUTPUT)
    assert SOURCE[hit["start"] : hit["end"]] == "reopened on Tuesday"


def test_an_ellipsis_quote_counts_only_when_every_piece_is_there() -> None:
    found = find_quotes('It says "The Harbour Bridge ... eight weeks".', SOURCE, OUTPUT)
    assert [SOURCE[hit["start"] : hit["end"]] for hit in found] == ["The Harbour Bridge", "eight weeks"]
    missing = find_quotes('It says "The Harbour Bridge … twelve weeks".', SOURCE, OUTPUT)
    assert [hit["where"] for hit in missing] == [None]


def test_casefolding_that_changes_length_keeps_offsets_on_the_original() -> None:
    text = "Die Straße 🌉 ist breit."
    (hit,) = find_quotes('Sie sagt "STRASSE".', text, "")
    assert text[hit["start"] : hit["end"]] == "Straße"
    folded = fold(text)
    assert len(folded.origin) == len(folded.text) + 1 and folded.origin[-1] == len(text)


def test_no_quotes_no_results() -> None:
    assert find_quotes("The output is faithful.", SOURCE, OUTPUT) == []
    assert find_quotes("", SOURCE, OUTPUT) == []


# --------------------------------------------------------------------------- cutting texts for the page


def test_text_parts_join_back_to_the_text_and_carry_sentences_and_marks() -> None:
    text = "🌉 One two. Three four."
    parts = text_parts(text, [[0, 10], [11, 22]], [Mark(6, 15, "0-0")])
    assert "".join(piece["text"] for part in parts for piece in part["pieces"]) == text
    assert [(part["sentence"], part["start"], part["end"]) for part in parts] == [(0, 0, 10), (None, 10, 11), (1, 11, 22)]
    marked = [(piece["text"], piece["start"], piece["end"]) for part in parts for piece in part["pieces"] if piece["marks"]]
    # The mark crosses the sentence boundary: one piece in each part, offsets in code points.
    assert marked == [("two.", 6, 10), (" ", 10, 11), ("Thre", 11, 15)]


def test_overlapping_marks_give_pieces_with_both_ids() -> None:
    parts = text_parts("abcdefghij", None, [Mark(2, 6, "a"), Mark(4, 8, "b")])
    assert [(p["text"], p["marks"]) for p in parts[0]["pieces"]] == [
        ("ab", []), ("cd", ["a"]), ("ef", ["a", "b"]), ("gh", ["b"]), ("ij", []),
    ]


def test_ranges_outside_the_text_are_clamped_and_empty_ones_dropped() -> None:
    parts = text_parts("short", [[0, 99]], [Mark(3, 99, "x"), Mark(4, 4, "y")])
    assert parts == [{"sentence": 0, "start": 0, "end": 5, "pieces": [
        {"text": "sho", "start": 0, "end": 3, "marks": []}, {"text": "rt", "start": 3, "end": 5, "marks": ["x"]},
    ]}]


def test_reasoning_pieces_mark_each_quote_and_where_it_was_found() -> None:
    reasoning = 'Says "nine weeks" and "a toll".'
    pieces = reasoning_pieces(reasoning, find_quotes(reasoning, SOURCE, OUTPUT))
    assert "".join(piece["text"] for piece in pieces) == reasoning
    assert [(p["text"], p["quote"], p["found"]) for p in pieces if p["quote"] is not None] == [
        ("nine weeks", 0, ["output"]), ("a toll", 1, []),
    ]

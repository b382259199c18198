"""judging.quotes: which passages a judge's reasoning quotes, where they are in the source and the output (code
points, astral characters included; CJK and Thai without word boundaries; accents composed or combining, and
zero-width characters, matched on a normal form but reported in the original), and the texts cut for rendering."""

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


def test_a_quote_inside_a_run_of_han_is_found_without_word_boundaries() -> None:
    source = "北京大学的研究人员发现"
    (hit,) = find_quotes('says "北京大学".', source, "x")
    start = source.index("北京大学")
    assert (hit["where"], hit["start"], hit["end"]) == ("source", start, start + len("北京大学"))
    (middle,) = find_quotes("says “研究人员”.", source, "")
    assert source[middle["start"] : middle["end"]] == "研究人员" and middle["start"] == source.index("研究")


def test_kana_and_thai_need_no_word_boundaries_either() -> None:
    output = "東京タワーへ行きました。"
    (kana,) = find_quotes('It says "タワー".', "", output)
    assert (kana["where"], kana["start"]) == ("output", output.index("タワー"))
    thai = "กรุงเทพมหานครเป็นเมืองหลวง"
    (hit,) = find_quotes('It says "มหานคร".', thai, "")
    assert (hit["start"], hit["end"]) == (thai.index("มหานคร"), thai.index("มหานคร") + len("มหานคร"))


def test_a_latin_quote_next_to_han_needs_no_space_but_latin_words_keep_their_boundaries() -> None:
    source = "研究使用GPT模型。"
    (hit,) = find_quotes('It says "GPT".', source, "")
    assert hit["start"] == source.index("GPT")
    assert find_quotes('It says "art".', "The work started 北京.", "")[0]["where"] is None
    assert find_quotes('It says "art".', "北京 start", "")[0]["where"] is None


def test_two_han_or_kana_characters_make_a_quote_but_two_latin_letters_do_not() -> None:
    assert passages('It says "東京", "タワ", "it" and "東".') == ["東京", "タワ"]
    source = "東京都に住む"
    (hit,) = find_quotes('It says "東京".', source, "")
    assert (hit["start"], hit["end"]) == (source.index("東京"), source.index("東京") + 2)


def test_corner_brackets_quote_and_cjk_full_stops_are_dropped_when_needed() -> None:
    source = "在北京大学的研究"
    assert passages("它说「北京大学」和『研究』。") == ["北京大学", "研究"]
    (hit,) = find_quotes("它说「北京大学。」", source, "")
    assert source[hit["start"] : hit["end"]] == "北京大学" and hit["start"] == 1


def test_a_precomposed_accent_in_the_quote_finds_a_combining_one_in_the_text() -> None:
    source = "🌉 Mayor Ine\u0301s Varga spoke."
    (hit,) = find_quotes('It names "In\u00e9s Varga".', source, "")
    start = source.index("Ine\u0301s")
    end = source.index(" spoke")
    assert (hit["start"], hit["end"]) == (start, end)
    assert source[hit["start"] : hit["end"]] == "Ine\u0301s Varga"  # the combining accent highlighted too


def test_a_combining_accent_in_the_quote_finds_a_precomposed_one_in_the_text() -> None:
    output = "🎉🎉 Lunch at the Caf\u00e9 Central."
    (hit,) = find_quotes('It says "Cafe\u0301 Central".', "", output)
    assert (hit["start"], hit["end"]) == (output.index("Caf"), output.index("Central") + len("Central"))


def test_a_quote_never_stops_between_a_letter_and_its_accent() -> None:
    assert find_quotes('It says "Cafe".', "The Cafe\u0301 is open.", "")[0]["where"] is None
    assert find_quotes('It says "Cafe".', "The Caf\u00e9 is open.", "")[0]["where"] is None


def test_zero_width_characters_in_the_text_or_the_quote_do_not_block_a_match() -> None:
    source = "👩\u200d💻 The Ac\u200bme\ufeff Corp paid."
    (hit,) = find_quotes('Paid by "Acme Corp".', source, "")
    assert (hit["start"], hit["end"]) == (source.index("Ac"), source.index(" paid"))
    (joined,) = find_quotes('Paid by "Ac\u200cme\u200d Corp".', "The Acme Corp paid.", "")
    assert (joined["start"], joined["end"]) == (4, 13)


def test_folding_is_the_same_for_canonically_equal_texts_and_maps_back_to_the_original() -> None:
    for composed, decomposed in [
        ("Ca\u00f1\u00f3n", "Can\u0303o\u0301n"),
        ("\uac01", "\u1100\u1161\u11a8"),  # Hangul: a syllable and its jamo
        ("\u1e69", "s\u0323\u0307"),  # two marks, and in the other order below
        ("\u1e69", "s\u0307\u0323"),
    ]:
        assert fold(composed).text == fold(decomposed).text
        folded = fold(decomposed)
        assert len(folded.ends) == len(folded.text) and folded.origin[-1] == len(decomposed)
        assert (folded.origin[0], folded.ends[-1]) == (0, len(decomposed))


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

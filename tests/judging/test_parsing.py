"""The judge-answer parser: a score only from a JSON integer 1-5, every other answer a parse error with its reason."""

from __future__ import annotations

import pytest

from judging.parsing import ParsedAnswer, first_json_object, parse_judge_answer, parse_rewrite_answer


def ok(score: int, reasoning: str = "") -> ParsedAnswer:
    return ParsedAnswer(score=score, reasoning=reasoning, error=None)


def test_clean_json_gives_score_and_reasoning() -> None:
    raw = '{"reasoning": "Every figure matches the source.", "score": 5}'
    assert parse_judge_answer(raw, with_reasoning=True) == ok(5, "Every figure matches the source.")


def test_json_inside_prose_is_found() -> None:
    raw = 'Let me check the summary. {"reasoning": "The date is wrong.", "score": 2} That is my verdict.'
    assert parse_judge_answer(raw, with_reasoning=True) == ok(2, "The date is wrong.")


def test_json_inside_a_code_fence_is_found() -> None:
    raw = 'Here you go:\n```json\n{\n  "reasoning": "One adjective is unsupported.",\n  "score": 4\n}\n```\n'
    assert parse_judge_answer(raw, with_reasoning=True) == ok(4, "One adjective is unsupported.")


def test_braces_in_prose_before_the_json_are_skipped() -> None:
    raw = 'Using the {rubric} and a set {1, 2}: {"score": 3, "reasoning": "Two unverifiable details."}'
    assert parse_judge_answer(raw, with_reasoning=True) == ok(3, "Two unverifiable details.")


def test_braces_inside_the_reasoning_string_do_not_confuse_the_reader() -> None:
    raw = '{"reasoning": "The output writes {sic} where the source has } and {.", "score": 4}'
    assert parse_judge_answer(raw, with_reasoning=True) == ok(4, "The output writes {sic} where the source has } and {.")


@pytest.mark.parametrize("raw", ["", "   \n\t ", None])
def test_empty_answer_is_a_parse_error(raw: str | None) -> None:
    parsed = parse_judge_answer(raw, with_reasoning=True)
    assert parsed == ParsedAnswer(None, "", "The answer is empty.")
    assert not parsed.ok


def test_answer_without_json_is_a_parse_error() -> None:
    parsed = parse_judge_answer("I would give this summary a 4 out of 5.", with_reasoning=True)
    assert parsed.score is None
    assert parsed.error == "The answer holds no JSON object."


def test_missing_score_is_a_parse_error_that_keeps_the_reasoning() -> None:
    parsed = parse_judge_answer('{"reasoning": "Mostly faithful."}', with_reasoning=True)
    assert parsed == ParsedAnswer(None, "Mostly faithful.", 'The JSON object has no "score" field.')


@pytest.mark.parametrize(
    ("score_text", "error"),
    [
        ("0", "The score 0 is outside the scale 1 to 5."),
        ("7", "The score 7 is outside the scale 1 to 5."),
        ("-2", "The score -2 is outside the scale 1 to 5."),
        ('"four"', 'The score "four" is a string, not an integer from 1 to 5.'),
        # A string holding a digit is refused too: never coerced.
        ('"4"', 'The score "4" is a string, not an integer from 1 to 5.'),
        # 4.0 is refused: the format asks for an integer and JSON tells 4.0 from 4.
        ("4.0", "The score 4.0 is a decimal number, not an integer from 1 to 5."),
        ("4.5", "The score 4.5 is a decimal number, not an integer from 1 to 5."),
        # bool is an int in Python; JSON true/false are not scores.
        ("true", "The score is true, a boolean, not an integer from 1 to 5."),
        ("false", "The score is false, a boolean, not an integer from 1 to 5."),
        ("null", "The score is null, not an integer from 1 to 5."),
        ("[4]", "The score is a list, not an integer from 1 to 5."),
        ('{"value": 4}', "The score is an object, not an integer from 1 to 5."),
    ],
)
def test_score_that_is_not_an_integer_from_1_to_5_is_a_parse_error(score_text: str, error: str) -> None:
    parsed = parse_judge_answer('{"reasoning": "r", "score": ' + score_text + "}", with_reasoning=True)
    assert parsed == ParsedAnswer(None, "r", error)


@pytest.mark.parametrize("score", [1, 2, 3, 4, 5])
def test_every_score_of_the_scale_counts(score: int) -> None:
    assert parse_judge_answer(f'{{"score": {score}}}', with_reasoning=False) == ok(score)


def test_truncated_json_is_a_parse_error() -> None:
    parsed = parse_judge_answer('{"reasoning": "The output claims the bridge reopened on', with_reasoning=True)
    assert parsed.score is None
    assert parsed.error == "The answer holds no complete JSON object (it may be truncated)."


def test_truncated_json_cut_after_the_score_is_still_a_parse_error() -> None:
    parsed = parse_judge_answer('{"score": 4, "reasoning": "unfinis', with_reasoning=True)
    assert parsed.score is None
    assert parsed.error is not None


def test_of_two_objects_with_the_same_score_the_first_is_read() -> None:
    raw = '{"reasoning": "first", "score": 2}\n{"reasoning": "second", "score": 2}'
    assert parse_judge_answer(raw, with_reasoning=True) == ok(2, "first")


def test_a_score_nested_in_an_inner_object_does_not_count() -> None:
    parsed = parse_judge_answer('{"verdict": {"score": 4}, "reasoning": "nested"}', with_reasoning=True)
    assert parsed == ParsedAnswer(None, "nested", 'The JSON object has no "score" field.')


def test_missing_reasoning_in_reasoning_mode_keeps_the_score() -> None:
    assert parse_judge_answer('{"score": 3}', with_reasoning=True) == ok(3, "")


def test_empty_or_non_text_reasoning_stays_empty() -> None:
    assert parse_judge_answer('{"reasoning": "   ", "score": 3}', with_reasoning=True) == ok(3, "")
    assert parse_judge_answer('{"reasoning": ["a", "b"], "score": 3}', with_reasoning=True) == ok(3, "")


def test_score_only_mode_ignores_volunteered_reasoning() -> None:
    assert parse_judge_answer('{"reasoning": "extra", "score": 5}', with_reasoning=False) == ok(5, "")


def test_first_json_object_finds_the_outer_object_and_skips_non_json_braces() -> None:
    assert first_json_object('a {b} c {"x": {"y": 1}} {"z": 2}') == {"x": {"y": 1}}
    assert first_json_object("no braces at all") is None
    assert first_json_object('{"open": ') is None
    assert first_json_object('[{"in": "array"}]') == {"in": "array"}


def test_rewrite_answer_reads_the_rewritten_sentence() -> None:
    assert parse_rewrite_answer('```json\n{"rewritten": " The bridge reopened on Monday. "}\n```') == (
        "The bridge reopened on Monday.",
        None,
    )
    assert parse_rewrite_answer('{"sentence": "x"}') == (None, 'The JSON object has no non-empty "rewritten" string.')
    assert parse_rewrite_answer("") == (None, "The answer is empty.")
    assert parse_rewrite_answer("sure!") == (None, "The answer holds no JSON object.")

"""What reasoning models and second thoughts put around the answer: a draft score inside <think>...</think> is not
the verdict, and an answer that gives two different scores in two JSON objects is a parse error naming both, never
one of them picked."""

from __future__ import annotations

import pytest

from judging.parsing import ParsedAnswer, answer_after_thinking, parse_judge_answer, parse_rewrite_answer

FINAL = '{"reasoning": "One date is unsupported.", "score": 4}'


def test_a_draft_score_inside_a_think_block_is_not_the_answer() -> None:
    raw = f'<think>\nFirst impression: {{"score": 2}}. But the date is only unverifiable.\n</think>\n{FINAL}'
    assert parse_judge_answer(raw, with_reasoning=True) == ParsedAnswer(4, "One date is unsupported.", None)


def test_think_tags_are_found_whatever_their_case_and_thinking_tags_too() -> None:
    raw = f'<THINK>{{"score": 1}}</THINK><thinking>{{"score": 2}}</thinking>{FINAL}'
    assert parse_judge_answer(raw, with_reasoning=False).score == 4


def test_a_closing_tag_without_an_opening_one_ends_thinking_begun_by_the_chat_template() -> None:
    # DeepSeek-R1's template opens <think> in the prompt: the answer holds only the closing tag.
    raw = f'The output says 2023; {{"score": 2}} would be harsh.\n</think>\n\n{FINAL}'
    assert parse_judge_answer(raw, with_reasoning=True).score == 4


def test_a_think_block_that_never_closes_leaves_no_answer() -> None:
    raw = '<think>\nThe summary adds a date. Draft: {"reasoning": "date", "score": 2}. Let me check the'
    parsed = parse_judge_answer(raw, with_reasoning=True)
    assert (parsed.score, parsed.ok) == (None, False)
    assert parsed.error is not None and "<think> block that never closes" in parsed.error


def test_nothing_after_a_closed_think_block_is_a_parse_error_saying_so() -> None:
    parsed = parse_judge_answer('<think>{"score": 3}</think>\n  ', with_reasoning=False)
    assert parsed.score is None
    assert parsed.error is not None and "nothing after its <think> block" in parsed.error


def test_the_text_kept_is_everything_but_the_blocks() -> None:
    assert answer_after_thinking("a<think>b</think>c<think>d</think>e") == ("ace", None)
    assert answer_after_thinking("no tags here") == ("no tags here", None)


@pytest.mark.parametrize(("raw", "first", "later"), [
    ('Initial guess: {"score": 2} ... final answer: {"reasoning": "Two details differ.", "score": 5}', "2", "5"),
    ('{"reasoning": "a", "score": 4}\n```json\n{"score": "4"}\n```', "4", '"4"'),
    ('{"score": 3} Actually no. {"note": "revised"} {"score": 1}', "3", "1"),
])
def test_two_different_scores_in_one_answer_are_a_parse_error_naming_both(raw: str, first: str, later: str) -> None:
    parsed = parse_judge_answer(raw, with_reasoning=True)
    assert (parsed.score, parsed.ok) == (None, False)
    assert parsed.error is not None
    assert parsed.error.startswith(f"Two scores in one answer: {first} and {later}")


def test_the_same_score_repeated_in_a_later_object_still_counts() -> None:
    raw = '{"reasoning": "All supported.", "score": 5} To sum up: {"score": 5}'
    assert parse_judge_answer(raw, with_reasoning=True) == ParsedAnswer(5, "All supported.", None)


def test_a_later_object_without_a_score_or_a_nested_score_changes_nothing() -> None:
    raw = '{"reasoning": "ok", "score": 4} {"aspects": {"score": 2}} {"confidence": "high"}'
    assert parse_judge_answer(raw, with_reasoning=False).score == 4


def test_a_draft_score_in_a_think_block_does_not_count_as_a_second_score() -> None:
    raw = f'<think>{{"score": 1}}</think>{FINAL}'
    assert parse_judge_answer(raw, with_reasoning=True).score == 4


def test_a_rewrite_after_a_think_block_is_the_one_read() -> None:
    raw = '<think>{"rewritten": "draft"}</think>{"rewritten": "The bridge reopened on Monday."}'
    assert parse_rewrite_answer(raw) == ("The bridge reopened on Monday.", None)

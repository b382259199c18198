"""An answer object that gives "score" twice is ambiguous: Python's json keeps the last value silently, which would
pick one of the judge's two numbers for it. It is a parse error instead; a repeated identical score is not."""

from __future__ import annotations

from judging.parsing import parse_judge_answer


def test_two_different_scores_in_one_object_are_a_parse_error() -> None:
    parsed = parse_judge_answer('{"score": 5, "reasoning": "On reflection it is wrong.", "score": 1}',
                                with_reasoning=True)
    assert (parsed.score, parsed.ok) == (None, False)
    assert parsed.error == 'The JSON object gives "score" more than once (5, 1).'
    assert parsed.reasoning == "On reflection it is wrong."


def test_the_same_score_written_twice_still_counts() -> None:
    parsed = parse_judge_answer('{"score": 2, "reasoning": "Two errors.", "score": 2}', with_reasoning=True)
    assert (parsed.score, parsed.error) == (2, None)


def test_a_repeated_score_in_a_nested_object_does_not_matter() -> None:
    parsed = parse_judge_answer('{"draft": {"score": 1, "score": 2}, "score": 4}', with_reasoning=False)
    assert (parsed.score, parsed.error) == (4, None)


def test_repeated_score_inside_prose_is_found_too() -> None:
    parsed = parse_judge_answer('Verdict: {"score": 3, "score": "4"} done', with_reasoning=False)
    assert parsed.score is None
    assert parsed.error == 'The JSON object gives "score" more than once (3, "4").'

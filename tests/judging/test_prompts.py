"""Default prompts, rubric checks, and the chat messages a rubric judge receives."""

from __future__ import annotations

import pytest

from judging.parsing import parse_judge_answer
from judging.prompts import (
    DEFAULT_EXTRINSIC_PROMPT,
    DEFAULT_INTRINSIC_PROMPT,
    DEFAULT_RUBRIC,
    answer_schema,
    default_prompt,
    defined_levels,
    fill_rewrite_prompt,
    judge_messages,
    rewrite_prompt_problems,
    rubric_problems,
)


def level_line(score: int) -> str:
    lines = [line for line in DEFAULT_RUBRIC.splitlines() if line.startswith(f"{score} ")]
    assert len(lines) == 1, f"score {score} should be defined on exactly one line"
    return lines[0].lower()


def test_default_rubric_is_accepted_and_defines_exactly_the_five_levels() -> None:
    assert rubric_problems(DEFAULT_RUBRIC) == []
    assert defined_levels(DEFAULT_RUBRIC) == {1, 2, 3, 4, 5}


def test_default_rubric_names_the_four_aspects() -> None:
    text = DEFAULT_RUBRIC.lower()
    for aspect in ("factual consistency", "unsupported adjectives", "speculation", "alignment with the source"):
        assert aspect in text


def test_default_rubric_levels_say_what_design_md_says() -> None:
    assert "every piece of information" in level_line(5) and "verified in the source" in level_line(5)
    assert "one minor" in level_line(4) and "would not mislead or harm" in level_line(4)
    assert "more than one" in level_line(3) and "none of them would mislead or harm" in level_line(3)
    assert "inaccurate" in level_line(2) and "at least one" in level_line(2) and "harm" in level_line(2)
    assert "most or all" in level_line(1) and "harm" in level_line(1)


def test_rubric_without_a_score_scale_is_refused() -> None:
    problems = rubric_problems("Judge whether the summary is faithful to the article. Be strict.")
    assert problems == [
        "the rubric has no score scale: write one line per score from 1 to 5, each starting with its number"
    ]


def test_rubric_missing_a_level_names_it() -> None:
    text = "Scale:\n5: perfect\n4 - good\n**2** poor\nScore 1 = bad\n"
    assert rubric_problems(text) == ["the rubric does not define score 3"]


def test_empty_rubric_is_refused() -> None:
    assert rubric_problems("  \n") == ["the rubric is empty"]


def test_numbers_inside_sentences_or_decimals_do_not_count_as_levels() -> None:
    assert defined_levels("The output has 5 sentences.\n2.5 is not a level\n15 - neither is this\n(3) this is") == {
        15,
        3,
    }


def test_default_prompt_by_kind() -> None:
    assert default_prompt("rubric") == DEFAULT_RUBRIC
    assert default_prompt("intrinsic") == DEFAULT_INTRINSIC_PROMPT
    assert default_prompt("extrinsic") == DEFAULT_EXTRINSIC_PROMPT
    with pytest.raises(ValueError, match="Unknown prompt kind 'claims'"):
        default_prompt("claims")


@pytest.mark.parametrize("prompt", [DEFAULT_INTRINSIC_PROMPT, DEFAULT_EXTRINSIC_PROMPT])
def test_default_rewrite_prompts_hold_the_placeholders_and_ask_for_json(prompt: str) -> None:
    assert rewrite_prompt_problems(prompt) == []
    assert '{"rewritten": ' in prompt


def test_intrinsic_and_extrinsic_prompts_ask_for_different_hallucinations() -> None:
    assert "contradicts the source" in DEFAULT_INTRINSIC_PROMPT
    assert "cannot verify" in DEFAULT_EXTRINSIC_PROMPT


def test_rewrite_prompt_missing_a_placeholder_is_named() -> None:
    assert rewrite_prompt_problems("Rewrite {sentence} given {source}.") == [
        "the prompt does not contain the placeholder {output}"
    ]


def test_fill_rewrite_prompt_keeps_braces_of_the_texts_and_the_json_example() -> None:
    filled = fill_rewrite_prompt(
        DEFAULT_INTRINSIC_PROMPT, source="Set {a, b} and {output}.", output="Out {x}.", sentence="It {was}."
    )
    assert "Set {a, b} and {output}." in filled  # a placeholder written inside the source is not filled again
    assert "Out {x}." in filled and "It {was}." in filled
    assert '{"rewritten": ' in filled
    assert "{source}" not in filled and "{sentence}" not in filled


def test_judge_messages_put_the_output_first_then_the_source() -> None:
    messages = judge_messages("RUBRIC TEXT", "THE OUTPUT", "THE SOURCE", with_reasoning=True)
    assert [message["role"] for message in messages] == ["system", "user"]
    system, user = messages[0]["content"], messages[1]["content"]
    assert system.startswith("RUBRIC TEXT")
    assert '"reasoning"' in system and '"score"' in system
    assert user.index("<output>\nTHE OUTPUT\n</output>") < user.index("<source>\nTHE SOURCE\n</source>")


def test_score_only_messages_ask_for_no_reasoning() -> None:
    system = judge_messages(DEFAULT_RUBRIC, "o", "s", with_reasoning=False)[0]["content"]
    assert '{"score": <an integer from 1 to 5>}' in system
    assert '"reasoning"' not in system


def test_answer_schema_with_reasoning() -> None:
    schema = answer_schema(True)
    assert list(schema["properties"]) == ["reasoning", "score"]  # reasoning before the score
    assert schema["required"] == ["reasoning", "score"]
    assert schema["properties"]["score"] == {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    assert schema["additionalProperties"] is False


def test_answer_schema_score_only() -> None:
    schema = answer_schema(False)
    assert list(schema["properties"]) == ["score"]
    assert schema["required"] == ["score"]


def test_the_format_example_in_the_instruction_is_not_itself_a_score() -> None:
    # If a model parrots the instruction back, the placeholder must not parse as a score.
    system = judge_messages(DEFAULT_RUBRIC, "o", "s", with_reasoning=True)[0]["content"]
    assert parse_judge_answer(system, with_reasoning=True).score is None

"""Token-level alpha on Chinese, Thai and mixed summaries: each character of a script without spaces is a unit.

The expected alphas are krippendorff.alpha over units listed by hand (one per
character in Chinese and Thai), not over summary_tokens.
"""

from __future__ import annotations

import krippendorff
import pytest

from annotate.agreement import BatchSpans, summary_tokens, token_alpha

CODE = {"C": 0, "B": 1, "Q": 2, "U": 3}


def by_hand(*rows: str) -> float:
    """Nominal alpha of one string of categories per annotator, a character per unit."""
    return float(krippendorff.alpha([[CODE[c] for c in row] for row in rows], level_of_measurement="nominal"))


def words(text: str) -> list[str]:
    return [text[start:end] for start, end in summary_tokens(text)]


def test_token_alpha_of_chinese_summaries_has_a_unit_per_character() -> None:
    summaries = {1: "北京地铁开通。", 2: "票价不会上涨", 3: "市长说安全第一"}
    spans = BatchSpans(
        "zh",
        ["a", "b"],
        summaries,
        {
            ("a", 1): [(4, 6, "U")],  # 开通
            ("a", 2): [(0, 2, "Q")],  # 票价
            ("b", 1): [(4, 7, "U")],  # 开通。
            ("b", 2): [(0, 6, "B"), (1, 2, "C")],  # the whole summary; the C span changes nothing
            ("b", 3): [(3, 7, "B")],  # 安全第一
        },
    )
    #             北京地铁开通。  票价不会上涨  市长说安全第一
    expected = by_hand("CCCCUUC" "QQCCCC" "CCCCCCC",
                       "CCCCUUU" "BBBBBB" "CCCBBBB")
    result = token_alpha([spans])
    assert [len(summary_tokens(text)) for text in summaries.values()] == [7, 6, 7]
    assert result.alpha == pytest.approx(expected)
    assert (result.units, result.annotators) == (20, 2)
    assert result.per_batch[0]["alpha"] == pytest.approx(expected)
    # Merged: a's Q and b's B on 票价 now differ as C+B against Q+U, the rest as before.
    assert token_alpha([spans], "C+B|Q+U").alpha == pytest.approx(
        by_hand("CCCCUUC" "UUCCCC" "CCCCCCC", "CCCCUUU" "CCCCCC" "CCCCCCC")
    )


def test_a_span_touching_part_of_a_latin_word_covers_the_word_and_of_chinese_only_its_characters() -> None:
    summary = "Apple公司 reported 收入增长 of 5%。"
    assert words(summary) == ["Apple", "公", "司", "reported", "收", "入", "增", "长", "of", "5%", "。"]
    spans = BatchSpans(
        "mixed",
        ["a", "b"],
        {1: summary},
        {
            ("a", 1): [(1, 3, "U"), (17, 19, "B")],  # "pp" of Apple; 收入
            ("b", 1): [(0, 7, "U"), (18, 20, "B")],  # Apple公司; 入增
        },
    )
    #                Apple 公 司 reported 收 入 增 长 of 5% 。
    expected = by_hand("UCCCBBCCCCC", "UUUCCBBCCCC")
    assert token_alpha([spans]).alpha == pytest.approx(expected)


def test_other_scripts_keep_their_whitespace_tokens_beside_chinese() -> None:
    text = "سيخدم المستشفى मंत्री दिल्ली 서울 지하철 l·l naïve 東京、大阪"
    assert words(text) == ["سيخدم", "المستشفى", "मंत्री", "दिल्ली", "서울", "지하철", "l·l", "naïve", "東", "京", "、",
                           "大", "阪"]


def test_token_alpha_of_a_thai_summary_keeps_vowel_and_tone_marks_with_their_consonant() -> None:
    summary = "น้ำท่วมกรุงเทพ วันนี้"
    assert words(summary) == ["น้ำ", "ท่", "ว", "ม", "ก", "รุ", "ง", "เ", "ท", "พ", "วั", "น", "นี้"]
    spans = BatchSpans(
        "th",
        ["a", "b"],
        {1: summary},
        {
            ("a", 1): [(0, 7, "U")],  # น้ำท่วม (flood)
            ("b", 1): [(3, 14, "U"), (15, 21, "B")],  # ท่วมกรุงเทพ, วันนี้
        },
    )
    #                น้ำ ท่ ว ม ก รุ ง เ ท พ วั น นี้
    expected = by_hand("UUUUCCCCCCCCC", "CUUUUUUUUUBBB")
    assert token_alpha([spans]).alpha == pytest.approx(expected)

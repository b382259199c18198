"""split_sentences: Hindi, Arabic, Urdu and other full stops pysbd's English rules miss; English split as before."""

from __future__ import annotations

import pytest

from annotate.text import split_sentences


def sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in split_sentences(text)]


HINDI = "सरकार ने मंगलवार को नई रेल लाइन की घोषणा की। यह लाइन 120 किलोमीटर लंबी होगी। मंत्री ने कहा कि किराया नहीं बढ़ेगा।"
ARABIC = "أعلنت الوزارة عن افتتاح مستشفى جديد في القاهرة. هل سيخدم المستشفى الجميع؟ نعم، قال الوزير."
URDU = "وزیر اعظم نے کہا۔ کیا یہ سچ ہے؟ ہاں، یہ سچ ہے۔"


@pytest.mark.parametrize(
    ("text", "offsets", "expected"),
    [
        (HINDI, [[0, 44], [45, 76], [77, 113]],
         ["सरकार ने मंगलवार को नई रेल लाइन की घोषणा की।", "यह लाइन 120 किलोमीटर लंबी होगी।",
          "मंत्री ने कहा कि किराया नहीं बढ़ेगा।"]),
        ("मंत्री दिल्ली गए। वे कल लौटे। क्या यह सच है?", [[0, 17], [18, 29], [30, 44]],
         ["मंत्री दिल्ली गए।", "वे कल लौटे।", "क्या यह सच है?"]),
        (ARABIC, [[0, 47], [48, 73], [74, 90]],
         ["أعلنت الوزارة عن افتتاح مستشفى جديد في القاهرة.", "هل سيخدم المستشفى الجميع؟", "نعم، قال الوزير."]),
        (URDU, [[0, 17], [18, 31], [32, 46]], ["وزیر اعظم نے کہا۔", "کیا یہ سچ ہے؟", "ہاں، یہ سچ ہے۔"]),
    ],
)
def test_hindi_arabic_and_urdu_full_stops_and_question_marks_end_sentences(
    text: str, offsets: list[list[int]], expected: list[str]
) -> None:
    assert split_sentences(text) == offsets
    assert sentences(text) == expected


def test_closing_quotes_and_brackets_stay_with_the_sentence_and_lines_keep_their_offsets() -> None:
    text = 'उन्होंने कहा, "हम कल आए।" फिर वे गए॥\nक्या?\n\n(यह सच है।) अब  \n  «وصلنا؟» نعم'
    assert split_sentences(text) == [[0, 25], [26, 36], [37, 42], [44, 55], [56, 58], [63, 71], [72, 75]]
    assert sentences(text) == ['उन्होंने कहा, "हम कल आए।"', "फिर वे गए॥", "क्या?", "(यह सच है।)", "अब", "«وصلنا؟»",
                               "نعم"]


def test_a_mark_without_a_space_after_it_still_ends_the_sentence() -> None:
    assert split_sentences("गए।वे आए।") == [[0, 3], [3, 9]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ի՞նչ է սա։ Սա գիրք է։", ["Ի՞նչ է սա։", "Սա գիրք է։"]),  # Armenian
        ("ሰላም ነው። እንዴት ነህ?", ["ሰላም ነው።", "እንዴት ነህ?"]),  # Ethiopic
        ("မင်္ဂလာပါ။ နေကောင်းလား။", ["မင်္ဂလာပါ။", "နေကောင်းလား။"]),  # Burmese
    ],
)
def test_armenian_ethiopic_and_burmese_full_stops_end_sentences(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_chinese_and_japanese_still_split_as_pysbd_splits_them() -> None:
    text = "该线路全长38公里。市长表示票价不会上涨！知事は「安全が第一だ」と述べた。"
    assert split_sentences(text) == [[0, 10], [10, 21], [21, 37]]


# Split with the code before these marks were added: English output must not change (the highlighting benchmark).
ENGLISH = [
    ("The U.S. Senate voted 52-48 on Tuesday. Dr. Smith, who led the inquiry, said the result was \"a relief.\" "
     "Shares rose 3.5% to $12.40 (the highest since Jan. 2019)... Analysts were unsure!",
     [[0, 39], [40, 103], [104, 163], [164, 185]]),
    ("Was the bridge safe? Engineers said yes, e.g. after the 2021 review; others disagreed.\n"
     "The mayor (who had campaigned on it) resigned.\r\n\r\nA new vote is set for Oct. 3 at 9 a.m. in St. Louis.",
     [[0, 20], [21, 86], [87, 133], [137, 189]]),
    ("  She asked: 'Why now?' He said nothing.  Mr. and Mrs. Lee left at 5 p.m. The end",
     [[2, 23], [24, 40], [42, 73], [74, 81]]),
    ("Apple Inc. reported revenue of 1.2 bn. It beat forecasts by 4 pct. \u201cWe are pleased,\u201d the CEO said. "
     "The stock closed at 101.5.\u2028Trading resumes Monday.",
     [[0, 38], [39, 66], [67, 98], [99, 125], [126, 149]]),
]


@pytest.mark.parametrize(("text", "offsets"), ENGLISH)
def test_english_paragraphs_split_as_before(text: str, offsets: list[list[int]]) -> None:
    assert split_sentences(text) == offsets

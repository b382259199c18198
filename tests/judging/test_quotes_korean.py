"""judging.quotes on Korean: Hangul is written with spaces between words, but particles and endings attach to the
word before them (서울대학교에서 = 서울대학교 + 에서). A quote may end where Hangul follows (a particle, an ending, a
counter after a number), and still starts only on a word boundary: never in the middle of a word."""

from __future__ import annotations

import unicodedata

from judging.quotes import find_quotes

NEWS = "서울대학교에서 발표했다. 연구진은 NASA가 2023년 3월에 자료를 공개했다고 밝혔다."


def found(quote: str, text: str) -> list[tuple[int, int]]:
    """Where the quote (as a judge writes it, between double quotes) is found in ``text``: (start, end) each."""
    return [(hit["start"], hit["end"]) for hit in find_quotes(f'The output says "{quote}".', text, "") if hit["where"]]


def test_a_word_is_found_with_a_particle_after_it() -> None:
    # 서울대학교에서: the word 서울대학교 and the particle 에서. The quote covers the word, not the particle.
    assert found("서울대학교", NEWS) == [(0, 5)]
    assert NEWS[0:5] == "서울대학교"


def test_a_quote_is_not_found_starting_in_the_middle_of_a_word() -> None:
    assert found("대학", NEWS) == []
    assert found("학교", "서울대학교") == []
    (missing,) = find_quotes('The output says "대학".', "서울대학교에서 발표했다", "")
    assert (missing["where"], missing["start"], missing["end"]) == (None, None, None)


def test_only_the_occurrence_that_starts_a_word_is_found() -> None:
    # The first 서울대학교 is inside 국립서울대학교 (refused); the second starts a word, with 병원 after it.
    text = "국립서울대학교와 서울대학교병원"
    assert found("서울대학교", text) == [(text.index(" ") + 1, text.index(" ") + 6)]


def test_a_quote_with_its_particle_and_a_quote_after_a_space_are_found() -> None:
    assert found("서울대학교에서", NEWS) == [(0, 7)]
    start = NEWS.index("발표했다")
    assert found("발표했다", NEWS) == [(start, start + 4)]
    assert found("연구진", NEWS) == [(NEWS.index("연구진"), NEWS.index("연구진") + 3)]  # 연구진 + 은


def test_a_latin_name_or_a_number_takes_a_korean_particle_or_counter() -> None:
    start = NEWS.index("NASA")
    assert found("NASA", NEWS) == [(start, start + 4)]  # NASA + 가
    assert found("2023", NEWS) == [(NEWS.index("2023"), NEWS.index("2023") + 4)]  # 2023 + 년


def test_what_follows_a_korean_word_must_be_hangul_to_be_read_as_its_particle() -> None:
    # A Latin letter or a digit after Hangul is the same word going on, as in any spaced script.
    assert found("서울", "서울Tech 캠퍼스") == []
    assert found("서울", "서울2 캠퍼스") == []
    assert found("서울", "서울 캠퍼스") == [(0, 2)]


def test_the_first_part_of_a_word_is_found_at_its_start() -> None:
    # Which syllables are a particle is not known: a stem, or any start of a word, is found before the rest.
    assert found("서울대", "서울대학교에서") == [(0, 3)]


def test_korean_in_decomposed_jamo_is_found_with_offsets_in_the_original() -> None:
    text = unicodedata.normalize("NFD", "국립서울대학교와 서울대학교에서")
    (span,) = found("서울대학교", text)
    assert unicodedata.normalize("NFC", text[span[0] : span[1]]) == "서울대학교"
    assert span[0] == text.index(" ") + 1
    # The quote ends after a whole syllable: 교 and the 에 after it, never inside a syllable's jamo.
    assert unicodedata.normalize("NFC", text[span[1] :]) == "에서"
    assert found("서울대학", unicodedata.normalize("NFD", "서울대학굔")) == [(0, len(unicodedata.normalize("NFD", "서울대학")))]
    assert found("서울대학교", unicodedata.normalize("NFD", "서울대학굔")) == []


def test_latin_and_han_boundaries_are_unchanged_next_to_korean() -> None:
    assert found("art", "The work started.") == []
    assert found("北京大学", "北京大学的研究人员") == [(0, 4)]
    # Han (hanja) in Korean text: unspaced, so any place is a boundary, as before.
    assert found("大學", "서울大學校에서") == [(2, 4)]

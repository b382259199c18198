"""judging.quotes reads the quote styles of more languages: book-title and angle brackets (《…》, 〈…〉), double
prime quotes (〝…〟), Hebrew gershayim (״…״, but not the one inside an acronym), curly quotes the other way round
(”…“, as right-to-left typing leaves them) and single guillemets (‹…›); the styles read before are kept."""

from __future__ import annotations

from judging.quotes import find_quotes, quoted_passages


def passages(reasoning: str) -> list[str]:
    return [passage.text for passage in quoted_passages(reasoning)]


def test_book_title_and_angle_brackets_quote() -> None:
    assert passages("摘要说《新地铁线》在〈二〇二六年〉开通。") == ["新地铁线", "二〇二六年"]


def test_double_prime_quotes_close_with_either_mark() -> None:
    assert passages("知事は〝安全が第一〟と述べ、〝費用は二十一億円〞と書いた。") == ["安全が第一", "費用は二十一億円"]


def test_hebrew_gershayim_quote_but_the_one_inside_an_acronym_does_not() -> None:
    reasoning = "לפי צה״ל, התקציר אומר ״30 מיליארד שקלים״ ולא ״3 מיליארד״."
    assert passages(reasoning) == ["30 מיליארד שקלים", "3 מיליארד"]


def test_reversed_curly_quotes_and_single_guillemets_quote() -> None:
    assert passages("يقول الملخص ”400 مليون جنيه“ بينما المصدر ‹40 مليون›.") == ["400 مليون جنيه", "40 مليون"]


def test_the_styles_read_before_are_kept_beside_the_new_ones() -> None:
    reasoning = 'It says "nine weeks", “Tom Price”, «regional council», „Brücke“, 「北京大学」 and 《东京》.'
    assert passages(reasoning) == ["nine weeks", "Tom Price", "regional council", "Brücke", "北京大学", "东京"]


def test_a_reversed_quote_is_found_in_a_right_to_left_text_with_its_offsets() -> None:
    source = "تبلغ تكلفة المشروع 40 مليون جنيه."
    output = "تبلغ تكلفة المشروع 400 مليون جنيه؟"
    found = find_quotes("الملخص يقول ”400 مليون“ والمصدر ״40 מיליון״ ‹40 مليون جنيه›", source, output)
    places = {(result["quote"], result["where"]): (result["start"], result["end"]) for result in found}
    start = output.index("400")
    assert places[("400 مليون", "output")] == (start, start + len("400 مليون"))
    start = source.index("40 مليون جنيه")
    assert places[("40 مليون جنيه", "source")] == (start, start + len("40 مليون جنيه"))
    assert places[("40 מיליון", None)] == (None, None)  # quoted, but found in neither text

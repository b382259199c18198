"""The obvious-swap rules: a DATE replaced by a definitely different DATE, a PERSON name by another name."""

from __future__ import annotations

import pytest

from annotate.pairmath.swaps import parse_date, swap_kind


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        ("March", "June", "date"),
        ("1911", "1920", "date"),
        ("March 1911", "June 1911", "date"),
        ("3 March 2020", "4 March 2020", "date"),
        ("March 3rd", "March 4th", "date"),
        ("Monday", "Tuesday", "date"),
        ("the 1990s", "the 1980s", "date"),
        ("19th century", "20th century", "date"),
        ("2020-03-01", "2021-03-01", "date"),
        ("March", "1911", "date"),  # nothing in common: they say different things
        ("March 1911", "1911", ""),  # one is a more precise form of the other
        ("1990s", "1990", ""),
        ("1901", "20th century", ""),
        ("3rd of March", "March 3", ""),  # the same date written two ways
        ("2020-03-01", "1/3/2020", ""),
        ("Ines Varga", "Tom Price", "name"),
        ("J. Smith", "K. Jones", "name"),
        ("Ludwig van Beethoven", "Franz Schubert", "name"),
        ("Ines Varga", "ines varga", ""),  # the same name
        ("New York", "San Diego", ""),  # places, not people
        ("Harbour Bridge", "Tower Bridge", ""),
        ("Varga", "Price", ""),  # one word and no title: could be anything
        ("reopened", "closed", ""),
        ("footpath", "walkway", ""),
        ("12", "13", ""),  # a bare number is not a date
        ("summer", "winter", ""),  # a season needs a year
        ("March", "Tom Price", ""),  # a date for a name is neither
    ],
)
def test_swap_kinds(old: str, new: str, kind: str) -> None:
    assert swap_kind(old, new) == kind


def test_a_title_before_the_span_makes_one_word_a_name() -> None:
    assert swap_kind("Varga", "Price", original_before="said Mayor ", perturbed_before="said Mayor ") == "name"
    assert swap_kind("Varga", "Price", original_before="said Mayor ", perturbed_before="the ") == ""
    assert swap_kind("Dr. Lee", "Dr. Kim") == "name"


def test_no_original_means_no_swap() -> None:
    assert swap_kind(None, "June") == "" and swap_kind("", "June") == ""


def test_parse_date_reads_the_parts() -> None:
    parsed = parse_date("Tuesday, 3 March 2020")
    assert parsed is not None and (parsed.weekday, parsed.day, parsed.month, parsed.year) == (1, 3, 3, 2020)
    assert parse_date("the bridge") is None and parse_date("31/13/2020") is None

"""Window arithmetic for NLI judges: judging/windows.py (pure, no model)."""

from __future__ import annotations

import pytest

from judging.windows import PairTemplate, reference_windows, template_from_probe

# (reference tokens, hypothesis tokens) over short, exact-fit, just-over and long references.
LENGTHS = [
    (reference_len, hypothesis_len)
    for hypothesis_len in (0, 1, 17, 60, 200, 400, 444)
    for reference_len in (0, 1, 31, 32, 33, 100, 447, 448, 449, 477, 509, 510, 511, 1000, 2000, 2001, 5003)
]


def budget(hypothesis_len: int, max_length: int = 512, specials: int = 3) -> int:
    return max_length - specials - hypothesis_len


@pytest.mark.parametrize(("reference_len", "hypothesis_len"), LENGTHS)
def test_windows_cover_every_reference_token_overlap_by_32_and_fit(reference_len: int, hypothesis_len: int) -> None:
    windows = reference_windows(reference_len, hypothesis_len)

    covered = set()
    for start, end in windows:
        assert 0 <= start < end <= reference_len or (start, end) == (0, 0) == (0, reference_len)
        covered.update(range(start, end))
        # [CLS] window [SEP] hypothesis [SEP] never passes 512 tokens, and the hypothesis is whole.
        assert 3 + (end - start) + hypothesis_len <= 512
    assert covered == set(range(reference_len))
    assert windows[0][0] == 0
    assert windows[-1][1] == reference_len
    segment = budget(hypothesis_len) - 32
    if len(windows) > 1:
        assert windows[0] == (0, segment)  # DESIGN.md: the first window is one segment, with nothing before it
    for (_, previous_end), (start, end) in zip(windows, windows[1:], strict=False):
        assert previous_end - start == 32  # exactly the overlap
        assert end - previous_end == min(segment, reference_len - previous_end)


@pytest.mark.parametrize(("reference_len", "hypothesis_len"), LENGTHS)
def test_window_count_is_the_fewest_the_segment_length_allows(reference_len: int, hypothesis_len: int) -> None:
    windows = reference_windows(reference_len, hypothesis_len)
    room = budget(hypothesis_len)
    segment = room - 32
    if reference_len <= max(segment, 0) or (segment < 1 and reference_len <= room):
        expected = 1
    else:
        expected = -(-reference_len // segment)  # one window per segment: ceil(reference / segment)
    assert len(windows) == expected


def test_windows_worked_by_hand() -> None:
    # 2,000 reference tokens, 60 hypothesis tokens: segments of 512 - 3 - 60 - 32 = 417 tokens at 0, 417, 834,
    # 1251, 1668; each window after the first starts 32 tokens before its segment.
    assert reference_windows(2000, 60) == [(0, 417), (385, 834), (802, 1251), (1219, 1668), (1636, 2000)]
    # Tiny numbers: max 20, 3 specials, 5 hypothesis tokens, overlap 4 -> segments of 8 at 0, 8, 16, 24.
    assert reference_windows(30, 5, max_length=20, overlap=4) == [(0, 8), (4, 16), (12, 24), (20, 30)]


def test_short_reference_is_one_window() -> None:
    assert reference_windows(10, 60) == [(0, 10)]
    assert reference_windows(417, 60) == [(0, 417)]  # exactly one segment: one window
    assert reference_windows(418, 60) == [(0, 417), (385, 418)]
    # DESIGN.md's segment length holds even where the whole reference would fit beside the hypothesis.
    assert reference_windows(449, 60) == [(0, 417), (385, 449)]


def test_empty_reference_is_one_empty_window() -> None:
    assert reference_windows(0, 60) == [(0, 0)]


def test_short_reference_fits_even_when_no_segment_would() -> None:
    # 480 hypothesis tokens leave 29 reference tokens: fewer than the overlap, but a 20-token reference fits whole.
    assert reference_windows(20, 480) == [(0, 20)]


def test_hypothesis_with_no_room_is_an_error_naming_the_lengths() -> None:
    with pytest.raises(ValueError, match=r"hypothesis has 509 tokens.*3 special tokens.*512 tokens"):
        reference_windows(100, 509)
    with pytest.raises(ValueError, match=r"hypothesis has 600 tokens"):
        reference_windows(0, 600)


def test_long_reference_with_no_room_for_a_segment_is_an_error() -> None:
    # 480 hypothesis tokens leave 29 a window; after a 32-token overlap nothing new fits.
    with pytest.raises(ValueError, match=r"reference has 100 tokens.*480 tokens.*overlap of 32.*segment length -3"):
        reference_windows(100, 480)
    # 476 leave 33: segments of one token, each window the 32 before it and itself (slow, but it covers everything).
    windows = reference_windows(40, 476)
    assert windows == [(max(0, start - 32), start + 1) for start in range(40)]


def test_other_settings_and_bad_settings() -> None:
    assert reference_windows(25, 2, max_length=16, overlap=0, specials=4) == [(0, 10), (10, 20), (20, 25)]
    with pytest.raises(ValueError, match="overlap cannot be negative"):
        reference_windows(10, 2, overlap=-1)
    with pytest.raises(ValueError, match="cannot be negative"):
        reference_windows(-1, 2)


def test_bert_template_builds_cls_reference_sep_hypothesis_sep() -> None:
    template = template_from_probe([101, 7, 8, 102, 9, 102], [0, 0, 0, 0, 1, 1], [7, 8], [9])
    assert template.specials == 3
    assert template.build([1, 2, 3], [4, 5]) == ([101, 1, 2, 3, 102, 4, 5, 102], [0, 0, 0, 0, 0, 1, 1, 1])
    assert template.build([], [4]) == ([101, 102, 4, 102], [0, 0, 1, 1])


def test_roberta_template_has_four_specials_and_no_token_types() -> None:
    template = template_from_probe([0, 7, 2, 2, 9, 9, 2], None, [7], [9, 9])
    assert template == PairTemplate(prefix=(0,), middle=(2, 2), suffix=(2,))
    assert template.specials == 4
    assert template.build([5, 6], [8]) == ([0, 5, 6, 2, 2, 8, 2], None)
    # With 4 specials the windows leave one token less for the reference.
    assert reference_windows(1000, 60, specials=template.specials)[0] == (0, 416)


def test_t5_template_without_prefix() -> None:
    template = template_from_probe([7, 1, 9, 1], None, [7], [9])
    assert (template.prefix, template.middle, template.suffix) == ((), (1,), (1,))


def test_probe_that_does_not_contain_the_texts_is_refused() -> None:
    with pytest.raises(ValueError, match="template cannot be read"):
        template_from_probe([101, 7, 102, 102], None, [7], [9])
    with pytest.raises(ValueError, match="token type ids"):
        template_from_probe([101, 7, 102, 9, 102], [0, 0], [7], [9])

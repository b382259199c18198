"""What a refused pair import advises: a pair file imported again names its item ids first (not the groups and
original ids they bring along), a file of another format says which format to choose, and the pairs wording of the
settings, the round page, the ratio panel and the API's JSON-body refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.template.loader import render_to_string

from annotate.models import Project
from annotate.services.pairs.configure import SETTING_BY_FIELD
from annotate.services.pairs.export import export_pairs
from annotate.services.pairs.ingest import PairImportFailed, import_pairs
from annotate.views.pairs.rounds.words import ratio_context
from tests.conftest import login
from tests.pairs.factories_formats import HADES_EXAMPLE, jsonl, pair_line, refused, snapshot
from tests.pairs.page_helpers import text_of
from tests.pairs.test_rounds import round_three_project

pytestmark = pytest.mark.django_db

OTHER_TEXT = {"perturbed": "Another text, 11 to 17 here.", "perturbed_start": 0, "perturbed_end": 7,
              "perturbed_words": "Another"}


def pair_file() -> bytes:
    """Two items of group g1 and one without a group or an original_id (its original's id is made from item c)."""
    return jsonl(pair_line(item_id="a", group="g1"),
                 pair_line(item_id="b", group="g1", perturbed_start=40, perturbed_end=47, perturbed_words="railway",
                           original_start=40, original_end=48, original_words="footpath"),
                 pair_line(item_id="c", original="Another original.", original_start=0, original_end=7,
                           original_words="Another", **OTHER_TEXT))


def test_a_pair_file_imported_again_names_each_item_id_only(pairs_project: Project) -> None:
    import_pairs(pairs_project, [("p.jsonl", pair_file())], "pairs")
    assert refused(pairs_project, pair_file(), "pairs", name="p.jsonl") == [
        f"p.jsonl: line {number}: field 'item_id' '{item_id}' is already in project 'pairs' (imported before?)"
        for number, item_id in ((1, "a"), (2, "b"), (3, "c"))
    ]


def test_the_pair_export_imported_again_names_each_item_id_only(pairs_project: Project) -> None:
    import_pairs(pairs_project, [("p.jsonl", pair_file())], "pairs")
    # The export gives every line its original_id and a group: neither is reported, the item ids explain them.
    exported = export_pairs(pairs_project, "pairs").encode()
    assert refused(pairs_project, exported, "pairs", name="export.jsonl") == [
        f"export.jsonl: line {number}: field 'item_id' '{item_id}' is already in project 'pairs' (imported before?)"
        for number, item_id in ((1, "a"), (2, "b"), (3, "c"))
    ]


def test_a_group_that_gets_a_new_item_is_still_refused(pairs_project: Project) -> None:
    import_pairs(pairs_project, [("p.jsonl", pair_file())], "pairs")
    content = jsonl(pair_line(item_id="a", group="g1"), pair_line(item_id="d", group="g1", perturbed_start=40,
                                                                   perturbed_end=47, perturbed_words="railway"))
    # Item d is new, so its group and the original it shares with a are conflicts of their own: still named.
    assert refused(pairs_project, content, "pairs", name="q.jsonl") == [
        "q.jsonl: line 1: field 'item_id' 'a' is already in project 'pairs' (imported before?)",
        "q.jsonl: line 1: field 'original_id': project 'pairs' already has an original 'original-of-a', the id this "
        "line's original would get; give the line an original_id",
        "q.jsonl: line 1: field 'group' 'g1': project 'pairs' already has a perturbed text in this group",
    ]


RAW = jsonl({"id": "t1", "text": "The bridge opened in 1911."}, {"id": "t2", "text": "It carries a footpath."})
PAIRS = jsonl(pair_line(item_id="i1"), pair_line(item_id="i2", **OTHER_TEXT))
FILES = {"raw": RAW, "pairs": PAIRS, "hades": HADES_EXAMPLE.read_bytes()}
NAMES = {"raw": "raw (raw texts to perturb)", "pairs": "pairs (FaithLab's pair format)",
         "hades": "hades (HaDes release file)"}
WHY = {"raw": "its fields are exactly id and text", "pairs": "it has the fields item_id and perturbed",
       "hades": "it has the fields replaced and replaced_ids"}
# Each line's own error under the wrong format, as before: the first message is added, these stay.
LINE_ERRORS = {
    ("raw", "pairs"): "unknown field 'id'; a pairs line has only",
    ("raw", "hades"): "missing field 'replaced'",
    ("pairs", "raw"): "unknown field ",
    ("pairs", "hades"): "missing field 'replaced'",
    ("hades", "raw"): "unknown field ",
    ("hades", "pairs"): "unknown field ",
}


@pytest.mark.parametrize(("given", "chosen"), list(LINE_ERRORS))
def test_a_file_of_another_format_says_once_which_format_to_choose(pairs_project: Project, given: str,
                                                                   chosen: str) -> None:
    messages = refused(pairs_project, FILES[given], chosen)
    assert messages[0] == (f"in.jsonl: line 1: this looks like a {NAMES[given]} file ({WHY[given]}), not a "
                           f"{NAMES[chosen]} file: choose format {given}")
    assert sum("looks like" in message for message in messages) == 1
    lines = len(FILES[given].splitlines())
    assert len(messages) == 1 + lines
    assert all(LINE_ERRORS[(given, chosen)] in message for message in messages[1:])


def test_a_file_of_the_chosen_format_with_a_bad_line_gets_no_format_hint(pairs_project: Project) -> None:
    content = jsonl({"id": "t1", "text": "Fine."}, {"id": "t2", "text": " "})
    assert refused(pairs_project, content, "raw") == ["in.jsonl: line 2: field 'text' is empty"]


def test_each_file_of_another_format_gets_its_own_hint(pairs_project: Project) -> None:
    before = snapshot()
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(pairs_project, [("a.jsonl", RAW), ("b.jsonl", PAIRS)], "hades")
    assert snapshot() == before
    messages = caught.value.messages
    assert [message for message in messages if "looks like" in message] == [
        f"a.jsonl: line 1: this looks like a {NAMES['raw']} file ({WHY['raw']}), not a {NAMES['hades']} file: "
        "choose format raw",
        f"b.jsonl: line 1: this looks like a {NAMES['pairs']} file ({WHY['pairs']}), not a {NAMES['hades']} file: "
        "choose format pairs",
    ]
    assert messages.index(next(m for m in messages if m.startswith("b.jsonl: line 1: this looks"))) == 3


# --- wording ------------------------------------------------------------------------------------------------------


def test_the_round_page_says_the_detector_was_trained_on_consensus_or_imported_label_items(
    pairs_project: Project, admin_user: Any
) -> None:
    round_three_project(pairs_project)
    html = login(admin_user).get("/projects/pairs/pairs/rounds/2/").content.decode()
    assert "trained on 40 consensus or imported-label items, 20 H" in html


def test_the_ratio_panel_says_summed_r_is_not_an_average_of_the_splits() -> None:
    ratio = {"R": 4.3333, "action": "keep_share_of_n", "tp": 33, "fp": 42, "tn": 3, "fn": 42, "keep_predicted_h": 1.0,
             "keep_predicted_n": 0.2308, "cross_validation": {"repeats": 5, "items": 24, "r_low": 0.0,
                                                              "r_high": 3.0, "agree": False}}
    panel = " ".join(render_to_string("annotate/pairs/_ratio.html", {"ratio": ratio_context(ratio)}).split())
    assert "each split alone gives R from" in panel
    assert ("(R of the summed counts is not an average of the splits' R: each is (TN−FN)/(TP−FP) of its own "
            "counts, and the splits' denominators TP−FP can differ in sign)") in panel.replace("&#x27;", "'")


def test_the_min_counts_setting_says_it_gates_training_and_r(pairs_project: Project, admin_user: Any) -> None:
    label = SETTING_BY_FIELD["min_counts"].label
    assert label == "Labelled items needed to train the detector and for the subsampling ratio"
    html = login(admin_user).get("/projects/pairs/").content.decode()
    assert label in text_of(html, r'<label[^>]*data-setting="min_counts">(.*?)<input')


def test_a_json_import_into_a_pairs_project_shows_the_pairs_formats(pairs_project: Project,
                                                                    admin_user: Any) -> None:
    answer = login(admin_user).generic("POST", "/api/projects/pairs/imports/", json.dumps({"format": "pairs"}),
                                       content_type="application/json")
    assert answer.status_code == 400
    [message] = answer.json()["file"]
    assert "e.g. curl -F format=pairs -F file=@pairs.jsonl (format raw, pairs or hades)" in message
    assert "faithbench" not in message

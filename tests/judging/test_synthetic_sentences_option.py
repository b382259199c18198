"""The number of sentences per output is a choice on the synthetic-set forms and in synthetic_set, not fixed at 5:
the demo's rewrites (two-sentence outputs) import again from the command line as the README shows."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotate.models import Project
from judging.models import SyntheticItem, SyntheticSet

DEMO_REWRITES = Path(__file__).resolve().parents[2] / "fixtures" / "demo_synthetic.jsonl"


@pytest.fixture
def demo(db: None) -> Project:
    call_command("load_demo", stdout=StringIO())
    return Project.objects.get(slug="demo")


def test_the_command_imports_the_demo_rewrites_with_their_sentence_count(demo: Project) -> None:
    shipped = SyntheticSet.objects.get(project=demo, name="demo-synthetic")
    with pytest.raises(CommandError, match="5"):  # the default: five-sentence outputs, and the demo has none
        call_command("synthetic_set", project="demo", name="again", import_file=str(DEMO_REWRITES), stdout=StringIO())
    assert not SyntheticSet.objects.filter(project=demo, name="again").exists()

    out = StringIO()
    call_command("synthetic_set", project="demo", name="again", import_file=str(DEMO_REWRITES),
                 sentences_per_output="2", stdout=out)
    again = SyntheticSet.objects.get(project=demo, name="again")
    assert again.sentences_per_output == 2
    assert "outputs of 2 sentences" in out.getvalue()
    # The same file, the same seed: the same items as the set the demo loader built.
    assert (SyntheticItem.objects.filter(synthetic_set=again).count()
            == SyntheticItem.objects.filter(synthetic_set=shipped).count() > 0)


def test_a_sentence_count_that_is_no_whole_number_is_refused(demo: Project) -> None:
    with pytest.raises(CommandError, match="--sentences-per-output must be a whole number"):
        call_command("synthetic_set", project="demo", name="x", import_file=str(DEMO_REWRITES),
                     sentences_per_output="two", stdout=StringIO())
    assert not SyntheticSet.objects.filter(project=demo, name="x").exists()


def test_the_import_form_takes_the_sentence_count(demo: Project) -> None:
    client = Client()
    client.login(username="admin", password="demo")
    page = client.get("/projects/demo/synthetic/").content.decode()
    assert 'name="sentences_per_output"' in page
    with DEMO_REWRITES.open("rb") as upload:
        response = client.post("/projects/demo/synthetic/import/",
                               {"name": "form-made", "seed": "0", "sentences_per_output": "2", "file": upload})
    assert response.status_code in (200, 302), response.content.decode()[:500]
    assert SyntheticSet.objects.get(project=demo, name="form-made").sentences_per_output == 2

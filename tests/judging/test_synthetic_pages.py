"""The synthetic set pages (admins only) and the synthetic_set / judge_tables commands."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotate.models import Membership
from judging.models import Judge, Judgement, JudgeRun, SyntheticItem, SyntheticRewrite, SyntheticSet
from judging.services.synthetic import create_synthetic_set, import_rewrites, paper_tables
from tests.conftest import make_user
from tests.judging.llm_server import LoopbackLLM
from tests.judging.synthetic_scene import add_outputs, rewrite_of, writer_judge, writer_script

G1 = ["Lintown's Harbour Bridge reopened on Tuesday.", "Repairs took eight weeks.",
      "Engineers replaced 140 cables 🌉.", "The work cost 12.4 million euros.",
      "The speed limit is 30 km/h until March."]


def rewrites_file() -> bytes:
    records = [{"sample": "g1", "sentence": index, "type": "intrinsic", "rewritten": rewrite_of("intrinsic", s)}
               for index, s in enumerate(G1)]
    records.append({"sample": "g2", "sentence": 0, "type": "extrinsic", "rewritten": "The bridge reopened at dawn."})
    return "\n".join(json.dumps(record, ensure_ascii=False) for record in records).encode()


@pytest.fixture
def judged_set(project):
    """g1 with gold and five intrinsic items, g2 gold only; an LLM judge scored them 5, 4 | 4, 3, 2, fail, 1."""
    add_outputs(project)
    synthetic_set = import_rewrites(project, "paper", rewrites_file(), "rewrites.jsonl", seed=2)
    judge = Judge.objects.create(project=project, name="llm-<b>", kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                                 model="m", with_reasoning=False)
    run = JudgeRun.objects.create(project=project, judge=judge, scope="synthetic", synthetic_set=synthetic_set,
                                  status="done")
    scores = {("g1", "gold", 0): 5, ("g2", "gold", 0): 4, ("g1", "intrinsic", 20): 4, ("g1", "intrinsic", 40): 3,
              ("g1", "intrinsic", 60): 2, ("g1", "intrinsic", 80): None, ("g1", "intrinsic", 100): 1}
    for item in SyntheticItem.objects.filter(synthetic_set=synthetic_set).select_related("sample"):
        score = scores[(item.sample.external_id, item.type, item.percent)]
        Judgement.objects.create(run=run, synthetic_item=item, status="ok" if score else "parse_error", score=score,
                                 latency_seconds=2.0, output_tokens=8, cost=0.001)
    return synthetic_set


@pytest.fixture
def auditor(project):
    user = make_user("grace")
    Membership.objects.create(project=project, user=user, role=Membership.Role.AUDITOR)
    return user


def set_url(synthetic_set: SyntheticSet) -> str:
    return reverse("judging-synthetic-set", args=[synthetic_set.project.slug, synthetic_set.pk])


def test_admin_sees_the_sets_and_the_forms(project, judged_set, admin_user, client_for):
    response = client_for(admin_user).get(reverse("judging-synthetic", args=[project.slug]))
    assert response.status_code == 200
    page = response.content.decode()
    assert set_url(judged_set) in page
    assert 'data-role="create-set"' in page and 'data-role="import-set"' in page
    assert reverse("judging-prompt", args=[project.slug, "intrinsic"]) in page
    assert reverse("judging-prompt", args=[project.slug, "extrinsic"]) in page


def test_admin_sees_the_three_tables_and_the_chart(judged_set, admin_user, client_for):
    response = client_for(admin_user).get(set_url(judged_set))
    assert response.status_code == 200
    page = response.content.decode()
    # Residual by hand: gold (0 + 1) / 2 = 0.5; intrinsic (3 + 2 + 1 + 0) / 4 = 1.5; overall 7 / 6.
    assert 'data-column="gold" data-value="0.5000"' in page
    assert 'data-column="intrinsic" data-value="1.5000"' in page
    assert 'data-column="overall" data-value="1.1667"' in page
    assert "1 failed" in page
    # Sensitivity: 5, 4, 3, 2, -, 1 and delta (1 - 5) / 5.
    assert 'data-role="delta" data-value="-0.8000"' in page
    assert "mean at 100% − mean at 0%" in page
    # Cost per call: 2 s, 8 tokens, $0.001.
    assert 'data-column="latency">2.000<' in page
    # The chart: inline SVG with one line (llm, intrinsic) broken at the failed 80% step, and its table beside it.
    svg = re.search(r"<svg viewBox=.*?</svg>", page, re.DOTALL).group(0)
    assert 'role="img"' in svg and "<title id=\"sensitivity-title\">" in svg
    assert svg.count("<polyline") == 1  # 0-60% joined; the lone 100% point has no segment
    assert svg.count("<circle") == 5
    assert 'data-role="sensitivity-table"' in page
    # Names are escaped.
    assert "llm-&lt;b&gt;" in page and "llm-<b>" not in page
    # Examples: replaced sentences marked.
    assert 'data-role="examples"' in page and 'class="rewrite" data-replaced=' in page


def test_the_htmx_poll_gets_only_the_progress(judged_set, admin_user, client_for):
    response = client_for(admin_user).get(set_url(judged_set), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    fragment = response.content.decode()
    assert 'data-role="synthetic-progress"' in fragment and "<html" not in fragment
    assert "hx-get" not in fragment  # the set is done: polling stops


def test_an_active_set_polls(judged_set, admin_user, client_for):
    SyntheticSet.objects.filter(pk=judged_set.pk).update(status="running")
    page = client_for(admin_user).get(reverse("judging-synthetic", args=[judged_set.project.slug])).content.decode()
    assert f'hx-get="{set_url(judged_set)}"' in page


@pytest.mark.parametrize("user_fixture", ["alice", "auditor"])
def test_annotators_and_auditors_get_403(request, project, judged_set, client_for, user_fixture):
    client = client_for(request.getfixturevalue(user_fixture))
    assert client.get(reverse("judging-synthetic", args=[project.slug])).status_code == 403
    assert client.get(set_url(judged_set)).status_code == 403
    assert client.post(reverse("judging-synthetic-create", args=[project.slug]), {"name": "x"}).status_code == 403
    assert client.post(reverse("judging-synthetic-run", args=[project.slug, judged_set.pk])).status_code == 403


def test_outsiders_get_404(project, judged_set, charlie, client_for):
    client = client_for(charlie)
    assert client.get(reverse("judging-synthetic", args=[project.slug])).status_code == 404
    assert client.get(set_url(judged_set)).status_code == 404


def test_creating_a_set_from_the_page(project, admin_user, client_for):
    add_outputs(project)
    writer = writer_judge(project, "http://127.0.0.1:9/v1")
    client = client_for(admin_user)
    assert client.get(reverse("judging-synthetic-create", args=[project.slug])).status_code == 405
    response = client.post(reverse("judging-synthetic-create", args=[project.slug]),
                           {"name": "from page", "writer": writer.pk, "seed": "4"})
    created = SyntheticSet.objects.get(name="from page")
    assert response.status_code == 302 and response["Location"] == set_url(created)
    assert (created.seed, created.writer, created.status, created.total) == (4, writer, "queued", 20)
    waiting = client.get(set_url(created))
    assert waiting.status_code == 200
    assert f'hx-get="{set_url(created)}?on=page"' in waiting.content.decode()  # polls while queued
    assert "No judgements yet." in waiting.content.decode()
    again = client.post(reverse("judging-synthetic-create", args=[project.slug]),
                        {"name": "from page", "writer": writer.pk, "seed": "0"})
    assert again.status_code == 400
    assert "already exists" in again.content.decode()
    assert SyntheticSet.objects.count() == 1


def test_a_bad_import_shows_each_line_and_writes_nothing(project, admin_user, client_for):
    add_outputs(project)
    upload = SimpleUploadedFile("mine.jsonl", b'{"sample": "g1", "sentence": 9, "type": "intrinsic", '
                                              b'"rewritten": "X."}\n{"sample": "zz", "sentence": 0, '
                                              b'"type": "intrinsic", "rewritten": "X."}\n')
    response = client_for(admin_user).post(reverse("judging-synthetic-import", args=[project.slug]),
                                           {"name": "imp", "file": upload, "seed": "0"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "mine.jsonl, line 1, field &#x27;sentence&#x27;: 9 is not a sentence index 0..4" in page
    assert "mine.jsonl, line 2, field &#x27;sample&#x27;: no sample with external id &#x27;zz&#x27;" in page
    assert not SyntheticSet.objects.exists()


def test_starting_a_judge_run_over_the_set(project, judged_set, admin_user, client_for):
    judge = Judge.objects.create(project=project, name="second", kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                                 model="m")
    response = client_for(admin_user).post(reverse("judging-synthetic-run", args=[project.slug, judged_set.pk]),
                                           {"judge": judge.pk})
    assert response.status_code == 302
    run = JudgeRun.objects.get(judge=judge)
    assert (run.scope, run.synthetic_set, run.total) == ("synthetic", judged_set, 7)


def test_a_run_over_the_set_can_ask_again_for_unreadable_answers(project, judged_set, admin_user, client_for):
    """The set's run form offers the judges page's ask_again choice, and the run records it."""
    judge = Judge.objects.create(project=project, name="second", kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                                 model="m")
    client = client_for(admin_user)
    page = client.get(set_url(judged_set)).content.decode()
    form = re.search(r'<form[^>]*data-role="start-run".*?</form>', page, re.S).group(0)
    assert 'name="ask_again"' in form and "judging/pages.css" in page
    assert f'data-kind="{Judge.Kind.RUBRIC}"' in form  # the box is hidden for other kinds by pages.css
    response = client.post(reverse("judging-synthetic-run", args=[project.slug, judged_set.pk]),
                           {"judge": judge.pk, "ask_again": "on"})
    assert response.status_code == 302
    assert JudgeRun.objects.get(judge=judge).ask_again is True


def test_judge_tables_command_prints_the_tables(judged_set):
    out = StringIO()
    call_command("judge_tables", "--project", judged_set.project.slug, "--set", "paper", "--json", stdout=out)
    printed = json.loads(out.getvalue())
    assert set(printed) >= {"residual", "sensitivity", "cost"}
    assert printed == json.loads(json.dumps(paper_tables(judged_set)))
    (residual,) = printed["residual"]["rows"]
    assert residual["overall"] == pytest.approx(7 / 6) and residual["failed"] == 1
    text = StringIO()
    call_command("judge_tables", "--project", judged_set.project.slug, "--set", "paper", stdout=text)
    assert "llm-<b>" in text.getvalue() and "-0.800" in text.getvalue()
    with pytest.raises(CommandError, match="no synthetic set named 'nope'.*sets: paper"):
        call_command("judge_tables", "--project", judged_set.project.slug, "--set", "nope")


def test_synthetic_set_command_writes_a_set_in_the_foreground(project):
    add_outputs(project)
    with LoopbackLLM(script=writer_script()) as server:
        writer_judge(project, server.base_url)
        out = StringIO()
        call_command("synthetic_set", "--project", project.slug, "--name", "cli", "--writer-judge", "writer",
                     "--seed", "3", "--json", stdout=out)
    summary = json.loads(out.getvalue())
    assert summary["status"] == "done" and summary["seed"] == 3
    assert summary["items"] == {"gold": 2, "intrinsic": 10, "extrinsic": 10}
    assert summary["rewrites"] == {"needed": 20, "ok": 20, "error": 0}
    assert server.chat_calls == 20


def test_synthetic_set_command_imports_and_refuses_clearly(project, tmp_path):
    add_outputs(project)
    good = tmp_path / "rewrites.jsonl"
    good.write_bytes(rewrites_file())
    out = StringIO()
    call_command("synthetic_set", "--project", project.slug, "--name", "imp", "--import", str(good), "--json",
                 stdout=out)
    assert json.loads(out.getvalue())["items"] == {"gold": 2, "intrinsic": 5, "extrinsic": 0}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample": "g1", "sentence": 0, "type": "intrinsic"}\n')
    with pytest.raises(CommandError, match="bad.jsonl, line 1, field 'rewritten': missing"):
        call_command("synthetic_set", "--project", project.slug, "--name", "imp2", "--import", str(bad))
    with pytest.raises(CommandError, match="no judge named 'ghost'"):
        call_command("synthetic_set", "--project", project.slug, "--name", "imp3", "--writer-judge", "ghost")
    assert list(SyntheticSet.objects.values_list("name", flat=True)) == ["imp"]


def test_retrying_failed_rewrites_from_the_page(project, admin_user, client_for):
    samples = add_outputs(project)
    writer = writer_judge(project, "http://127.0.0.1:9/v1")
    created = create_synthetic_set(project, name="retry", writer=writer, queue=False)
    SyntheticRewrite.objects.create(synthetic_set=created, sample=samples[0], sentence_index=0, type="intrinsic",
                                    original=G1[0], status="error", error="the answer holds no JSON object", raw="?")
    SyntheticRewrite.objects.create(synthetic_set=created, sample=samples[0], sentence_index=1, type="intrinsic",
                                    original=G1[1], rewritten="NOT " + G1[1], status="ok")
    SyntheticSet.objects.filter(pk=created.pk).update(status="done", done=2)
    client = client_for(admin_user)
    page = client.get(set_url(created)).content.decode()
    assert 'data-role="retry-failed"' in page and "the answer holds no JSON object" in page
    response = client.post(reverse("judging-synthetic-resume", args=[project.slug, created.pk]), {"retry_failed": "1"})
    assert response.status_code == 302
    created.refresh_from_db()
    assert (created.status, created.done) == ("queued", 1)
    assert list(created.rewrites.values_list("status", flat=True)) == ["ok"]


def test_an_imported_set_cannot_be_resumed(project, judged_set, admin_user, client_for):
    client = client_for(admin_user)
    response = client.post(reverse("judging-synthetic-resume", args=[project.slug, judged_set.pk]), follow=True)
    assert "this set was imported and has no writer to ask again" in response.content.decode()
    judged_set.refresh_from_db()
    assert judged_set.status == "done"


def test_the_project_page_links_admins_to_the_synthetic_sets(project, admin_user, alice, client_for):
    url = reverse("judging-synthetic", args=[project.slug])
    assert url in client_for(admin_user).get(reverse("project", args=[project.slug])).content.decode()
    assert url not in client_for(alice).get(reverse("project", args=[project.slug])).content.decode()

"""A judge's prices: blank is not known (a call's cost is then not known, null, "—"), 0 is free (a local server: its
calls cost 0). The judges form starts blank; the form, the API and the `judge` command read blank and 0 the same way;
migration 0010 keeps stored rows meaning what they meant. And one way to write prices, on every page and question
(judging.costs.prices_text, the `judge_prices` filter)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotate.models import Project
from judging.confirm import run_question
from judging.costs import price_text, prices_text
from judging.models import Judge, JudgeRun
from judging.services import runs
from tests.conftest import login
from tests.judging.audit_helpers import read_html
from tests.judging.llm_server import LoopbackLLM, Reply
from tests.judging.run_factories import add_samples
from tests.migrations import migrate, migrate_to_latest

RUBRIC_POST = {
    "rubric-name": "local", "rubric-base_url": "http://127.0.0.1:8000/v1", "rubric-model": "llama",
    "rubric-api_key_env": "", "rubric-with_reasoning": "on", "rubric-concurrency": "2",
    "rubric-timeout_seconds": "30", "rubric-max_retries": "1",
}


def judges_url(project: Project) -> str:
    return reverse("judging-judges", args=[project.slug])


def scored(body: dict[str, Any], attempt: int) -> Reply:
    return Reply(content='{"reasoning": "fine", "score": 4}', prompt_tokens=1000, completion_tokens=200)


# --------------------------------------------------------------------------- what a price means


def test_blank_prices_cost_not_known_and_zero_prices_cost_zero() -> None:
    unknown = Judge(name="u", kind=Judge.Kind.RUBRIC)
    free = Judge(name="f", kind=Judge.Kind.RUBRIC, price_input_per_mtok=0, price_output_per_mtok=0)
    priced = Judge(name="p", kind=Judge.Kind.RUBRIC, price_input_per_mtok=2.0, price_output_per_mtok=10.0)
    half = Judge(name="h", kind=Judge.Kind.RUBRIC, price_input_per_mtok=2.0)
    assert (unknown.price_input_per_mtok, unknown.price_output_per_mtok) == (None, None)  # the default: not known
    assert unknown.cost_of(1000, 200) is None
    assert free.cost_of(1000, 200) == 0.0
    assert priced.cost_of(1000, 200) == pytest.approx(0.004)  # 1000 x $2/M + 200 x $10/M
    assert half.cost_of(1000, 200) is None  # the output tokens' price is not known
    assert half.cost_of(1000, 0) == pytest.approx(0.002)  # no output tokens: nothing unknown to price
    assert unknown.cost_of(0, 0) == 0.0 and unknown.cost_of(None, 200) is None


@pytest.mark.django_db
def test_a_free_judge_s_run_costs_zero_everywhere_and_a_judge_without_prices_not_known(
    project: Project, admin_user: Any
) -> None:
    add_samples(project, 2)
    with LoopbackLLM(scored) as server:
        free = Judge.objects.create(project=project, name="free", kind=Judge.Kind.RUBRIC, base_url=server.base_url,
                                    model="test-model", max_retries=0, price_input_per_mtok=0, price_output_per_mtok=0)
        # Score only: other calls than the free judge's, not answered from the call cache.
        unknown = Judge.objects.create(project=project, name="unknown", kind=Judge.Kind.RUBRIC,
                                       base_url=server.base_url, model="test-model", max_retries=0,
                                       with_reasoning=False)
        free_run = runs.execute_run(runs.start_run(project, free, queue=False).pk)
        unknown_run = runs.execute_run(runs.start_run(project, unknown, queue=False).pk)
    assert list(free_run.judgements.values_list("cached", "cost")) == [(False, 0.0)] * 2
    assert list(unknown_run.judgements.values_list("cached", "cost")) == [(False, None)] * 2
    client = login(admin_user)
    free_summary = client.get(f"/api/judge-runs/{free_run.pk}/").json()["summary"]
    assert (free_summary["cost"], free_summary["reasons"].get("cost")) == (0.0, None)
    assert [row["cost"] for row in client.get(f"/api/judge-runs/{free_run.pk}/judgements/").json()["results"]] == [
        0.0, 0.0]
    assert client.get(f"/api/judge-runs/{unknown_run.pk}/").json()["summary"]["cost"] is None
    page = client.get(reverse("judging-run", args=[project.slug, free_run.pk])).content.decode()
    assert 'data-role="unpriced"' not in page  # not "— no prices": the calls cost 0


# --------------------------------------------------------------------------- the form, the API, the command


@pytest.mark.django_db
def test_the_new_judge_form_starts_with_blank_prices_and_reads_blank_as_not_known_and_0_as_free(
    project: Project, admin_user: Any
) -> None:
    admin = login(admin_user)
    form = read_html(admin.get(judges_url(project)).content).find("form", data_role="rubric-judge-form")[0]
    prices = {field.attrs["name"]: field.attrs.get("value") for field in form.find("input")
              if field.attrs.get("name", "").startswith("rubric-price")}
    assert prices == {"rubric-price_input_per_mtok": None, "rubric-price_output_per_mtok": None}

    admin.post(reverse("judging-judge-create", args=[project.slug, "rubric"]), RUBRIC_POST)
    admin.post(reverse("judging-judge-create", args=[project.slug, "rubric"]), {
        **RUBRIC_POST, "rubric-name": "free", "rubric-price_input_per_mtok": "0", "rubric-price_output_per_mtok": "0"})
    stored = {judge.name: (judge.price_input_per_mtok, judge.price_output_per_mtok) for judge in Judge.objects.all()}
    assert stored == {"local": (None, None), "free": (0.0, 0.0)}

    # Editing a free judge's prices to blank makes them not known again.
    free = Judge.objects.get(name="free")
    prefix = f"judge-{free.pk}-"
    edit = {prefix + name.removeprefix("rubric-"): value for name, value in RUBRIC_POST.items()}
    edit[prefix + "name"] = "free"
    admin.post(reverse("judging-judge-update", args=[project.slug, free.pk]), {
        **edit, prefix + "price_input_per_mtok": "", prefix + "price_output_per_mtok": ""})
    free.refresh_from_db()
    assert (free.price_input_per_mtok, free.price_output_per_mtok) == (None, None)


@pytest.mark.django_db
def test_the_api_takes_null_or_0_and_gives_them_back(project: Project, admin_user: Any) -> None:
    client = login(admin_user)

    def create(name: str, **prices: Any) -> dict[str, Any]:
        body = {"name": name, "kind": "rubric", "base_url": "http://localhost:11434/v1", "model": name, **prices}
        answer = client.post(f"/api/projects/{project.slug}/judges/", json.dumps(body), content_type="application/json")
        assert answer.status_code == 201, answer.json()
        return answer.json()

    assert (create("left-out")["price_input_per_mtok"], create("nulls", price_input_per_mtok=None,
                                                               price_output_per_mtok=None)["price_output_per_mtok"]) == (
        None, None)
    free = create("free", price_input_per_mtok=0, price_output_per_mtok=0)
    assert (free["price_input_per_mtok"], free["price_output_per_mtok"]) == (0.0, 0.0)
    assert Judge.objects.get(name="free").cost_of(100, 10) == 0.0
    assert Judge.objects.get(name="nulls").cost_of(100, 10) is None


@pytest.mark.django_db
def test_the_judge_command_takes_0_as_free_and_an_empty_price_as_not_known(project: Project) -> None:
    add_samples(project, 1)

    def judge_json(*args: str) -> dict[str, Any]:
        out = io.StringIO()
        call_command("judge", "--project", project.slug, "--base-url", server.base_url, "--model", "test-model", *args,
                     "--json", "--ask-again", stdout=out)
        return json.loads(out.getvalue())

    with LoopbackLLM(lambda body, attempt: Reply(content="not json")) as server:  # parse errors: asked again each run
        free = judge_json("--price-input", "0", "--price-output", "0")
        judge = Judge.objects.get()
        assert (judge.price_input_per_mtok, judge.price_output_per_mtok, free["cost"]) == (0.0, 0.0, 0.0)
        # Score only: a judge of its own, its prices given as not known.
        unknown = judge_json("--score-only", "--price-input", "", "--price-output", "")
        judge = Judge.objects.get(with_reasoning=False)
        assert (judge.price_input_per_mtok, judge.price_output_per_mtok, unknown["cost"]) == (None, None, None)
        assert unknown["calls"] == 1


# --------------------------------------------------------------------------- one way to write prices


def test_prices_read_the_same_everywhere() -> None:
    assert [price_text(price) for price in (2.5, 10, 0.075, 0, None, 1200)] == [
        "$2.50", "$10.00", "$0.075", "$0.00", "not known", "$1,200.00"]
    assert prices_text(2.5, 10) == "$2.50 in, $10.00 out"
    assert prices_text(0, 0) == "free ($0.00 in, $0.00 out)"
    assert prices_text(None, None) == "not known"
    assert prices_text(2.5, None) == "$2.50 in, not known out"
    judge = Judge(name="gpt", kind=Judge.Kind.RUBRIC, model="m", base_url="http://x/v1", max_retries=0,
                  price_input_per_mtok=2.5, price_output_per_mtok=10)
    assert "gpt is priced at $2.50 in, $10.00 out per million tokens" in run_question(judge)
    judge.price_input_per_mtok = judge.price_output_per_mtok = 0
    assert "gpt is free ($0.00 per million tokens in and out)" in run_question(judge)


@pytest.mark.django_db
def test_the_judges_list_and_the_run_page_write_the_prices_alike(project: Project, admin_user: Any) -> None:
    judge = Judge.objects.create(project=project, name="gpt", kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                                 model="m", price_input_per_mtok=2.5, price_output_per_mtok=10)
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE)
    admin = login(admin_user)
    listed = read_html(admin.get(judges_url(project)).content).find("td", data_role="prices")[0].text.strip()
    run_page = admin.get(reverse("judging-run", args=[project.slug, run.pk])).content.decode()
    on_run = run_page.split('<tr data-figure="prices">', 1)[1].split('<td class="num">', 1)[1].split("</td>", 1)[0]
    assert listed == on_run == "$2.50 in, $10.00 out"


# --------------------------------------------------------------------------- migration 0010

BEFORE = [("judging", "0009_synthetic_set_queued_at")]
AFTER = [("judging", "0010_judge_prices_blank_means_not_known")]


@pytest.mark.django_db(transaction=True)
def test_migration_0010_makes_no_prices_and_calls_priced_at_nothing_not_known_and_keeps_the_rest() -> None:
    old = migrate(BEFORE)
    try:
        project = old.get_model("annotate", "Project").objects.create(name="P", slug="p")
        passage = old.get_model("annotate", "Passage").objects.create(project=project, text="Source text.")
        batch = old.get_model("annotate", "Batch").objects.create(project=project, name="b")
        samples = [old.get_model("annotate", "Sample").objects.create(
            project=project, batch=batch, passage=passage, summary=f"Output {n}.", position=n, external_id=str(n))
            for n in range(3)]
        judge_model, run_model = old.get_model("judging", "Judge"), old.get_model("judging", "JudgeRun")
        judgement_model = old.get_model("judging", "Judgement")
        none = judge_model.objects.create(project=project, name="none", kind="rubric")  # 0 and 0: "no prices"
        half = judge_model.objects.create(project=project, name="half", kind="rubric", price_output_per_mtok=10.0)
        imported = judge_model.objects.create(project=project, name="elsewhere", kind="imported")
        run = run_model.objects.create(project=project, judge=none, status="done")
        file_run = run_model.objects.create(project=project, judge=imported, scope="imported", status="done")
        half_run = run_model.objects.create(project=project, judge=half, status="done")
        made = {
            "unpriced": judgement_model.objects.create(run=run, sample=samples[0], status="ok", score=4,
                                                       input_tokens=100, output_tokens=20, cost=0.0),
            "no tokens": judgement_model.objects.create(run=half_run, sample=samples[0], status="ok", score=4,
                                                        input_tokens=0, output_tokens=0, cost=0.0),
            "cached": judgement_model.objects.create(run=half_run, sample=samples[1], status="ok", score=4,
                                                     input_tokens=100, output_tokens=20, cost=0.0, cached=True),
            "imported": judgement_model.objects.create(run=file_run, sample=samples[0], status="ok", score=4,
                                                       input_tokens=100, output_tokens=20, cost=0.0),
            "priced": judgement_model.objects.create(run=half_run, sample=samples[2], status="ok", score=4,
                                                     input_tokens=100, output_tokens=20, cost=0.0002),
        }

        new = migrate(AFTER)
        judges = {judge.name: (judge.price_input_per_mtok, judge.price_output_per_mtok)
                  for judge in new.get_model("judging", "Judge").objects.all()}
        assert judges["none"] == (None, None)
        assert judges["half"] == (0.0, 10.0)  # one price set: its 0 stays (free input)
        costs = {name: new.get_model("judging", "Judgement").objects.get(pk=row.pk).cost for name, row in made.items()}
        assert costs == {"unpriced": None, "no tokens": 0.0, "cached": 0.0, "imported": 0.0, "priced": 0.0002}
    finally:
        migrate_to_latest()


@pytest.mark.django_db
def test_the_judges_page_says_free_and_not_known_never_0_for_unknown(project: Project, admin_user: Any) -> None:
    Judge.objects.create(project=project, name="free", kind=Judge.Kind.RUBRIC, base_url="http://x/v1", model="m",
                         price_input_per_mtok=0, price_output_per_mtok=0)
    Judge.objects.create(project=project, name="unknown", kind=Judge.Kind.RUBRIC, base_url="http://x/v1", model="m")
    cells = [cell.text.strip() for cell in read_html(login(admin_user).get(judges_url(project)).content).find(
        "td", data_role="prices")]
    assert sorted(cells) == ["free ($0.00 in, $0.00 out)", "not known"]

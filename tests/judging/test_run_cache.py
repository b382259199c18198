"""The call cache of rubric judge runs (DESIGN.md, "Runs": an identical call is not paid twice): every answer the
endpoint gave, one that could not be read too, is served again, read with today's parser, so a repeated run makes no
call; a run started with ask_again asks again for the cached answers that do not parse as a score, and keeps that
choice when it is resumed. The option on the judges page and the run page (the API and the `judge` command have
theirs in test_judging_api.py and test_judge_command.py)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotate.models import Project, Sample
from judging.judges.rubric import build_request
from judging.models import CallCache, Judge, Judgement, JudgeRun
from judging.services import runs
from judging.services.judges import JudgeSettingsError, create_judge
from tests.annotate.results_scene import Tags, tags
from tests.conftest import login
from tests.judging.llm_server import LoopbackLLM, Reply, user_text
from tests.judging.run_factories import add_samples, tag_of
from tests.judging.tiny_nli import tiny_nli_fixture  # noqa: F401  (the tiny_nli_path fixture)

pytestmark = pytest.mark.django_db

# What the server answers for each sample the first time it is asked, and what that reads as.
FIRST_ANSWERS: dict[str, tuple[str, str, int | None]] = {
    "s0": ('{"reasoning": "All supported.", "score": 5}', "ok", 5),
    "s1": ('```json\n{"reasoning": "One slip.", "score": 3}\n```', "ok", 3),
    "s2": ("No idea, sorry.", "parse_error", None),  # garbage
    "s3": ('{"reasoning": "Great.", "score": 9}', "parse_error", None),  # out of range
    "s4": ('{"reasoning": "The output says nine we', "parse_error", None),  # truncated
}
NOW_CLEAN = '{"reasoning": "Read this time.", "score": 2}'


def mixed_script(body: dict[str, Any], attempt: int) -> Reply:
    """The first answers above; asked again, the truncated one (s4) comes back clean, the others the same."""
    tag = tag_of(user_text(body))
    if tag == "s5":
        return Reply(status=500)  # an endpoint error: no answer to keep
    if tag == "s4" and attempt > 0:
        return Reply(content=NOW_CLEAN)
    return Reply(content=FIRST_ANSWERS[tag][0])


def rubric_judge(project: Project, server: LoopbackLLM | str, **settings: Any) -> Judge:
    base_url = server if isinstance(server, str) else server.base_url
    values = {"name": "loop", "kind": "rubric", "base_url": base_url, "model": "test-model", "max_retries": 0}
    return create_judge(project, **(values | settings))


def run_once(project: Project, judge: Judge, **options: Any) -> JudgeRun:
    return runs.execute_run(runs.start_run(project, judge, queue=False, **options).pk)


def outcomes(run: JudgeRun) -> dict[str, tuple[str, int | None]]:
    return {j.sample.external_id: (j.status, j.score) for j in run.judgements.select_related("sample")}


def asked_since(server: LoopbackLLM, start: int) -> list[str | None]:
    return sorted(tag_of(user_text(body)) for body in server.requests[start:])


# ----------------------------------------------------------------------------- by default, every answer is served


def test_a_repeated_run_makes_no_call_for_any_answer_and_reads_the_same(project: Project) -> None:
    add_samples(project, 6)
    with LoopbackLLM(mixed_script) as server:
        judge = rubric_judge(project, server)
        first = run_once(project, judge)
        after_first = server.chat_calls
        second = run_once(project, judge)
        asked_again = asked_since(server, after_first)

    expected = {tag: (status, score) for tag, (_, status, score) in FIRST_ANSWERS.items()} | {"s5": ("error", None)}
    assert outcomes(first) == expected
    # Only the endpoint error is asked again: the five answers, three of them unreadable, come from the cache.
    assert asked_again == ["s5"]
    assert outcomes(second) == expected
    assert (second.calls, second.cached, second.scored, second.failed) == (1, 5, 2, 4)
    served = {j.sample.external_id: j for j in second.judgements.select_related("sample") if j.cached}
    assert {tag: j.raw for tag, j in served.items()} == {tag: raw for tag, (raw, _, _) in FIRST_ANSWERS.items()}
    assert all(j.cost == 0.0 and j.attempts == 0 for j in served.values())
    assert served["s3"].error  # the reason it could not be read comes with it
    assert CallCache.objects.count() == 5 and set(CallCache.objects.values_list("hits", flat=True)) == {1}


def test_a_cached_answer_is_read_with_today_s_parser(project: Project) -> None:
    thought, refused = add_samples(project, 2)
    with LoopbackLLM() as server:
        judge = rubric_judge(project, server)
        run = runs.start_run(project, judge, queue=False)
        rows = {
            # Written by a parser that read the draft score inside <think>: today's reads the answer after it.
            thought.pk: '<think>Draft: {"reasoning": "wrong year", "score": 2}</think>\n{"reasoning": "fine", "score": 4}',
            refused.pk: "I cannot help with that.",
        }
        for sample in (thought, refused):
            key = build_request(judge, run.rubric.text, sample.summary, sample.passage.text).cache_key
            CallCache.objects.create(key=key, model="test-model", request_mode="json_schema", raw=rows[sample.pk])
        run = runs.execute_run(run.pk)
        assert server.chat_calls == 0  # not even the endpoint check: nothing needed it
    assert outcomes(run) == {"s0": ("ok", 4), "s1": ("parse_error", None)}
    assert Judgement.objects.get(run=run, sample=thought).reasoning == "fine"
    assert run.cached == 2 and run.calls == 0


# ----------------------------------------------------------------------------- ask_again


def test_ask_again_asks_only_the_unreadable_answers_and_a_now_clean_one_becomes_a_score(project: Project) -> None:
    add_samples(project, 5)
    with LoopbackLLM(mixed_script) as server:
        judge = rubric_judge(project, server)
        run_once(project, judge)
        after_first = server.chat_calls
        again = run_once(project, judge, ask_again=True)
        asked_again = asked_since(server, after_first)
        after_again = server.chat_calls
        third = run_once(project, judge)
        after_third = server.chat_calls

    assert asked_again == ["s2", "s3", "s4"]  # the parse errors; the two scores came from the cache
    assert again.ask_again is True
    expected = {tag: (status, score) for tag, (_, status, score) in FIRST_ANSWERS.items()} | {"s4": ("ok", 2)}
    assert outcomes(again) == expected
    assert (again.calls, again.cached, again.scored) == (3, 2, 3)
    assert CallCache.objects.count() == 5
    assert CallCache.objects.filter(raw=NOW_CLEAN).count() == 1  # the new answer replaced the truncated one
    assert not CallCache.objects.filter(raw__contains="nine we").exists()
    # A run without the option serves every row again, the new score included.
    assert after_third == after_again
    assert outcomes(third) == expected and third.cached == 5


def test_ask_again_with_every_cached_answer_readable_makes_no_call(project: Project) -> None:
    add_samples(project, 3)
    with LoopbackLLM() as server:
        judge = rubric_judge(project, server)
        run_once(project, judge)
        after_first = server.chat_calls
        again = run_once(project, judge, ask_again=True)
        assert server.chat_calls == after_first
    assert (again.calls, again.cached, again.scored) == (0, 3, 3)


def test_ask_again_asks_identical_requests_once_in_a_run_even_chunks_apart(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    samples = add_samples(project, 4)
    # s3 asks exactly what s0 asks; one target a chunk, so s0's answer is in before s3 is read.
    Sample.objects.filter(pk=samples[3].pk).update(summary=samples[0].summary, passage=samples[0].passage)
    monkeypatch.setattr("judging.services.runs.rubric_calls.CHUNK", 1)
    with LoopbackLLM(lambda body, attempt: Reply(content="Still no score.")) as server:
        judge = rubric_judge(project, server, concurrency=1)
        first = run_once(project, judge)
        assert (server.chat_calls, first.calls, first.cached) == (3, 3, 1)
        again = run_once(project, judge, ask_again=True)
        assert server.chat_calls == 3 + 3  # s0, s1 and s2 again; s3 shares s0's answer
    assert (again.calls, again.cached, again.failed) == (3, 1, 4)


def test_a_resumed_run_keeps_its_ask_again_choice(project: Project) -> None:
    samples = add_samples(project, 4)
    with LoopbackLLM(lambda body, attempt: Reply(content="Unsure." if attempt == 0 else NOW_CLEAN)) as server:
        judge = rubric_judge(project, server)
        first = run_once(project, judge)
        assert first.failed == 4 and server.chat_calls == 4
        run = runs.start_run(project, judge, queue=False, ask_again=True)
        # A worker was killed after writing two judgements: the run is still "running", its choice on its row.
        for sample in samples[:2]:
            Judgement.objects.create(run=run, sample=sample, status="ok", score=1, raw="before the restart",
                                     attempts=1)
        JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
        run = runs.execute_run(run.pk)
        assert asked_since(server, 4) == ["s2", "s3"]  # asked again, not served the cached "Unsure."
    assert run.status == JudgeRun.Status.DONE and run.ask_again is True
    assert outcomes(run) == {"s0": ("ok", 1), "s1": ("ok", 1), "s2": ("ok", 2), "s3": ("ok", 2)}


def test_a_resumed_ask_again_run_serves_what_it_asked_before_the_restart(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer this run already paid for is not paid again after a killed worker: s3 asks what s0 asked."""
    samples = add_samples(project, 4)
    Sample.objects.filter(pk=samples[3].pk).update(summary=samples[0].summary, passage=samples[0].passage)
    monkeypatch.setattr("judging.services.runs.rubric_calls.CHUNK", 1)
    with LoopbackLLM(lambda body, attempt: Reply(content=f"Unsure about {tag_of(user_text(body))}.")) as server:
        judge = rubric_judge(project, server, concurrency=1)
        run_once(project, judge)
        assert server.chat_calls == 3  # s3 shared s0's call
        run = runs.start_run(project, judge, queue=False, ask_again=True)
        # Its first execution asked s0's call again, wrote the answer with s0's judgement, and its worker was killed.
        JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING, started_at=timezone.now())
        s0_row = CallCache.objects.get(raw="Unsure about s0.")
        CallCache.objects.filter(pk=s0_row.pk).update(created_at=timezone.now())
        Judgement.objects.create(run=run, sample=samples[0], status="parse_error", raw=s0_row.raw, attempts=1)
        run = runs.execute_run(run.pk)
        assert asked_since(server, 3) == ["s1", "s2"]  # not s0's call a second time for s3
    assert run.status == JudgeRun.Status.DONE
    s3 = run.judgements.get(sample=samples[3])
    assert (s3.status, s3.cached, s3.raw) == ("parse_error", True, "Unsure about s0.")


def test_an_answer_asked_again_carries_the_time_it_came(project: Project) -> None:
    """The cache row's created_at moves with its answer: what tells a resumed run what it asked already."""
    add_samples(project, 1)
    with LoopbackLLM(lambda body, attempt: Reply(content="Unsure.")) as server:
        judge = rubric_judge(project, server)
        run_once(project, judge)
        before = CallCache.objects.get().created_at
        again = run_once(project, judge, ask_again=True)
    row = CallCache.objects.get()
    assert server.chat_calls == 2 and row.created_at > before and row.created_at >= again.started_at


def test_ask_again_is_refused_for_a_judge_that_is_not_a_rubric_judge(project: Project) -> None:
    add_samples(project, 1)
    nli = Judge.objects.create(project=project, name="hhem", kind=Judge.Kind.NLI, nli_model_path="/nowhere")
    with pytest.raises(JudgeSettingsError) as refused:
        runs.start_run(project, nli, queue=False, ask_again=True)
    assert refused.value.field == "ask_again" and "rubric LLM judges only" in str(refused.value)
    assert not JudgeRun.objects.exists()


# ----------------------------------------------------------------------------- the pages


def test_the_run_form_offers_ask_again_for_rubric_judges_and_the_run_page_shows_it(
    project: Project, admin_user: Any, settings: Any, tiny_nli_path: str
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False  # the runs stay queued: only the choice is looked at
    add_samples(project, 2)
    admin = login(admin_user)
    judges_url = reverse("judging-judges", args=[project.slug])
    nli = Judge.objects.create(project=project, name="hhem", kind=Judge.Kind.NLI, nli_model_path=tiny_nli_path)
    # Only an NLI judge: the box is not offered at all.
    assert not tags(admin.get(judges_url)).find("input", name="ask_again")

    rubric = rubric_judge(project, "http://127.0.0.1:9/v1")
    page = tags(admin.get(judges_url))
    form = page.one("form", data_role="start-run")
    assert form["action"] == reverse("judging-run-start", args=[project.slug])
    page.one("input", name="ask_again", type="checkbox")
    html = admin.get(judges_url).content.decode()
    assert "Ask again for answers that could not be read (parse errors), instead of reusing them" in html
    # Each judge option of the run form says its kind, so the page shows the box while a rubric judge is chosen.
    run_form = Tags(html.split('data-role="start-run"', 1)[1].split("</form>", 1)[0])
    judge_options = run_form.find("option")[:3]  # the judge select comes first: "Choose a judge", then the judges
    assert {option["value"]: option.get("data-kind") for option in judge_options} == {
        "": None, str(rubric.pk): "rubric", str(nli.pk): "nli"}

    start = reverse("judging-run-start", args=[project.slug])
    assert admin.post(start, {"judge": str(rubric.pk), "scope": "all", "ask_again": "on"}).status_code == 302
    assert admin.post(start, {"judge": str(rubric.pk), "scope": "all"}).status_code == 302
    # A tick left in the box while the NLI judge is chosen (it is hidden then) is not a choice: not kept.
    assert admin.post(start, {"judge": str(nli.pk), "scope": "all", "ask_again": "on"}).status_code == 302
    asked, plain = JudgeRun.objects.filter(judge=rubric).order_by("pk")
    assert (asked.ask_again, plain.ask_again) == (True, False)
    assert list(JudgeRun.objects.filter(judge=nli).values_list("ask_again", flat=True)) == [False]

    shown = tags(admin.get(reverse("judging-run", args=[project.slug, asked.pk])))
    shown.one("span", data_role="ask-again")
    assert not tags(admin.get(reverse("judging-run", args=[project.slug, plain.pk]))).find(
        "span", data_role="ask-again")


def test_the_judges_page_without_any_judge_still_renders_its_run_form(project: Project, admin_user: Any) -> None:
    admin: Client = login(admin_user)
    page = tags(admin.get(reverse("judging-judges", args=[project.slug])))
    page.one("form", data_role="start-run")
    assert not page.find("input", name="ask_again")


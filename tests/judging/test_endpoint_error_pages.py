"""An HTTP 200 whose body is not a chat completion, from an endpoint that otherwise answers well (a proxy's HTML error
page sent with status 200), is a passing fault: it is retried as a 5xx is, and when the retries run out the error
says what came and how often, blaming the judge's base URL only while that address has given no chat completion at
all (to the run, or to this process). Found in a deployment review: two judgements of a run read "check the judge's
Endpoint (base URL)" while 298 answers from the same URL were fine.

Against the loopback OpenAI-style server (tests/judging/llm_server.py), never a mock of the SDK.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from annotate.models import Project
from judging.clients import Endpoint, EndpointError, chat, check_endpoint, forget_request_modes
from judging.models import Judge, Judgement, JudgeRun
from judging.services import runs
from judging.services.judges import create_judge
from tests.judging.llm_server import LoopbackLLM, Reply, user_text
from tests.judging.run_factories import add_samples, tag_of

MESSAGES = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "Rate this."}]
ERROR_PAGE = ("<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>"
              "\n<hr><center>nginx</center>\n</body>\n</html>\n")
SHOWN = "it began '<html> <head><title>502 Bad Gateway</title></head> <body> <c...'"  # 60 characters, spaces squeezed
BLAMES_BASE_URL = "check the judge's “Endpoint (base URL)”"


@pytest.fixture(autouse=True)
def fresh_endpoint_memory() -> Iterator[None]:
    """Each test starts as a fresh process would: no endpoint has answered it yet."""
    forget_request_modes()
    yield
    forget_request_modes()


def error_page(body: dict[str, Any], attempt: int) -> Reply:
    return Reply(body=ERROR_PAGE)


def endpoint(server: LoopbackLLM) -> Endpoint:
    return Endpoint(base_url=server.base_url, model="test-model", timeout_seconds=5.0, max_retries=2)


def test_one_html_200_then_a_good_answer_is_an_answer_after_one_retry() -> None:
    with LoopbackLLM(lambda body, attempt: Reply(body=ERROR_PAGE) if attempt == 0 else Reply()) as server:
        answer = chat(endpoint(server), MESSAGES)
    assert server.chat_calls == 2 and answer.attempts == 2
    assert answer.text == '{"reasoning": "Every statement is supported by the source.", "score": 5}'


def test_json_with_no_choices_sent_with_200_is_retried_too() -> None:
    def script(body: dict[str, Any], attempt: int) -> Reply:
        if attempt == 0:
            return Reply(body='{"error": {"message": "upstream timed out"}}', content_type="application/json")
        return Reply()

    with LoopbackLLM(script) as server:
        answer = chat(endpoint(server), MESSAGES)
    assert answer.attempts == 2 and '"score": 5' in answer.text


def test_always_html_from_an_address_that_never_answered_names_the_body_and_blames_the_base_url() -> None:
    with LoopbackLLM(error_page) as server, pytest.raises(EndpointError) as caught:
        chat(endpoint(server), MESSAGES)
    message = str(caught.value)
    assert message.startswith(f"The endpoint at {server.base_url} answered HTTP 200 with a body that is not a chat "
                              f"completion ({SHOWN}), 3 times; {BLAMES_BASE_URL}")
    assert caught.value.setting == "base_url" and caught.value.attempts == 3 == server.chat_calls


def test_always_html_after_good_answers_from_the_same_address_does_not_blame_the_base_url() -> None:
    def script(body: dict[str, Any], attempt: int) -> Reply:
        return Reply(body=ERROR_PAGE) if "broken" in user_text(body) else Reply()

    with LoopbackLLM(script) as server:
        chat(endpoint(server), MESSAGES)
        with pytest.raises(EndpointError) as caught:
            chat(endpoint(server), [{"role": "user", "content": "broken"}])
    message = str(caught.value)
    assert f"not a chat completion ({SHOWN}), 3 times." in message
    assert "It has answered with chat completions before" in message and BLAMES_BASE_URL not in message
    assert caught.value.setting is None  # nothing for the run's checks to stop on


def test_a_caller_that_had_answers_before_is_told_the_same_without_this_process_having_seen_one() -> None:
    with LoopbackLLM(error_page) as server, pytest.raises(EndpointError) as caught:
        chat(endpoint(server), MESSAGES, answered_before=True)
    assert caught.value.setting is None and BLAMES_BASE_URL not in str(caught.value)


def test_the_endpoint_check_retries_such_an_answer_and_blames_the_base_url_only_with_no_answer_before() -> None:
    with LoopbackLLM(lambda body, attempt: Reply(body=ERROR_PAGE) if attempt == 0 else Reply(), listed=()) as server:
        # /models does not list the judge's model, so one chat call decides: an error page, then an answer.
        check_endpoint(Endpoint(base_url=server.base_url, model="test-model", max_retries=1))

    with LoopbackLLM(error_page, listed=()) as server:
        probe = Endpoint(base_url=server.base_url, model="test-model", max_retries=1)
        with pytest.raises(EndpointError) as first:
            check_endpoint(probe)
        with pytest.raises(EndpointError) as later:
            check_endpoint(probe, answered_before=True)
    assert first.value.setting == "base_url" and "2 times; " + BLAMES_BASE_URL in str(first.value)
    assert later.value.setting is None and BLAMES_BASE_URL not in str(later.value)


# ----------------------------------------------------------------------------- in a run


def rubric_judge(project: Project, server: LoopbackLLM, **settings: Any) -> Judge:
    return create_judge(project, **{"name": "loop", "kind": "rubric", "base_url": server.base_url,
                                    "model": "test-model", "max_retries": 2, **settings})


@pytest.mark.django_db
def test_a_run_retries_error_pages_and_words_the_one_that_stays_by_what_happened(project: Project) -> None:
    add_samples(project, 6)

    def script(body: dict[str, Any], attempt: int) -> Reply:
        tag = tag_of(user_text(body))
        if tag == "s4" or (tag in ("s1", "s3") and attempt == 0):  # s4: the proxy fails every time
            return Reply(body=ERROR_PAGE)
        return Reply()

    with LoopbackLLM(script) as server:
        judge = rubric_judge(project, server, concurrency=1)  # in order: s0 is answered before s4 fails
        run = runs.execute_run(runs.start_run(project, judge, queue=False).pk)
    by_tag = {j.sample.external_id: j for j in Judgement.objects.filter(run=run).select_related("sample")}
    assert run.status == JudgeRun.Status.DONE and (run.scored, run.failed) == (5, 1)
    assert {tag: (j.status, j.attempts) for tag, j in by_tag.items()} == {
        "s0": ("ok", 1), "s1": ("ok", 2), "s2": ("ok", 1), "s3": ("ok", 2), "s4": ("error", 3), "s5": ("ok", 1)}
    error = by_tag["s4"].error
    assert f"not a chat completion ({SHOWN}), 3 times." in error
    assert "It has answered with chat completions before" in error and BLAMES_BASE_URL not in error
    assert run.calls == 6 + 2 + 2  # every request sent, the retries included


@pytest.mark.django_db
def test_a_resumed_run_with_stored_answers_does_not_blame_the_base_url_in_a_fresh_process(project: Project) -> None:
    samples = add_samples(project, 3)
    with LoopbackLLM(error_page) as server:
        judge = rubric_judge(project, server)
        run = runs.start_run(project, judge, queue=False)
        # An earlier execution (another worker process) had an answer for s0 from this endpoint.
        Judgement.objects.create(run=run, sample=samples[0], status="ok", score=5, raw='{"score": 5}', attempts=1)
        JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
        run = runs.execute_run(run.pk)
    errors = list(Judgement.objects.filter(run=run, status="error").values_list("error", flat=True))
    assert run.status == JudgeRun.Status.DONE and len(errors) == 2
    assert all("3 times." in error and BLAMES_BASE_URL not in error for error in errors)


@pytest.mark.django_db
def test_a_run_against_an_address_that_only_ever_sends_html_fails_before_it_starts_naming_the_base_url(
    project: Project,
) -> None:
    add_samples(project, 2)
    with LoopbackLLM(error_page, listed=()) as server:  # no model list: a chat call decides
        run = runs.execute_run(runs.start_run(project, rubric_judge(project, server), queue=False).pk)
    assert run.status == JudgeRun.Status.FAILED
    assert "answered HTTP 200 with a body that is not a chat completion" in run.error
    assert BLAMES_BASE_URL in run.error and not Judgement.objects.filter(run=run).exists()

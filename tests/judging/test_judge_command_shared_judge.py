"""`manage.py judge` on a project's existing judge, its progress lines, and a cancelled run's seconds.

Before:
- `judge --concurrency 9 --price-input 5 --price-output 20` silently rewrote the settings of the project's existing
  judge for that endpoint, model and mode (shared by its pages, its triage and every later run), and leaving out
  --api-key-env cleared the judge's key variable; now a setting that would change is refused, naming the judge and
  each change, unless --update is given, and a setting left out keeps the judge's;
- the command printed nothing while it ran; now a progress line goes to stderr every few seconds (--quiet: none);
- a cancelled run's "Seconds" stopped at the cancel, though the answers of the calls in flight were stored up to a
  call's length later; now it runs until the last stored answer.
"""

from __future__ import annotations

import io
import json
import re
import time
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Max

from annotate.models import Project
from judging.management import foreground
from judging.models import Judge, JudgeRun
from judging.services import runs
from judging.services.runs import results
from tests.judging.llm_server import InFlight, LoopbackLLM
from tests.judging.run_factories import add_samples

pytestmark = pytest.mark.django_db


def judge_command(*args: str) -> tuple[dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("judge", *args, "--json", stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


def test_changing_an_existing_judges_settings_is_refused_without_update_naming_each_change(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_samples(project, 2)
    monkeypatch.setenv("FAITHLAB_TEST_KEY", "sk-test-123456")
    with LoopbackLLM() as server:
        base = ("--project", project.slug, "--base-url", server.base_url, "--model", "test-model", "--quiet")
        judge_command(*base, "--api-key-env", "FAITHLAB_TEST_KEY", "--price-input", "1", "--price-output", "2")
        judge = Judge.objects.get()
        with pytest.raises(CommandError) as refused:
            call_command("judge", *base, "--concurrency", "9", "--price-input", "5", "--price-output", "20",
                         stdout=io.StringIO())
        assert str(refused.value) == (
            f"judge 'test-model (reasoning)' (id {judge.pk}) already exists for this endpoint, model and mode, with "
            "other settings: --concurrency 4 -> 9; --price-input 1 -> 5; --price-output 2 -> 20. It is the "
            "project's judge, used by its pages, its triage and every later run, so it is not changed unless you say "
            "so: add --update to change it, or leave those options out to run it with its settings. Nothing was "
            "written."
        )
        assert JudgeRun.objects.count() == 1  # no run started
        # Left out, a setting keeps the judge's own: the key variable is not cleared, nothing is refused.
        again, _ = judge_command(*base)
        judge.refresh_from_db()
        assert (judge.concurrency, judge.price_input_per_mtok, judge.price_output_per_mtok, judge.api_key_env) == (
            4, 1.0, 2.0, "FAITHLAB_TEST_KEY")
        assert again["cached"] == 2
        # Given again as they are, nothing changes and nothing is refused.
        judge_command(*base, "--price-input", "1", "--price-output", "2")
        # With --update they are saved, and the run uses them.
        judge_command(*base, "--concurrency", "9", "--price-input", "5", "--price-output", "20", "--update")
        judge.refresh_from_db()
        assert (judge.concurrency, judge.price_input_per_mtok, judge.price_output_per_mtok) == (9, 5.0, 20.0)
        assert Judge.objects.count() == 1


def test_progress_lines_go_to_stderr_unless_quiet(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    add_samples(project, 6)
    monkeypatch.setattr(foreground, "PROGRESS_SECONDS", 0.0)  # a line each time the run's loop goes round
    monkeypatch.setattr(results, "FLUSH_RESULTS", 1)  # the counters written at every answer
    with LoopbackLLM(InFlight(0.05)) as server:
        base = ("--project", project.slug, "--base-url", server.base_url, "--model", "test-model", "--concurrency",
                "1", "--price-input", "2", "--price-output", "10")
        result, err = judge_command(*base)
        lines = [line for line in err.splitlines() if line.startswith(f"run {result['run']}: ")]
        assert lines, err
        pattern = re.compile(rf"run {result['run']}: (\d+)/6 judged, \d+ scored, 0 failed, \d+ requests sent, "
                             r"0 from the cache, US\$ \d+\.\d{4} so far, \d+ s")
        assert all(pattern.fullmatch(line) for line in lines[:-1]), lines
        assert lines[-1].startswith(f"run {result['run']}: 6/6 judged, 6 scored, 0 failed, 6 requests sent, 0 from "
                                    "the cache, US$ 0.0032 so far, ")  # 6 x (120 x 2 + 30 x 10) / 1e6 and lines[-1].endswith(" s (done)")
        assert len({pattern.fullmatch(line).group(1) for line in lines[:-1]}) > 1  # it moved along
        quiet, err = judge_command(*base, "--quiet")
        assert not [line for line in err.splitlines() if line.startswith(f"run {quiet['run']}: ")]


def test_a_cancelled_runs_seconds_run_until_its_last_stored_answer(
    project: Project, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_samples(project, 20)
    monkeypatch.setattr(results, "FLUSH_RESULTS", 1)
    flush = results._ResultWriter.flush
    held = InFlight(0.5)  # the calls in flight at the cancel answer up to half a second after it
    cancelled: list[JudgeRun] = []

    def cancel_with_calls_in_flight(writer: results._ResultWriter) -> None:
        if writer.judgements and not cancelled:
            deadline = time.monotonic() + 5
            while held.now < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            cancelled.append(runs.cancel_run(JudgeRun.objects.get(pk=writer.run.pk), admin_user))
        flush(writer)

    with LoopbackLLM(held) as server:
        judge = Judge.objects.create(project=project, name="slow", kind=Judge.Kind.RUBRIC, base_url=server.base_url,
                                     model="test-model", max_retries=0, concurrency=4)
        run, _ = runs.start_or_reuse_run(project, judge)
        monkeypatch.setattr(results._ResultWriter, "flush", cancel_with_calls_in_flight)
        stopped = runs.execute_run(run.pk)
    assert cancelled and stopped.cancelled
    last_answer = stopped.judgements.aggregate(last=Max("created_at"))["last"]
    assert last_answer > stopped.cancelled_at  # answers of the calls in flight came after the cancel
    assert stopped.finished_at == last_answer
    assert stopped.seconds == (last_answer - stopped.started_at).total_seconds()

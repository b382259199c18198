"""The cost table counts every call that was sent and answered, parse errors included; cache hits and endpoint
errors stay apart. A real rubric judge on a loopback endpoint, figures worked out by hand."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Project
from judging.models import Judge, Judgement, SyntheticSet
from judging.services.runs import execute_run, start_run
from judging.services.synthetic import import_rewrites, paper_tables
from tests.conftest import login
from tests.judging.llm_server import LoopbackLLM, Reply, user_text
from tests.judging.synthetic_scene import add_outputs, rewrite_of

G1 = ["Lintown's Harbour Bridge reopened on Tuesday.", "Repairs took eight weeks.",
      "Engineers replaced 140 cables 🌉.", "The work cost 12.4 million euros.",
      "The speed limit is 30 km/h until March."]
PRICE_OUTPUT_PER_MTOK = 1000.0  # US$ per million output tokens; input tokens free: 30 tokens cost $0.03


@pytest.fixture
def synthetic_set(project: Project) -> SyntheticSet:
    """g1 gold and g1 with 1..5 sentences rewritten (intrinsic 20..100%): six items (g2 has no rewrites)."""
    add_outputs(project, short=False)
    records = [{"sample": "g1", "sentence": index, "type": "intrinsic", "rewritten": rewrite_of("intrinsic", text)}
               for index, text in enumerate(G1)]
    lines = "\n".join(json.dumps(record, ensure_ascii=False) for record in records).encode()
    return import_rewrites(project, "costs", lines, "rewrites.jsonl", seed=3)


def judge_script(body: dict[str, Any], attempt: int) -> Reply:
    """Two rewritten sentences: HTTP 500 (no answer); three or more: prose, 50 tokens (a parse error); else a score,
    30 tokens."""
    output = re.search(r"<output>\n(.*?)\n</output>", user_text(body), re.DOTALL).group(1)
    changed = output.count("NOT ")
    if changed == 2:
        return Reply(status=500)
    if changed >= 3:
        return Reply(content="I would say it is mostly unfaithful, maybe a two.", completion_tokens=50)
    return Reply(content=json.dumps({"reasoning": "checked", "score": 5 - changed}), completion_tokens=30)


def run_judge(project: Project, judge: Judge, synthetic_set: SyntheticSet) -> None:
    run = start_run(project, judge, scope="synthetic", synthetic_set=synthetic_set, queue=False)
    assert execute_run(run.pk).status == "done"


@pytest.mark.django_db
def test_parse_errors_are_paid_calls_and_a_repeated_run_is_all_cache_hits(
    project: Project, synthetic_set: SyntheticSet, admin_user: Any
) -> None:
    with LoopbackLLM(script=judge_script) as server:
        judge = Judge.objects.create(project=project, name="judge", kind=Judge.Kind.RUBRIC, base_url=server.base_url,
                                     model="test-model", max_retries=0, price_input_per_mtok=0.0,
                                     price_output_per_mtok=PRICE_OUTPUT_PER_MTOK)
        run_judge(project, judge, synthetic_set)
        statuses = sorted(Judgement.objects.values_list("status", flat=True))
        # Gold and 20%: scored; 40%: HTTP 500; 60, 80, 100%: prose.
        assert statuses == ["error", "ok", "ok", "parse_error", "parse_error", "parse_error"]

        (cost,) = paper_tables(synthetic_set)["cost"]["rows"]
        # Five calls answered (two scores, three parse errors), one endpoint error with no answer.
        assert (cost["calls"], cost["parse_errors"], cost["cached"], cost["errors"]) == (5, 3, 0, 1)
        assert cost["output_tokens"] == pytest.approx(42.0)  # (2 x 30 + 3 x 50) / 5
        assert cost["cost"] == pytest.approx(0.042)  # (2 x 0.03 + 3 x 0.05) / 5
        assert cost["latency"] is not None and cost["latency"] > 0

        page = login(admin_user).get(
            reverse("judging-synthetic-set", args=[project.slug, synthetic_set.pk])).content.decode()
        assert 'data-column="calls">5<' in page and 'data-column="parse_errors">3<' in page
        assert 'data-column="errors">1<' in page and 'data-column="output_tokens">42.0<' in page

        # The same run again: the five answers come from the cache (nothing paid), the 500 is asked again.
        asked_before = server.chat_calls
        run_judge(project, judge, synthetic_set)
        assert server.chat_calls == asked_before + 1
    (again,) = paper_tables(synthetic_set)["cost"]["rows"]
    assert (again["calls"], again["parse_errors"], again["cached"], again["errors"]) == (0, 0, 5, 1)
    assert again["latency"] is None and again["output_tokens"] is None and again["cost"] is None

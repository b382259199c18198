"""Synthetic sets end to end against a real loopback endpoint; imports; and the paper's tables from judgements."""

from __future__ import annotations

import json
import re

import pytest

from judging.models import Judge, Judgement, JudgeRun, SyntheticItem, SyntheticRewrite, SyntheticSet
from judging.services.runs import execute_run, start_run
from judging.services.synthetic import (
    SyntheticSetError,
    create_synthetic_set,
    execute_synthetic_set,
    execution_lock,
    import_rewrites,
    paper_tables,
    synthetic_summary,
)
from judging.synthetic import replacement_order
from tests.judging.llm_server import LoopbackLLM, Reply, user_text
from tests.judging.synthetic_scene import (
    FIVE,
    add_outputs,
    asked,
    latest_prompt,
    rewrite_of,
    writer_judge,
    writer_script,
)

SENTENCES = {
    "g1": ["Lintown's Harbour Bridge reopened on Tuesday.", "Repairs took eight weeks.",
           "Engineers replaced 140 cables 🌉.", "The work cost 12.4 million euros.",
           "The speed limit is 30 km/h until March."],
    "g2": ["The bridge reopened.", "Café owners cheered.", "Traffic is slow on the eastern lane.",
           "Mayor Ines Varga spoke.", "It cost 12.4 million euros."],
}


def expected_text(external_id: str, kind: str, replaced: list[int]) -> str:
    return " ".join(rewrite_of(kind, sentence) if index in replaced else sentence
                    for index, sentence in enumerate(SENTENCES[external_id]))


@pytest.fixture
def outputs(project):
    return add_outputs(project)


def test_the_scene_sentences_are_the_outputs_sentences():
    assert [" ".join(SENTENCES[key]) for key, _ in FIVE] == [text for _, text in FIVE]


def test_a_set_is_written_and_built_end_to_end(project, outputs):
    with LoopbackLLM(script=writer_script()) as server:
        writer = writer_judge(project, server.base_url)
        created = create_synthetic_set(project, name="s1", writer=writer, seed=11, queue=False)
        assert created.total == 2 * 2 * 5  # two five-sentence outputs; the three-sentence one is skipped
        done = execute_synthetic_set(created.pk)
    assert done.status == SyntheticSet.Status.DONE
    assert done.done == 20
    assert server.chat_calls == 20
    for body in server.requests:
        assert body["temperature"] == 0
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"]["required"] == ["rewritten"]
        assert body["messages"][0]["role"] == "system" and "JSON" in body["messages"][0]["content"]
    kind, sentence = asked(server.requests[0])
    assert kind in ("intrinsic", "extrinsic") and sentence in SENTENCES["g1"] + SENTENCES["g2"]

    summary = synthetic_summary(done)
    assert summary["outputs"] == 2
    assert summary["rewrites"] == {"needed": 20, "ok": 20, "error": 0}
    assert summary["items"] == {"gold": 2, "intrinsic": 10, "extrinsic": 10}
    assert summary["not_built"] == {"intrinsic": 0, "extrinsic": 0}
    assert summary["notes"] == ["Skipped 1 of 3 outputs that do not have exactly 5 sentences: g3 has 3 sentences, "
                                "not 5."]
    assert summary["prompts"] == {"intrinsic": latest_prompt(project, "intrinsic").number,
                                  "extrinsic": latest_prompt(project, "extrinsic").number}
    rewrite = SyntheticRewrite.objects.get(synthetic_set=done, sample__external_id="g1", type="intrinsic",
                                           sentence_index=2)
    assert rewrite.original == "Engineers replaced 140 cables 🌉."
    assert rewrite.rewritten == "NOT Engineers replaced 140 cables 🌉."
    assert rewrite.prompt == latest_prompt(project, "intrinsic")

    for item in SyntheticItem.objects.filter(synthetic_set=done).select_related("sample"):
        external_id = item.sample.external_id
        if item.type == "gold":
            assert (item.percent, item.replaced, item.text) == (0, [], " ".join(SENTENCES[external_id]))
            continue
        k = item.percent // 20
        assert item.replaced == replacement_order(11, external_id, item.type, 5)[:k]
        assert item.text == expected_text(external_id, item.type, item.replaced)
        assert item.expected_score == 1


def test_failed_rewrites_are_recorded_not_invented_and_their_items_not_built(project, outputs):
    script = writer_script(identical="Traffic is slow on the eastern lane.", server_error="Repairs took eight weeks.",
                           prose="Café owners cheered.")
    with LoopbackLLM(script=script) as server:
        writer = writer_judge(project, server.base_url)
        created = create_synthetic_set(project, name="s2", writer=writer, queue=False)
        done = execute_synthetic_set(created.pk)
    assert done.status == SyntheticSet.Status.DONE
    failed = {(r.sample.external_id, r.type, r.sentence_index): r
              for r in SyntheticRewrite.objects.filter(synthetic_set=done, status="error").select_related("sample")}
    assert set(failed) == {("g2", "extrinsic", 2), ("g1", "intrinsic", 1), ("g2", "intrinsic", 1)}
    identical = failed[("g2", "extrinsic", 2)]
    assert identical.error == "the rewrite is identical to the original sentence"
    assert json.loads(identical.raw) == {"rewritten": "Traffic is slow on the eastern lane."}
    prose = failed[("g2", "intrinsic", 1)]
    assert prose.error == "the answer holds no JSON object"
    assert prose.raw.startswith("Sure! Here is")
    server_error = failed[("g1", "intrinsic", 1)]
    assert server_error.raw == "" and server_error.error
    assert all(rewrite.rewritten == "" for rewrite in failed.values())

    summary = synthetic_summary(done)
    assert summary["rewrites"] == {"needed": 20, "ok": 17, "error": 3}
    # g1 keeps its extrinsic items; g2 gets none of either type; the gold items stay.
    assert summary["items"] == {"gold": 2, "intrinsic": 0, "extrinsic": 5}
    assert summary["not_built"] == {"intrinsic": 2, "extrinsic": 1}
    assert not SyntheticItem.objects.filter(synthetic_set=done, sample__external_id="g2").exclude(type="gold").exists()


def test_execution_resumes_and_asks_only_for_what_is_missing(project, outputs):
    with LoopbackLLM(script=writer_script()) as server:
        writer = writer_judge(project, server.base_url)
        created = create_synthetic_set(project, name="s3", writer=writer, queue=False)
        execute_synthetic_set(created.pk)
        assert server.chat_calls == 20
        assert execute_synthetic_set(created.pk).status == "done"  # a second delivery of a done set: no call
        assert server.chat_calls == 20
        # A worker killed mid-run: three answers never stored, the set left running.
        lost = list(SyntheticRewrite.objects.filter(synthetic_set=created).order_by("id")[:3])
        SyntheticRewrite.objects.filter(pk__in=[rewrite.pk for rewrite in lost]).delete()
        SyntheticSet.objects.filter(pk=created.pk).update(status=SyntheticSet.Status.RUNNING, done=17)
        resumed = execute_synthetic_set(created.pk)
        assert server.chat_calls == 23
    asked_again = {asked(body) for body in server.requests[20:]}
    assert asked_again == {(rewrite.type, rewrite.original) for rewrite in lost}
    assert resumed.status == "done" and resumed.done == 20
    assert SyntheticRewrite.objects.filter(synthetic_set=created).count() == 20
    assert SyntheticItem.objects.filter(synthetic_set=created).count() == 22


def test_a_set_being_written_elsewhere_is_left_alone(project, outputs):
    with LoopbackLLM(script=writer_script()) as server:
        writer = writer_judge(project, server.base_url)
        created = create_synthetic_set(project, name="locked", writer=writer, queue=False)
        with execution_lock(created.pk) as held:  # another worker is writing this set
            assert held
            assert execute_synthetic_set(created.pk).status == "queued"
        assert server.chat_calls == 0
        assert execute_synthetic_set(created.pk).status == "done"
        assert server.chat_calls == 20


def test_a_missing_key_variable_is_refused_before_anything_is_written(project, outputs, monkeypatch):
    monkeypatch.delenv("SYNTHETIC_TEST_KEY", raising=False)
    writer = writer_judge(project, "http://127.0.0.1:9/v1", api_key_env="SYNTHETIC_TEST_KEY")
    with pytest.raises(SyntheticSetError) as refused:
        create_synthetic_set(project, name="s4", writer=writer, queue=False)
    assert refused.value.field == "api_key_env"
    assert "SYNTHETIC_TEST_KEY" in str(refused.value)
    assert not SyntheticSet.objects.exists()


def test_outputs_without_five_sentences_give_no_set(project, outputs):
    writer = writer_judge(project, "http://127.0.0.1:9/v1")
    with pytest.raises(SyntheticSetError) as refused:
        create_synthetic_set(project, name="s5", writer=writer, samples=[outputs[2]], queue=False)
    assert refused.value.field == "samples"
    assert "none of the 1 outputs has exactly 5 sentences" in str(refused.value)
    assert not SyntheticSet.objects.exists() and not SyntheticItem.objects.exists()


def test_a_duplicate_name_is_refused(project, outputs):
    writer = writer_judge(project, "http://127.0.0.1:9/v1")
    create_synthetic_set(project, name="same", writer=writer, queue=False)
    with pytest.raises(SyntheticSetError) as refused:
        create_synthetic_set(project, name="same", writer=writer, queue=False)
    assert refused.value.field == "name"
    assert SyntheticSet.objects.count() == 1


def import_lines(*records: dict) -> bytes:
    return "\n".join(json.dumps(record, ensure_ascii=False) for record in records).encode()


def full_intrinsic(external_id: str) -> list[dict]:
    return [{"sample": external_id, "sentence": index, "type": "intrinsic", "rewritten": rewrite_of("intrinsic", s)}
            for index, s in enumerate(SENTENCES[external_id])]


def test_import_builds_items_and_names_what_is_incomplete(project, outputs):
    records = full_intrinsic("g1") + [
        {"sample": "g2", "sentence": index, "type": "extrinsic", "rewritten": rewrite_of("extrinsic", s)}
        for index, s in enumerate(SENTENCES["g2"][:4])
    ]
    imported = import_rewrites(project, "imp", import_lines(*records), "rewrites.jsonl", seed=5)
    summary = synthetic_summary(imported)
    assert summary["status"] == "done" and summary["writer"] is None
    assert summary["items"] == {"gold": 2, "intrinsic": 5, "extrinsic": 0}
    assert summary["not_built"] == {"intrinsic": 1, "extrinsic": 2}
    assert summary["notes"] == ["Not built, because the file does not rewrite every sentence: extrinsic of g2 lacks "
                                "sentence(s) 4."]
    full = SyntheticItem.objects.get(synthetic_set=imported, sample__external_id="g1", type="intrinsic", percent=100)
    assert full.replaced == replacement_order(5, "g1", "intrinsic", 5)
    assert full.text == expected_text("g1", "intrinsic", [0, 1, 2, 3, 4])


def test_import_errors_name_file_line_and_field_and_write_nothing(project, outputs):
    good = full_intrinsic("g1")
    lines = [
        json.dumps(good[0]),
        '{"sample": "g1", "sentence": 1,',                                                   # 2: not JSON
        json.dumps({**good[2], "sample": "nope"}),                                           # 3: unknown sample
        json.dumps({**good[3], "type": "both"}),                                             # 4: bad type
        json.dumps({**good[4], "sentence": 5}),                                              # 5: out of range
        json.dumps({"sample": "g1", "sentence": 1, "type": "intrinsic",
                    "rewritten": "Repairs took eight weeks."}),                              # 6: identical
        json.dumps(good[0]),                                                                 # 7: duplicate of 1
        json.dumps({"sample": "g3", "sentence": 0, "type": "intrinsic", "rewritten": "X."}),  # 8: 3 sentences
        json.dumps({"sample": "g1", "type": "intrinsic", "rewritten": "X."}),                # 9: no sentence
    ]
    with pytest.raises(SyntheticSetError) as refused:
        import_rewrites(project, "bad", "\n".join(lines).encode(), "rewrites.jsonl")
    problems = refused.value.problems
    # The JSON decoder's own words differ between Python versions; the place is ours.
    assert problems[0].startswith("rewrites.jsonl, line 2: not a JSON object (")
    assert problems[1:] == [
        "rewrites.jsonl, line 3, field 'sample': no sample with external id 'nope' in this project",
        "rewrites.jsonl, line 4, field 'type': 'both' is not 'intrinsic' or 'extrinsic'",
        "rewrites.jsonl, line 5, field 'sentence': 5 is not a sentence index 0..4",
        "rewrites.jsonl, line 6, field 'rewritten': the rewrite is identical to the original sentence",
        "rewrites.jsonl, line 7, field 'sentence': sentence 0 of 'g1' (intrinsic) was already given on line 1",
        "rewrites.jsonl, line 8, field 'sample': output 'g3' has 3 sentences, not 5",
        "rewrites.jsonl, line 9, field 'sentence': missing",
    ]
    assert not SyntheticSet.objects.exists()
    assert not SyntheticRewrite.objects.exists() and not SyntheticItem.objects.exists()


def test_import_refuses_a_file_that_is_not_utf8(project, outputs):
    with pytest.raises(SyntheticSetError, match=r"rewrites.jsonl: not UTF-8 text \(invalid start byte at byte 0\)"):
        import_rewrites(project, "bad", b"\xff{}", "rewrites.jsonl")
    # \xff\xfe starts UTF-16 text (its byte order mark): named as such, with the fix.
    with pytest.raises(SyntheticSetError, match=r"rewrites.jsonl: this is UTF-16 text, not UTF-8: save it as UTF-8"):
        import_rewrites(project, "bad", b"\xff\xfe{}", "rewrites.jsonl")
    assert not SyntheticSet.objects.exists()


def judge_set(project, outputs):
    """A set with g1's intrinsic items only (7 items: two gold, five intrinsic), imported; g2 comes in with one
    extrinsic rewrite, too few for items, so it has its gold output alone."""
    g2 = {"sample": "g2", "sentence": 0, "type": "extrinsic", "rewritten": "The bridge reopened, officials said."}
    return import_rewrites(project, "tables", import_lines(*full_intrinsic("g1"), g2), "rewrites.jsonl", seed=2)


def test_paper_tables_from_judgements_match_hand_figures(project, outputs):
    synthetic_set = judge_set(project, outputs)
    items = {(item.sample.external_id, item.type, item.percent): item
             for item in SyntheticItem.objects.filter(synthetic_set=synthetic_set).select_related("sample")}
    assert len(items) == 7
    llm = Judge.objects.create(project=project, name="llm", kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                               model="m", with_reasoning=True)
    nli = Judge.objects.create(project=project, name="nli", kind=Judge.Kind.NLI, nli_model_path="nli-model-dir")

    # An older run of the LLM judge that scored everything 1: the tables must not use it.
    old = JudgeRun.objects.create(project=project, judge=llm, scope="synthetic", synthetic_set=synthetic_set,
                                  status="done")
    for item in items.values():
        Judgement.objects.create(run=old, synthetic_item=item, status="ok", score=1, latency_seconds=99.0)

    run = JudgeRun.objects.create(project=project, judge=llm, scope="synthetic", synthetic_set=synthetic_set,
                                  status="done")
    llm_answers = {  # key: (status, score, latency, output tokens, cost, cached)
        ("g1", "gold", 0): ("ok", 5, 1.0, 10, 0.01, False),
        ("g2", "gold", 0): ("ok", 4, 2.0, 20, 0.02, False),
        ("g1", "intrinsic", 20): ("ok", 4, 3.0, 30, 0.03, False),
        ("g1", "intrinsic", 40): ("ok", 3, 4.0, 40, 0.04, False),
        ("g1", "intrinsic", 60): ("ok", 2, 5.0, 50, 0.05, False),
        ("g1", "intrinsic", 80): ("parse_error", None, 9.0, 90, 0.09, False),
        ("g1", "intrinsic", 100): ("ok", 1, 6.0, 60, 0.0, True),
    }
    for key, (status, score, latency, tokens, cost, cached) in llm_answers.items():
        Judgement.objects.create(run=run, synthetic_item=items[key], status=status, score=score,
                                 latency_seconds=latency, output_tokens=tokens, cost=cost, cached=cached,
                                 raw="not json" if status != "ok" else "")
    nli_run = JudgeRun.objects.create(project=project, judge=nli, scope="synthetic", synthetic_set=synthetic_set,
                                      status="done")
    probabilities = {("g1", "gold", 0): 1.0, ("g2", "gold", 0): 0.5, ("g1", "intrinsic", 20): 0.5,
                     ("g1", "intrinsic", 40): 0.25, ("g1", "intrinsic", 60): 0.25, ("g1", "intrinsic", 80): 0.0,
                     ("g1", "intrinsic", 100): 0.0}
    for key, probability in probabilities.items():
        Judgement.objects.create(run=nli_run, synthetic_item=items[key], status="ok", probability=probability,
                                 latency_seconds=0.01)

    tables = paper_tables(synthetic_set)
    assert [entry["run"] for entry in tables["runs"]] == [run.pk, nli_run.pk]

    residual = {entry["judge"]: entry for entry in tables["residual"]["rows"]}
    assert residual["llm"]["mode"] == "reasoning"
    assert residual["llm"]["gold"] == pytest.approx(0.5)          # (|5-5| + |5-4|) / 2
    assert residual["llm"]["intrinsic"] == pytest.approx(1.5)     # (3 + 2 + 1 + 0) / 4, the parse error left out
    assert residual["llm"]["extrinsic"] is None
    assert residual["llm"]["overall"] == pytest.approx(7 / 6)     # (0 + 1 + 3 + 2 + 1 + 0) / 6
    assert residual["llm"]["failed"] == 1
    # NLI display scores 1 + 4p: 5, 3 | 3, 2, 2, 1, 1.
    assert residual["nli"]["gold"] == pytest.approx(1.0)          # (0 + 2) / 2
    assert residual["nli"]["intrinsic"] == pytest.approx(0.8)     # (2 + 1 + 1 + 0 + 0) / 5
    assert residual["nli"]["overall"] == pytest.approx(6 / 7)     # not (1.0 + 0.8) / 2 = 0.9

    sensitivity = {(entry["judge"], entry["type"]): entry for entry in tables["sensitivity"]["rows"]}
    assert set(sensitivity) == {("llm", "intrinsic"), ("nli", "intrinsic")}
    # 0% is g1's gold only: g2 has no intrinsic versions in this set.
    assert [step["mean"] for step in sensitivity[("llm", "intrinsic")]["steps"]] == [5.0, 4.0, 3.0, 2.0, None, 1.0]
    assert sensitivity[("llm", "intrinsic")]["delta"] == pytest.approx(-0.8)
    assert [step["mean"] for step in sensitivity[("nli", "intrinsic")]["steps"]] == pytest.approx(
        [5.0, 3.0, 2.0, 2.0, 1.0, 1.0])
    assert sensitivity[("nli", "intrinsic")]["delta"] == pytest.approx(-0.8)

    cost = {entry["judge"]: entry for entry in tables["cost"]["rows"]}
    # Calls actually sent and answered: the five scored ones and the parse error (paid too), not the cached one.
    assert cost["llm"]["latency"] == pytest.approx(4.0)           # (1 + 2 + 3 + 4 + 5 + 9) / 6
    assert cost["llm"]["output_tokens"] == pytest.approx(40.0)    # (10 + 20 + 30 + 40 + 50 + 90) / 6
    assert cost["llm"]["cost"] == pytest.approx(0.04)             # (0.01 + ... + 0.05 + 0.09) / 6
    assert (cost["llm"]["calls"], cost["llm"]["parse_errors"], cost["llm"]["cached"], cost["llm"]["errors"]) == (
        6, 1, 1, 0)
    assert cost["llm"]["failed"] == 1
    assert cost["nli"]["latency"] == pytest.approx(0.01)
    assert cost["nli"]["output_tokens"] is None and cost["nli"]["cost"] is None


def counting_judge(body, attempt):
    """A judge that takes one point off 5 per rewritten sentence it sees in the output (never below 1)."""
    output = re.search(r"<output>\n(.*?)\n</output>", user_text(body), re.DOTALL).group(1)
    changed = output.count("NOT ") + output.count(", officials said.")
    return Reply(content=json.dumps({"reasoning": f"{changed} unsupported sentences", "score": max(1, 5 - changed)}),
                 prompt_tokens=100, completion_tokens=30)


def test_a_real_judge_run_over_the_set_feeds_the_tables(project, outputs):
    with LoopbackLLM(script=writer_script()) as server:
        writer = writer_judge(project, server.base_url)
        synthetic_set = execute_synthetic_set(
            create_synthetic_set(project, name="e2e", writer=writer, seed=1, queue=False).pk)
    with LoopbackLLM(script=counting_judge) as judge_server:
        judge = Judge.objects.create(project=project, name="counter", kind=Judge.Kind.RUBRIC,
                                     base_url=judge_server.base_url, model="test-model", max_retries=0,
                                     price_input_per_mtok=0.0, price_output_per_mtok=1000.0)
        run = start_run(project, judge, scope="synthetic", synthetic_set=synthetic_set, queue=False)
        run = execute_run(run.pk)
    assert (run.status, run.total, run.scored) == ("done", 22, 22)
    tables = paper_tables(synthetic_set)
    (residual,) = tables["residual"]["rows"]
    # Scores: gold 5; k sentences replaced -> 5 - k, at least 1: 4, 3, 2, 1, 1 (residuals 3, 2, 1, 0, 0).
    assert residual["gold"] == pytest.approx(0.0)
    assert residual["intrinsic"] == pytest.approx(6 / 5) and residual["extrinsic"] == pytest.approx(6 / 5)
    assert residual["overall"] == pytest.approx(24 / 22)  # 4 outputs-and-types x 6, over 22 items
    for row in tables["sensitivity"]["rows"]:
        assert [step["mean"] for step in row["steps"]] == [5.0, 4.0, 3.0, 2.0, 1.0, 1.0]
        assert row["delta"] == pytest.approx(-0.8)
    (cost,) = tables["cost"]["rows"]
    assert cost["output_tokens"] == pytest.approx(30.0)
    assert cost["cost"] == pytest.approx(30 * 1000.0 / 1_000_000)
    assert cost["latency"] is not None and cost["calls"] == 22

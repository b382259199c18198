"""Benchmark: NLI sliding windows, windows of many pairs batched together against one window at a time.

Standalone (the NLI judge has no Django imports). Builds a DeBERTa-base-sized
sequence-classification model with RANDOM weights (12 layers, hidden 768,
12 heads, intermediate 3072, DeBERTa-v3's relative attention; a 32,000-piece
vocabulary instead of 128,000, which changes only the embedding table, not the
time per token) and a WordPiece tokenizer from a generated vocabulary (no
download), saves them to a temporary folder and loads them through the app's
loader (judging.clients.load_nli_model). Then scores the same pairs
(references of exactly 2,000 tokens, hypotheses of about 60) with
judging.judges.nli.score_pairs, interleaved repeat by repeat:

- batched: all pairs in one call, windows of all pairs sorted by length and run
  ``--batch-size`` (32) at a time, as a judge run does;
- one window at a time: pair after pair, ``batch_size=1`` (each window its own
  forward pass, no padding).

Both must give the same p per pair (checked). Prints pairs/s and the median
seconds per repeat for each, the ratio, for each torch thread count in
``--threads``. Target: batched >= 3x faster.

    .venv/bin/python bench/bench_nli_windows.py [--pairs 8] [--repeats 2] [--threads 2,1] [--batch-size 32] [--quick]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import WORDS, CpuMonitor, machine, yes_no  # noqa: E402
from bench_perturb import wordpiece_vocabulary  # noqa: E402

TARGET_RATIO = 3.0
VOCABULARY = 32000
REFERENCE_TOKENS = 2000
HYPOTHESIS_TOKENS = 60


def build_model(folder: Path) -> Path:
    import torch
    from transformers import BertTokenizer, DebertaV2Config, DebertaV2ForSequenceClassification

    vocabulary = wordpiece_vocabulary(VOCABULARY)
    tokenizer = BertTokenizer(vocab={piece: index for index, piece in enumerate(vocabulary)}, model_max_length=512)
    torch.manual_seed(0)
    config = DebertaV2Config(  # deberta-v3-base's shape (HHEM 1.0 is a fine-tuned deberta-v3-base)
        vocab_size=len(vocabulary), hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
        intermediate_size=3072, max_position_embeddings=512, relative_attention=True, position_buckets=256,
        pos_att_type=["p2c", "c2p"], max_relative_positions=-1, position_biased_input=False,
        norm_rel_ebd="layer_norm", share_att_key=True, type_vocab_size=0, num_labels=2,
        id2label={0: "hallucinated", 1: "consistent"}, label2id={"hallucinated": 0, "consistent": 1},
    )
    model = DebertaV2ForSequenceClassification(config).eval()
    directory = folder / "deberta-base-random"
    tokenizer.save_pretrained(directory)
    model.save_pretrained(directory)
    return directory


def words_text(rng: random.Random, count: int) -> str:
    # Every benchmark word is one piece of the generated vocabulary, so ``count`` words are ``count`` tokens.
    return " ".join(rng.choice(WORDS) for _ in range(count))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", default="2,1", help="torch intra-op thread counts to measure, comma-separated")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--quick", action="store_true", help="2 pairs, 1 repeat, 2 threads: a smoke run")
    options = parser.parse_args()
    if options.quick:
        options.pairs, options.repeats, options.threads = 2, 1, "2"
    with CpuMonitor() as monitor:
        code = run(options)
    print(monitor.describe())
    return code


def run(options: argparse.Namespace) -> int:
    import torch
    from transformers.utils import logging as transformers_logging

    from judging.clients import load_nli_model
    from judging.judges.nli import score_pair_outcomes

    transformers_logging.disable_progress_bar()
    transformers_logging.set_verbosity_error()
    rng = random.Random(options.seed)
    pairs = [(words_text(rng, REFERENCE_TOKENS), words_text(rng, HYPOTHESIS_TOKENS + rng.randint(-8, 8)))
             for _ in range(options.pairs)]
    folder = Path(tempfile.mkdtemp(prefix="faithlab-bench-nli-"))
    try:
        started = time.perf_counter()
        directory = build_model(folder)
        built = time.perf_counter() - started
        started = time.perf_counter()
        model = load_nli_model(str(directory))
        loaded = time.perf_counter() - started
        tokens = [len(model.tokenizer(reference, add_special_tokens=False, verbose=False)["input_ids"])
                  for reference, _ in pairs]
        assert set(tokens) == {REFERENCE_TOKENS}, tokens
        outcomes = score_pair_outcomes(model, pairs[:1], batch_size=options.batch_size)  # warm-up
        windows = outcomes[0].windows
        print(f"machine: {machine()}; torch {torch.__version__}; model on {model.device}")
        print(f"model: DeBERTa-base-sized sequence classifier ({sum(p.numel() for p in model.model.parameters()) / 1e6:.0f}M "
              f"parameters, random weights), built in {built:.1f} s, loaded through the app's loader in {loaded:.1f} s")
        print(f"pairs: {len(pairs)}, references of {REFERENCE_TOKENS} tokens, hypotheses of "
              f"{statistics.mean(len(h.split()) for _, h in pairs):.0f} tokens on average; max length 512, overlap 32, "
              f"{windows} windows a pair; batched = {options.batch_size} windows a forward pass")
        print(f"{'threads':>7} {'mode':<22} {'pairs/s':>8} {'median s/repeat':>16} {'s/window':>9}")
        results = {}
        for threads in [int(value) for value in options.threads.split(",")]:
            torch.set_num_threads(threads)
            times: dict[str, list[float]] = {"batched": [], "one window at a time": []}
            scores: dict[str, list[float]] = {}
            for repeat in range(options.repeats):
                order = list(times) if repeat % 2 == 0 else list(reversed(times))
                for mode in order:
                    began = time.perf_counter()
                    if mode == "batched":
                        found = score_pair_outcomes(model, pairs, batch_size=options.batch_size)
                    else:
                        found = [score_pair_outcomes(model, [pair], batch_size=1)[0] for pair in pairs]
                    times[mode].append(time.perf_counter() - began)
                    scores[mode] = [outcome.probability for outcome in found]
            difference = max(abs(a - b) for a, b in zip(*scores.values(), strict=True))
            if difference > 1e-4:
                print(f"bench: batched and one-at-a-time p differ by {difference:.2g}", file=sys.stderr)
                return 1
            for mode, values in times.items():
                median = statistics.median(values)
                print(f"{threads:>7} {mode:<22} {len(pairs) / median:>8.3f} {median:>16.1f} "
                      f"{median / (len(pairs) * windows):>9.2f}")
            ratio = statistics.median(times["one window at a time"]) / statistics.median(times["batched"])
            results[threads] = ratio
            print(f"{threads:>7} speed-up of the medians: {ratio:.2f}x (same p per pair: max difference {difference:.1g})")
        best = max(results.values())
        print(f"target: batched at least {TARGET_RATIO:.0f}x faster: {yes_no(best >= TARGET_RATIO)}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

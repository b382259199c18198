"""Benchmark: the perturbation pipeline (MASK -> REPLACE -> RANK), batched against one candidate at a time.

Standalone (the pipeline has no Django imports). Builds a BERT-base-sized
masked LM (12 layers, hidden 768, 30,522 word pieces) and a GPT-2-sized
causal LM (12 layers, hidden 768, 50,257 tokens) with RANDOM weights (timing
does not depend on what the weights learned), saves them to a temporary
folder and loads them through the app's loader (annotate.perturbation.models),
then perturbs the same texts with the same seeds twice, interleaved text by
text:

- batched: annotate.perturbation.pipeline.perturb_text as the job runs it: all
  candidates of a text fill together, one forward pass per masked word piece,
  and are ranked together;
- baseline: the same pipeline with ``batched=False``: one candidate after the
  other, one forward pass per masked piece per candidate, ranked one by one.

Both give the same perturbation (checked). On a machine with a GPU the loader
puts both models on it (as a worker would) and the benchmark also perturbs the
first text with copies of the models on the CPU: the same candidates and
perplexities within 1e-4 (checked). Prints texts/s and median and p95
seconds per text for each, and the ratio. Target: batched >= 5x faster.

    .venv/bin/python bench/bench_perturb.py [--texts 4] [--sentences 3] [--candidates 20] [--threads N] [--quick]

On a shared machine the one-at-a-time baseline suffers most from other
processes: its many small forward passes each wait for both of torch's
threads. ``--threads 1`` takes that effect out of the comparison.
"""

from __future__ import annotations

import argparse
import itertools
import random
import shutil
import statistics
import string
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import WORDS, CpuMonitor, machine, paragraph, yes_no  # noqa: E402

TARGET_RATIO = 5.0
BERT_VOCAB = 30522
GPT2_VOCAB = 50257
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
END_OF_TEXT = "<|endoftext|>"  # GPT-2's one special token


def wordpiece_vocabulary(size: int) -> list[str]:
    """BERT-sized: the benchmark's words, punctuation, digits, continuation pieces, then made-up words."""
    pieces = SPECIALS + sorted(set(WORDS)) + list(string.punctuation) + [str(n) for n in range(2100)]
    pieces += ["##" + "".join(letters) for letters in itertools.product(string.ascii_lowercase, repeat=2)]
    seen = set(pieces)
    for letters in itertools.product(string.ascii_lowercase, repeat=4):
        if len(pieces) >= size:
            break
        word = "".join(letters)
        if word not in seen:
            pieces.append(word)
    return pieces[:size]


def build_models(folder: Path, texts: list[str]) -> tuple[Path, Path]:
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import (
        BertConfig,
        BertForMaskedLM,
        BertTokenizer,
        GPT2Config,
        GPT2LMHeadModel,
        PreTrainedTokenizerFast,
    )

    torch.manual_seed(0)
    vocabulary = wordpiece_vocabulary(BERT_VOCAB)
    bert_tokenizer = BertTokenizer(vocab={piece: index for index, piece in enumerate(vocabulary)})
    bert = BertForMaskedLM(BertConfig(vocab_size=len(vocabulary))).eval()  # BERT-base: 12 x 768
    bert_dir = folder / "bert-base-random"
    bert_tokenizer.save_pretrained(bert_dir)
    bert.save_pretrained(bert_dir)
    del bert

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts + [" ".join(WORDS)], vocab_size=GPT2_VOCAB, min_frequency=1,
                            special_tokens=[END_OF_TEXT], show_progress=False)
    gpt2_tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token=END_OF_TEXT,
                                             eos_token=END_OF_TEXT)
    eos = gpt2_tokenizer.eos_token_id
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=GPT2_VOCAB, bos_token_id=eos, eos_token_id=eos)).eval()  # 124M
    gpt2_dir = folder / "gpt2-random"
    gpt2_tokenizer.save_pretrained(gpt2_dir)
    gpt2.save_pretrained(gpt2_dir)
    return bert_dir, gpt2_dir


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=4)
    parser.add_argument("--sentences", type=int, default=3, help="sentences per text (the first 2 are kept)")
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads (default: torch's, one per core)")
    parser.add_argument("--quick", action="store_true", help="2 texts: a smoke run")
    options = parser.parse_args()
    if options.quick:
        options.texts = 2
    with CpuMonitor() as monitor:
        code = run(options)
    print(monitor.describe())
    return code


def same_on_cpu(text: str, models, params, seed: int) -> bool:
    """The GPU's perturbation of ``text`` against one by copies of the models on the CPU."""
    import copy
    import dataclasses

    from annotate.perturbation.pipeline import perturb_text

    on_cpu = dataclasses.replace(
        models,
        masked=dataclasses.replace(models.masked, model=copy.deepcopy(models.masked.model).cpu()),
        causal=dataclasses.replace(models.causal, model=copy.deepcopy(models.causal.model).cpu()),
    )
    gpu, cpu = perturb_text(text, models, params, seed), perturb_text(text, on_cpu, params, seed)
    same = gpu.candidates == cpu.candidates and gpu.chosen == cpu.chosen
    worst = max(abs(a - b) / b for a, b in zip(gpu.perplexities, cpu.perplexities, strict=True))
    print(f"GPU against CPU on text 1: same candidates and choice: {'yes' if same else 'NO'}; "
          f"largest relative difference of the perplexities {worst:.1g}")
    if not same or worst > 1e-4:
        print("bench: the GPU and the CPU perturbation disagree", file=sys.stderr)
        return False
    return True


def run(options: argparse.Namespace) -> int:
    import torch
    from transformers.utils import logging as transformers_logging

    from annotate.perturbation.models import load_models
    from annotate.perturbation.pipeline import PerturbationParams, perturb_text

    transformers_logging.disable_progress_bar()
    transformers_logging.set_verbosity_error()
    if options.threads:
        torch.set_num_threads(options.threads)
    rng = random.Random(options.seed)
    texts = [paragraph(rng, options.sentences) for _ in range(options.texts)]
    params = PerturbationParams(candidates=options.candidates)
    folder = Path(tempfile.mkdtemp(prefix="faithlab-bench-perturb-"))
    try:
        started = time.perf_counter()
        bert_dir, gpt2_dir = build_models(folder, texts)
        built = time.perf_counter() - started
        started = time.perf_counter()
        models = load_models(str(bert_dir), str(gpt2_dir))
        loaded = time.perf_counter() - started
        print(f"machine: {machine()}; torch {torch.__version__}, {torch.get_num_threads()} intra-op threads; "
              f"models on {models.masked.model.device}")
        print(f"models: BERT-base-sized masked LM ({sum(p.numel() for p in models.masked.model.parameters()) / 1e6:.0f}M "
              f"parameters) and GPT-2-sized causal LM ({sum(p.numel() for p in models.causal.model.parameters()) / 1e6:.0f}M), "
              f"random weights; built and saved in {built:.1f} s, loaded through the app's loader in {loaded:.1f} s")
        print(f"texts: {len(texts)} of {options.sentences} sentences ({statistics.mean(len(t) for t in texts):.0f} "
              f"characters on average); parameters {params.as_dict()}")

        perturb_text(texts[0], models, PerturbationParams(candidates=2), seed=0)  # warm-up (first-call set-up)
        times: dict[str, list[float]] = {"batched": [], "baseline": []}
        pieces = []
        for index, text in enumerate(texts):
            seed = options.seed * 1000 + index
            order = ("batched", "baseline") if index % 2 == 0 else ("baseline", "batched")
            results = {}
            for mode in order:
                began = time.perf_counter()
                results[mode] = perturb_text(text, models, params, seed, batched=mode == "batched")
                times[mode].append(time.perf_counter() - began)
            same = results["batched"].candidates == results["baseline"].candidates
            masked = sum(len(span.original_words.split()) for span in results["batched"].spans)
            pieces.append(masked)
            print(f"text {index + 1}: {len(results['batched'].spans)} units replaced ({masked} words), "
                  f"batched {times['batched'][-1]:.2f} s, baseline {times['baseline'][-1]:.2f} s, "
                  f"same candidates: {'yes' if same else 'NO'}")
            if not same:
                print("bench: the batched and the one-at-a-time pipeline disagree", file=sys.stderr)
                return 1

        print(f"{'mode':<10} {'texts/s':>8} {'median s/text':>14} {'p95 s/text':>11}")
        for mode, values in times.items():
            print(f"{mode:<10} {len(values) / sum(values):>8.3f} {statistics.median(values):>14.2f} "
                  f"{float(np.percentile(values, 95)):>11.2f}")
        ratio = sum(times["baseline"]) / sum(times["batched"])
        median_ratio = statistics.median(times["baseline"]) / statistics.median(times["batched"])
        print(f"speed-up (throughput): {ratio:.2f}x; of the medians: {median_ratio:.2f}x")
        if torch.cuda.is_available() and not same_on_cpu(texts[0], models, params, options.seed * 1000):
            return 1
        print(f"target: batched at least {TARGET_RATIO:.0f}x faster: {yes_no(ratio >= TARGET_RATIO)}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

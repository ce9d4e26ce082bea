"""Single-turn answers to the questions of one real ELITR-Bench test2 meeting
with a tiny random Llama on the CPU (16 new tokens each): with the shared
transcript prefix computed once and its KV cache reused, versus re-encoding the
whole prompt for every question (the paper's scripts). Target: at least 5x less
wall time for 15 questions, identical greedy tokens.

    .venv/bin/python benchmarks/generation_prefix_cache.py [--meeting meeting_en_test2_002]
        [--questions 15] [--new-tokens 16] [--data DIR]

Needs torch and transformers (make install-gpu). Prints a table and writes
benchmarks/results/generation_prefix_cache.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "elitr-bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meeting", default="meeting_en_test2_002")
    parser.add_argument("--questions", type=int, default=15)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("CONCORD_ELITR_DATA") or DEFAULT_DATA)
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=REPO / "benchmarks" / "results" / "generation_prefix_cache.json",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    import torch

    from corpus.importers.elitr_bench import parse_elitr_bench
    from generation.prompts import inference_prompt
    from llm.hf import HFModelSpec, load_model, shared_prefix_generate
    from tests.fakes.tiny_model import build_tiny_llama

    bundle = parse_elitr_bench(args.data, versions=["qa"], languages=["en"])
    transcript = bundle.transcripts[args.meeting].text
    questions = [
        w.text for w in bundle.wordings if w.meeting_id == args.meeting and w.version == "qa"
    ][: args.questions]
    if len(questions) < args.questions:
        sys.exit(f"{args.meeting} has only {len(questions)} questions.")
    torch.set_num_threads(os.cpu_count() or 1)
    with tempfile.TemporaryDirectory() as folder:
        path = build_tiny_llama(Path(folder) / "tiny", transcript, vocab_size=2000)
        model = load_model(HFModelSpec(str(path), dtype="float32"))
        tokenizer = model.tokenizer
        prefix = tokenizer(inference_prompt(transcript) + "\n\n")["input_ids"]
        suffixes = [tokenizer(q)["input_ids"] for q in questions]
        timings = {}
        runs = {}
        for name, use_cache in (
            ("re-encode per question (paper)", False),
            ("shared prefix KV cache", True),
        ):
            started = time.perf_counter()
            runs[name] = shared_prefix_generate(
                model, prefix, suffixes, max_tokens=args.new_tokens, use_cache=use_cache
            )
            timings[name] = time.perf_counter() - started
    plain, cached = runs["re-encode per question (paper)"], runs["shared prefix KV cache"]
    identical = plain.outputs == cached.outputs
    speedup = timings["re-encode per question (paper)"] / timings["shared prefix KV cache"]
    print(
        f"{args.meeting}: {len(questions)} questions, transcript prefix {len(prefix)} tokens, "
        f"{args.new_tokens} new tokens each, tiny Llama (2 layers, hidden 64) on "
        f"{os.cpu_count()} CPUs, torch {torch.__version__}"
    )
    print(f"{'method':<34}{'seconds':>9}{'prefill tokens':>16}")
    print("-" * 59)
    for name, run in runs.items():
        print(f"{name:<34}{timings[name]:>9.2f}{run.prefill_tokens:>16}")
    print(f"speed-up {speedup:.1f}x (target >= 5x); greedy tokens identical: {identical}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "generation_prefix_cache",
                "command": "python benchmarks/generation_prefix_cache.py",
                "meeting": args.meeting,
                "questions": len(questions),
                "prefix_tokens": len(prefix),
                "new_tokens": args.new_tokens,
                "seconds": timings,
                "prefill_tokens": {k: v.prefill_tokens for k, v in runs.items()},
                "speedup": speedup,
                "identical_greedy_tokens": identical,
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                    "torch": torch.__version__,
                },
            },
            indent=2,
        )
    )
    print(f"Wrote {args.output.relative_to(REPO)}")


if __name__ == "__main__":
    main()

"""A benchmark's scores by the length of the input: where a model's context
breaks, and whether a judge gets worse on longer inputs.

- **Length**: a document's tokens. RULER's lines carry theirs (`length`, in
  the tokenizer the data were made with) and their bucket is the length they
  were made at (`max_seq_length`); BABILong's bucket is its configuration
  (0k, 4k, ..., 1M), at its nominal tokens; LongBench v2's questions their authors'
  group (short, medium, long); every other benchmark's documents are counted
  in tiktoken's cl100k_base and cut into equal-count buckets (terciles by
  default) of the documents the runs answered.
- **Scores**: per evaluator, system and bucket, the mean over documents of
  each document's mean score (a metric's on 0-100, a judge's or person's on
  its own scale), with the betting interval
  (analysis.statistics.cluster_means): valid for any scores on the scale, and
  wide where a bucket holds few documents.
- **Effective length**: per evaluator and system, the longest bucket reached
  before the first whose mean falls below `share` of the shortest bucket's
  (RULER's question, asked of each system's own short-input score). It reads
  the means, not their intervals: a point estimate, said so beside it.
- **Agreement by length**: each automatic evaluator (metric, LLM judge)
  against each human evaluator on the responses both scored, per bucket:
  Pearson r with its document-clustered studentized interval
  (analysis.statistics.bootstrap.clustered_correlation, from 6 documents).
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from analysis.statistics.bootstrap import ClusterBootstrap, clustered_correlation
from analysis.statistics.cluster_means import clustered_mean
from corpus.importers.formats.babilong import LENGTHS as BABILONG_LENGTHS
from corpus.models import Benchmark, Dataset, QuestionText
from judging.models import HUMAN_EVALUATORS, Evaluator, EvaluatorKind, Judgment

TOKENIZER = "tiktoken cl100k_base"
RULER_TOKENIZER = "the data's own (RULER's `length`: the tokenizer it was made with)"
BABILONG_TOKENIZER = "the data's own (BABILong's configurations: 4k is 4,000 GPT-2 tokens)"
LONGBENCH_V2_GROUPS = ("short", "medium", "long")
DEFAULT_SHARE = 0.9
DEFAULT_BUCKETS = 3
METRIC_SCALE = (0.0, 100.0)
RESAMPLES = 1000


@dataclass
class Bucket:
    label: str
    low: int | None  # tokens, the shortest document in it
    high: int | None  # tokens, the longest
    documents: int = 0


@dataclass
class LengthView:
    benchmark: str
    split: str
    tokenizer: str
    bucketing: str
    share: float
    buckets: list[Bucket] = field(default_factory=list)
    scores: list[dict[str, Any]] = field(default_factory=list)
    effective: list[dict[str, Any]] = field(default_factory=list)
    agreement: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "split": self.split,
            "tokenizer": self.tokenizer,
            "bucketing": self.bucketing,
            "share": self.share,
            "buckets": [asdict(b) for b in self.buckets],
            "scores": self.scores,
            "effective_length": self.effective,
            "agreement": self.agreement,
        }

    def scores_csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(
            ["evaluator", "system", "bucket", "low_tokens", "high_tokens", "mean", "ci95_low",
             "ci95_high", "documents", "items", "note"]
        )  # fmt: skip
        spans = {b.label: (b.low, b.high) for b in self.buckets}
        for row in self.scores:
            low, high = row["ci95"]
            writer.writerow(
                [row["evaluator"], row["system"], row["bucket"], *spans[row["bucket"]],
                 row["mean"], low, high, row["clusters"], row["n"], row.get("ci_note", "")]
            )  # fmt: skip
        return out.getvalue()


def document_tokens(text: str) -> int:
    from core.tiktoken_offline import tiktoken_encoding

    return len(tiktoken_encoding("cl100k_base").encode(text, disallowed_special=()))


def _lengths(benchmark: Benchmark, datasets: list[Dataset], buckets: int):
    """Each question's (document, tokens, bucket label), the buckets, the
    tokenizer and how the buckets were made."""
    texts = QuestionText.objects.filter(dataset__in=datasets).select_related("question__document")
    fmt = benchmark.format
    per_question: dict[int, tuple[int, int, str]] = {}
    if fmt == Benchmark.Format.RULER:
        for text in texts:
            parts = text.prompt or {}
            tokens, size = parts.get("length"), parts.get("max_seq_length")
            if isinstance(tokens, int) and isinstance(size, int):
                per_question[text.question_id] = (text.question.document_id, tokens, str(size))
        labels = sorted({label for _, _, label in per_question.values()}, key=int)
        return per_question, labels, RULER_TOKENIZER, "the lengths the data were made at"
    if fmt == Benchmark.Format.BABILONG:
        for text in texts:
            parts = text.prompt or {}
            tokens, size = parts.get("tokens"), parts.get("length")
            if isinstance(tokens, int) and isinstance(size, str):
                per_question[text.question_id] = (text.question.document_id, tokens, size)
        order = {name: rank for rank, name in enumerate(BABILONG_LENGTHS)}
        labels = sorted({label for _, _, label in per_question.values()}, key=lambda x: order[x])
        return per_question, labels, BABILONG_TOKENIZER, "the lengths the data were made at"
    counted: dict[int, int] = {}
    for text in texts:
        document = text.question.document
        if document.pk not in counted:
            counted[document.pk] = document_tokens(document.text)
        group = str((text.prompt or {}).get("length", ""))
        per_question[text.question_id] = (document.pk, counted[document.pk], group)
    if fmt == Benchmark.Format.LONGBENCH_V2:
        found = {g for _, _, g in per_question.values()}
        labels = [g for g in LONGBENCH_V2_GROUPS if g in found]
        return per_question, labels, TOKENIZER, "LongBench v2's own groups (short, medium, long)"
    # equal-count buckets of the documents, by their tokens
    ordered = sorted(set((tokens, doc) for doc, tokens, _ in per_question.values()))
    count = max(1, min(buckets, len(ordered)))
    labels = []
    bucket_of: dict[int, str] = {}
    for i in range(count):
        start = (len(ordered) * i) // count
        end = (len(ordered) * (i + 1)) // count
        members = ordered[start:end]
        label = f"{members[0][0]:,}-{members[-1][0]:,}"
        labels.append(label)
        for _, doc in members:
            bucket_of[doc] = label
    per_question = {
        q: (doc, tokens, bucket_of[doc]) for q, (doc, tokens, _) in per_question.items()
    }
    kind = "terciles" if count == 3 else "quantiles"
    how = f"{count} equal-count buckets of the documents ({kind})"
    return per_question, labels, TOKENIZER, how


def length_view(
    slug: str,
    split: str,
    projects: list[int] | None = None,
    *,
    share: float = DEFAULT_SHARE,
    buckets: int = DEFAULT_BUCKETS,
) -> LengthView:
    if not 0 < share < 1:
        raise ValueError(f"share {share!r}: a fraction between 0 and 1, e.g. 0.9.")
    if not 1 <= buckets <= 20:
        raise ValueError(f"buckets {buckets!r}: from 1 to 20.")
    benchmark = Benchmark.objects.filter(slug=slug).first()
    if benchmark is None:
        raise ValueError(f"No benchmark {slug!r}.")
    datasets = list(Dataset.objects.filter(benchmark=benchmark, split=split))
    if not datasets:
        raise ValueError(f"{benchmark.name} has no split {split!r}.")
    per_question, labels, tokenizer, how = _lengths(benchmark, datasets, buckets)
    view = LengthView(slug, split, tokenizer, how, share)
    spans: dict[str, list[int]] = defaultdict(list)
    documents: dict[str, set[int]] = defaultdict(set)
    for doc, tokens, label in per_question.values():
        spans[label].append(tokens)
        documents[label].add(doc)
    view.buckets = [
        Bucket(label, min(spans[label]), max(spans[label]), len(documents[label]))
        for label in labels
    ]
    judgments = (
        Judgment.objects.filter(response__run__dataset__in=datasets)
        .filter(**({} if projects is None else {"response__run__project__in": projects}))
        .exclude(evaluator__kind=EvaluatorKind.LLM_PAIRWISE)
        .values_list(
            "evaluator_id", "response_id", "response__run__system__name",
            "response__question_id", "raw_score", "raw_scale_min", "raw_scale_max",
        )
    )  # fmt: skip
    evaluators = {e.pk: e for e in Evaluator.objects.all()}
    # evaluator -> (system, bucket) -> [(document, value)]
    table: dict[int, dict[tuple[str, str], list[tuple[int, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    scales: dict[int, tuple[float, float]] = {}
    by_response: dict[int, dict[int, tuple[float, int, str]]] = defaultdict(dict)
    for evaluator_id, response, system, question, raw, low, high in judgments:
        if question not in per_question:
            continue
        doc, _, label = per_question[question]
        evaluator = evaluators[evaluator_id]
        if evaluator.kind == EvaluatorKind.METRIC:
            value, scales[evaluator_id] = 100 * raw, METRIC_SCALE
        else:
            value, scales[evaluator_id] = raw, (low, high)
        table[evaluator_id][(system, label)].append((doc, value))
        by_response[evaluator_id][response] = (value, doc, label)
    order = {label: i for i, label in enumerate(labels)}
    for evaluator_id in sorted(table, key=lambda e: evaluators[e].name):
        name = evaluators[evaluator_id].name
        means: dict[str, dict[str, float]] = defaultdict(dict)
        for (system, label), items in sorted(
            table[evaluator_id].items(), key=lambda kv: (kv[0][0], order[kv[0][1]])
        ):
            docs = np.array([d for d, _ in items])
            values = np.array([v for _, v in items])
            found = clustered_mean(values, docs, scales[evaluator_id])
            if not found.get("computable", True):
                continue
            view.scores.append({"evaluator": name, "system": system, "bucket": label, **found})
            means[system][label] = found["mean"]
        for system, by_label in sorted(means.items()):
            view.effective.append(_effective(name, system, by_label, labels, view.buckets, share))
    view.agreement = _agreement(by_response, evaluators, labels)
    return view


def _effective(
    evaluator: str,
    system: str,
    means: dict[str, float],
    labels: list[str],
    buckets: list[Bucket],
    share: float,
) -> dict[str, Any]:
    present = [label for label in labels if label in means]
    out: dict[str, Any] = {"evaluator": evaluator, "system": system, "share": share}
    if len(present) < 2:
        return {**out, "effective_length": None, "note": "one bucket: nothing to compare"}
    high = {b.label: b.high for b in buckets}
    short = means[present[0]]
    threshold = share * short
    reached = present[0]
    below = None
    for label in present[1:]:
        if means[label] < threshold:
            below = label
            break
        reached = label
    out.update(
        {
            "short_bucket": present[0],
            "short_score": short,
            "threshold": threshold,
            "reached_bucket": reached,
            "effective_length": high[reached],
            "first_below": below,
            "note": "from the buckets' means (a point estimate; their intervals say how sure)"
            + ("" if below else "; no bucket falls below: at least the longest"),
        }
    )
    return out


def _agreement(
    by_response: dict[int, dict[int, tuple[float, int, str]]],
    evaluators: dict[int, Evaluator],
    labels: list[str],
) -> list[dict[str, Any]]:
    people = set(Evaluator.objects.filter(HUMAN_EVALUATORS).values_list("pk", flat=True))
    humans = [e for e in by_response if e in people]
    machines = [e for e in by_response if e not in people]
    rows = []
    for machine in sorted(machines, key=lambda e: evaluators[e].name):
        for human in sorted(humans, key=lambda e: evaluators[e].name):
            shared = sorted(set(by_response[machine]) & set(by_response[human]))
            for label in labels:
                here = [r for r in shared if by_response[human][r][2] == label]
                if not here:
                    continue
                x = np.array([by_response[machine][r][0] for r in here])
                y = np.array([by_response[human][r][0] for r in here])
                docs = np.array([by_response[human][r][1] for r in here])
                _, codes = np.unique(docs, return_inverse=True)
                boot = ClusterBootstrap(codes, int(codes.max()) + 1, RESAMPLES)
                found = clustered_correlation(boot, x, y)
                rows.append(
                    {
                        "evaluator": evaluators[machine].name,
                        "human": evaluators[human].name,
                        "bucket": label,
                        **found,
                    }
                )
    return rows

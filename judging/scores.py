"""The one writer of scores: a raw value on its evaluator's scale becomes a
`Judgment` (or a pairwise choice a `PairwiseVerdict`) here and nowhere else.

Every source of scores goes through it: LLM judges (`judging.evaluators.judges`),
automatic metrics (`judging.metric_judging`), the paper's and a researcher's score
files (`judging.paper_scores`, `judging.external`) and human studies
(`annotator.actions.judgments`). The common 1-10 scale that every analysis reads is
the raw value mapped linearly from its own scale, unless the evaluator's
protocol says otherwise (Prometheus' 1-5 doubled, as the paper does).
"""

from __future__ import annotations

from typing import Any

from judging.models import Judgment, PairwiseVerdict

# what identifies one stored score (the import and metric writers sync on it)
JUDGMENT_KEY = ("evaluator_id", "response_id", "rater", "order")


def common_score(raw: float, low: float, high: float) -> float:
    """A raw value on low..high, mapped linearly onto the common 1-10 scale
    (a value on 1-10 already stays exactly as it is, with no rounding)."""
    if (low, high) == (1, 10):
        return float(raw)
    return 1 + (raw - low) * 9 / (high - low)


def judgment_fields(
    evaluator_id: int,
    response_id: int,
    raw: float,
    low: float,
    high: float,
    *,
    score: float | None = None,
    rater: str = "",
    seed: int | None = None,
    order: int = 0,
    feedback: str = "",
) -> dict[str, Any]:
    """A judgment's fields: `score` on the common scale is the linear map of
    `raw` unless given (a protocol with its own map)."""
    fields: dict[str, Any] = {
        "evaluator_id": evaluator_id,
        "response_id": response_id,
        "rater": rater,
        "seed": seed,
        "order": order,
        "score": common_score(raw, low, high) if score is None else score,
        "raw_score": raw,
        "raw_scale_min": low,
        "raw_scale_max": high,
        "feedback": feedback,
    }
    return fields


def judgment(
    evaluator_id: int,
    response_id: int,
    raw: float,
    low: float,
    high: float,
    **options: Any,
) -> Judgment:
    """An unsaved Judgment (`judgment_fields`' options)."""
    return Judgment(**judgment_fields(evaluator_id, response_id, raw, low, high, **options))


def verdict(
    evaluator_id: int,
    response_id: int,
    opponent_id: int,
    winner: str,
    *,
    seed: int,
    order: int,
    rater: str = "",
    feedback: str = "",
) -> PairwiseVerdict:
    """An unsaved PairwiseVerdict: `winner` is "first", "second" or "tie" of the
    two answers as they were shown (`order` 1: the response was shown second)."""
    return PairwiseVerdict(
        evaluator_id=evaluator_id,
        response_id=response_id,
        opponent_id=opponent_id,
        seed=seed,
        order=order,
        rater=rater,
        winner=winner,
        feedback=feedback,
    )

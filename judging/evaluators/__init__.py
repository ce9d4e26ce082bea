"""One evaluator interface for every source of scores: LLM judges, automatic
metrics, and scores made elsewhere (files, the paper, human studies).

- `base`: the interface (`EvaluatorPlugin`, with `ModelJudge`, `Metric` and
  `Precomputed`), its scale and its errors;
- `registry`: the plug-ins by name (`register`, `REGISTRY`);
- `judges`: the rubric, Prometheus, custom and pairwise LLM judges;
- `metrics`: ROUGE, F1, exact match, multiple-choice accuracy, exponential
  similarity, concordance index (Concord's and ELITR-Bench's choices);
- `zeroscrolls`: ZeroSCROLLS' official metrics (`zeroscrolls.rouge`, ...);
- `leval`: L-Eval's official metrics (`leval.exam_choice`, `leval.rouge`, ...);
- `longbench_v2`: LongBench v2's answer extraction and accuracy;
- `ruler`: RULER's string matches (`ruler.string_match_all`, `..._part`);
- `babilong`: BABILong's accuracy (`babilong.accuracy`);
- `loogle`: LooGLE's BLEU, ROUGE recall and cloze matches (`loogle.rouge_l`, ...);
- `helmet`: HELMET's metrics after its post-processing (`helmet.substring_exact_match`, ...);
- `config`: an LLM judge's settings (`JudgeConfig`);
- `frozen`: what of a judged evaluator may no longer change.

`plugin_for(evaluator)` is the plug-in a stored evaluator scores with.
Importing this package registers every plug-in.
"""

from __future__ import annotations

from typing import Any

from judging.evaluators import (  # noqa: F401  (registers)
    babilong,
    helmet,
    judges,
    leval,
    longbench_v2,
    loogle,
    metrics,
    ruler,
    zeroscrolls,
)
from judging.evaluators.base import (
    AnswerError,
    ConfigError,
    EvaluatorPlugin,
    Messages,
    Metric,
    ModelJudge,
    Precomputed,
    Scale,
)
from judging.evaluators.config import JudgeConfig
from judging.evaluators.judges import JUDGE_COUNTINGS, checked_judge, judge_for
from judging.evaluators.registry import (
    REGISTRY,
    UnknownEvaluator,
    judge_class,
    metric_class,
    register,
)
from judging.models import Evaluator

__all__ = [
    "JUDGE_COUNTINGS",
    "REGISTRY",
    "AnswerError",
    "ConfigError",
    "EvaluatorPlugin",
    "JudgeConfig",
    "Messages",
    "Metric",
    "ModelJudge",
    "Precomputed",
    "Scale",
    "UnknownEvaluator",
    "checked_judge",
    "judge_class",
    "judge_for",
    "metric_class",
    "plugin_for",
    "register",
]

LLM_KINDS = (Evaluator.Kind.LLM_RUBRIC, Evaluator.Kind.LLM_PAIRWISE)


def plugin_for(evaluator: Evaluator) -> EvaluatorPlugin[Any]:
    """The plug-in `evaluator` scores with: its metric, its LLM judge (its
    settings checked: ConfigError), or, for scores made elsewhere (imports,
    the paper's, human studies), precomputed values on its raw scale."""
    if evaluator.kind == Evaluator.Kind.METRIC:
        return metric_class((evaluator.config or {}).get("metric"))()
    if evaluator.kind in LLM_KINDS:
        return checked_judge(evaluator.kind, evaluator.config)
    return Precomputed(Scale(evaluator.raw_scale_min, evaluator.raw_scale_max, whole=False))

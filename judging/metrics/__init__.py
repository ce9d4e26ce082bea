"""Automatic metrics, local and free, as ZeroSCROLLS and L-Eval define them.

Each metric takes a prediction and one or more references and returns a value
in [0, 1]. Where the original scripts have a known quirk, both behaviours are
offered and named (see multiple_choice_accuracy). The evaluator plug-ins
that use them are in `judging.evaluators.metrics`.
"""

from judging.metrics.scores import (
    concordance_index,
    exact_match,
    exponential_similarity,
    multiple_choice_accuracy,
    normalize_answer,
    rouge_geometric_mean,
    token_f1,
)

__all__ = [
    "concordance_index",
    "exact_match",
    "exponential_similarity",
    "multiple_choice_accuracy",
    "normalize_answer",
    "rouge_geometric_mean",
    "token_f1",
]

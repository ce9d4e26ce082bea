"""Self- and family-preference: does a judge score its own family's answers
more kindly than the humans do, compared with the other systems' answers?

A judge's bias on a response is its score minus the reference's. Its
self-preference is its mean bias on the responses of systems of its own
family minus its mean bias on the other systems' (0: no preference; in points
of the 1-10 scale). LLM judges prefer their own generations (Panickssery et
al., NeurIPS 2024, "LLM evaluators recognize and favor their own
generations"); subtracting the bias on the other systems leaves out a judge
that is simply lenient or harsh everywhere.

A model's family is the letters its name starts with, after any
organisation prefix ("gpt-4-0613" and "GPT-4": gpt; "meta-llama/Llama-3.1-8B":
llama): a judge and a system are of one family when they start alike. The
report names the families it read so that a wrong match shows.

The interval is the meeting-clustered studentized bootstrap of every
judge-trust interval (analysis.statistics.bootstrap.studentized_interval) on
the four sums per meeting the difference is made of, from
MIN_CLUSTERS_CORRELATION meetings and MIN_SIDE responses on each side; the
coverage harness's family `self-preference` measures it.
"""

from __future__ import annotations

import re

import numpy as np

from analysis.statistics.bootstrap import (
    ClusterBootstrap,
    cluster_sums,
    correlation_clusters_note,
    studentized_interval,
)

MIN_SIDE = 50  # responses of each side (its family's systems, the others') for an interval


def family(model: str) -> str:
    """The letters a model's name starts with, lowercased, after the last "/"."""
    name = model.rsplit("/", 1)[-1].strip().lower()
    found = re.match(r"[a-z]+", name)
    return found.group(0) if found else name


def difference_of_biases(sums: np.ndarray) -> np.ndarray:
    """From (..., 4) sums (own count, own bias sum, other count, other bias
    sum): own mean bias minus other mean bias (NaN where a side is empty)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return sums[..., 1] / sums[..., 0] - sums[..., 3] / sums[..., 2]


def self_preference(boot: ClusterBootstrap, bias: np.ndarray, own: np.ndarray) -> dict[str, object]:
    """`bias`: per response, judge minus reference (NaN: not both scored);
    `own`: whether the response's system is of the judge's family."""
    bias = np.asarray(bias, dtype=float)
    own = np.asarray(own, dtype=bool)
    known = np.isfinite(bias)
    value = np.where(known, bias, 0.0)
    columns = np.column_stack(
        [known & own, value * (known & own), known & ~own, value * (known & ~own)]
    ).astype(float)
    per_cluster = cluster_sums(boot.codes, columns, boot.clusters)
    total = per_cluster.sum(axis=0)
    if total[0] == 0 or total[2] == 0:
        side = "its own family's" if total[0] == 0 else "other families'"
        return {"computable": False, "reason": f"no response of {side} systems scored by both"}
    out: dict[str, object] = {
        "own_responses": int(total[0]),
        "other_responses": int(total[2]),
        "bias_own": float(total[1] / total[0]),
        "bias_other": float(total[3] / total[2]),
        "difference": float(difference_of_biases(total)),
        "ci95": [None, None],
        "clusters": boot.clusters,
        "resamples": boot.resamples,
    }
    note = correlation_clusters_note(boot)
    fewest = int(min(total[0], total[2]))
    if not note and fewest < MIN_SIDE:
        note = (
            f"{fewest} responses on one side: an interval needs {MIN_SIDE} on each (below "
            "that the coverage harness finds none that holds)"
        )
    if not note:
        found = studentized_interval(boot, per_cluster, difference_of_biases)
        if found is None:
            note = "leaving out one meeting leaves a side empty, so no interval is given"
        else:
            out["ci95"] = [found[1], found[2]]
    if note:
        out["ci_note"] = note
    return out

"""The ceiling on what a judge can save: how many human labels PPI gains
with it, at best, with an interval.

PPI++ estimates a system's mean from n labels Y and the judge's scores f on
them and on many more responses; with lambda at its optimum and judge-only
responses without limit, its variance is Var(Y) (1 - rho^2) / n, rho the
correlation of Y and f among the system's responses (Angelopoulos, Duchi &
Zrnic 2023, PPI++, section 2). So n labels with the judge are worth
n / (1 - rho^2) labels alone, and the judge saves at most a share rho^2 of
the labels for the same interval: the ceiling. Concord's lambda lies in
[0, 1], so a judge that correlates negatively saves nothing: the share is
max(rho, 0)^2. (Dorner, Nastl & Hardt, ICLR 2025, bound the same ratio by 2,
a share of one half, for a judge no more accurate than the model it grades.)

rho here is the within-system correlation, pooled over the systems (each
system's deviations from its own means, the sums added up): PPI estimates
each system's mean on its own, and the systems' different means would
inflate a pooled r. Its 95% interval is the studentized meeting-clustered
bootstrap of Pearson r's (analysis.statistics.bootstrap, on Fisher's z),
from 6 meetings; the share's and the worth's intervals are its ends mapped.
The coverage harness replays it (family `savings`).
"""

from __future__ import annotations

import numpy as np

from analysis.statistics.bootstrap import (
    ClusterBootstrap,
    cluster_sums,
    correlation_clusters_note,
    studentized_interval,
)

SUMS = 6  # per system: count, x, y, x^2, y^2, xy


def within_columns(x: np.ndarray, y: np.ndarray, system: np.ndarray, k: int) -> np.ndarray:
    """(n, 6k): each response's six sums in its system's block (centred on
    the overall means, for stability; unknown x or y weigh nothing)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    valid = np.isfinite(x) & np.isfinite(y)
    xc = np.where(valid, x - x[valid].mean(), 0.0) if valid.any() else np.zeros_like(x)
    yc = np.where(valid, y - y[valid].mean(), 0.0) if valid.any() else np.zeros_like(y)
    own = np.column_stack([valid.astype(float), xc, yc, xc * xc, yc * yc, xc * yc])
    out = np.zeros((len(x), SUMS * k))
    for j in range(SUMS):
        out[np.arange(len(x)), SUMS * np.asarray(system, int) + j] = own[:, j]
    return out


def within_r(sums: np.ndarray) -> np.ndarray:
    """The pooled within-system correlation from (..., 6k) sums; NaN without
    spread. A system with under 2 responses adds nothing."""
    blocks = np.asarray(sums, float).reshape(*np.shape(sums)[:-1], -1, SUMS)
    n, sx, sy, sxx, syy, sxy = np.moveaxis(blocks, -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        usable = n >= 2
        safe = np.where(usable, n, 1.0)
        cxy = np.where(usable, sxy - sx * sy / safe, 0.0).sum(axis=-1)
        cxx = np.where(usable, sxx - sx * sx / safe, 0.0).sum(axis=-1)
        cyy = np.where(usable, syy - sy * sy / safe, 0.0).sum(axis=-1)
        r = cxy / np.sqrt(cxx * cyy)
    scale = np.maximum(np.abs(sxx).sum(axis=-1), np.abs(syy).sum(axis=-1))
    flat = (cxx <= 1e-12 * np.maximum(scale, 1e-300)) | (cyy <= 1e-12 * np.maximum(scale, 1e-300))
    return np.clip(np.where(flat, np.nan, r), -1, 1)


def share_saved(r: float | None) -> float | None:
    """The largest share of labels PPI++ saves at this correlation."""
    return None if r is None else float(max(r, 0.0) ** 2)


def labels_worth(share: float | None) -> float | None:
    """What one label with the judge is worth in labels without: 1 / (1 - share)."""
    if share is None:
        return None
    # a perfect judge (r = 1) makes a label worth any number: no finite value
    return None if share >= 1 else float(1 / (1 - share))


def savings_ceiling(
    boot: ClusterBootstrap,
    system: np.ndarray,
    k: int,
    judge: np.ndarray,
    reference: np.ndarray,
) -> dict:
    """One judge's ceiling against the reference on the responses both
    scored (system codes 0..k-1, meetings the bootstrap's)."""
    columns = within_columns(judge, reference, system, k)
    both = int(columns[:, 0::SUMS].sum())
    if both < 3:
        return {"computable": False, "reason": f"{both} responses scored by both; at least 3"}
    r = float(within_r(columns.sum(axis=0)))
    if not np.isfinite(r):
        return {
            "computable": False,
            "reason": "no spread within a system in the judge's or the reference's scores",
        }
    note = correlation_clusters_note(boot)
    ci: list[float | None] = [None, None]
    if not note:

        def fisher_z(sums: np.ndarray) -> np.ndarray:
            return np.arctanh(np.clip(within_r(sums), -1 + 1e-15, 1 - 1e-15))

        found = studentized_interval(
            boot, cluster_sums(boot.codes, columns, boot.clusters), fisher_z
        )
        if found is None:
            note = "leaving out one meeting leaves no correlation, so no interval is given"
        else:
            ci = [float(np.tanh(found[1])), float(np.tanh(found[2]))]
    share = share_saved(r)
    share_ci = [share_saved(v) for v in ci]
    out: dict[str, object] = {
        "within_system_r": r,
        "r_ci95": ci,
        "share_saved": share,
        "share_saved_ci95": share_ci,
        "labels_worth": labels_worth(share),
        "labels_worth_ci95": [labels_worth(v) for v in share_ci],
        "responses": both,
        "clusters": boot.clusters,
    }
    if note:
        out["ci_note"] = note
    return out

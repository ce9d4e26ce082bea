"""What Bradley-Terry's studentized intervals need from the fits (plain,
analysis.statistics.bradley_terry, or style-controlled,
analysis.statistics.style_control): the fits of the data, of each resample,
and of each less one meeting, and their jackknife covariances."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

# a strength beyond this (log-odds from the mean, odds of e^25) has no finite MLE:
# the fit ran away; a finite MLE of real data lies far inside
DIVERGED = 25.0


@dataclass
class Fits:
    """The strengths of the data, of the data less each meeting, of each
    resample, and of each resample less each of its drawn meetings."""

    data: np.ndarray  # (K,)
    leave_one_out: np.ndarray  # (C, K)
    resampled: np.ndarray  # (R, K)
    resampled_leave_one_out: np.ndarray  # (R, C, K); NaN where a meeting was not drawn
    counts: np.ndarray  # (R, C): how often each meeting was drawn

    @cached_property
    def data_covariance(self) -> np.ndarray:
        """The data's meeting-jackknife covariance of the strengths (K, K)."""
        centred = self.leave_one_out - self.data[None, :]
        return jackknife_covariance(centred, np.ones(len(self.leave_one_out)))

    @cached_property
    def resampled_covariance(self) -> np.ndarray:
        """Each resample's jackknife covariance (R, K, K)."""
        # centred on the resample's own fit (the covariance does not move; sums of
        # squares of values near 0 lose nothing to cancellation)
        centred = self.resampled_leave_one_out - self.resampled[:, None, :]
        return jackknife_covariance(np.nan_to_num(centred), self.counts)

    @cached_property
    def undefined(self) -> np.ndarray:
        """Resamples with no finite fit, or a drawn meeting whose leave-one-out has none."""
        drawn = self.counts > 0
        inner = np.isnan(self.resampled_leave_one_out).any(axis=2) & drawn
        return ~np.isfinite(self.resampled).all(axis=1) | inner.any(axis=1)


def jackknife_covariance(values: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """The jackknife covariance of the strengths: values (..., C, K) with one
    copy of meeting c left out, slots (..., C) copies of each. (..., K, K);
    a contrast w's jackknife variance is w' cov w, as jackknife_se's square
    of the contrast's leave-one-out values (one product per resample instead
    of one pass per contrast)."""
    # a meeting with no copy weighs nothing (its value must be finite: 0 * NaN is NaN)
    slots = np.asarray(slots, float)
    counts = slots.sum(axis=-1)
    weighted = slots[..., None] * values
    mean = weighted.sum(axis=-2) / counts[..., None]
    spread = np.swapaxes(weighted, -1, -2) @ values - counts[..., None, None] * (
        mean[..., :, None] * mean[..., None, :]
    )
    return ((counts - 1) / counts)[..., None, None] * spread

"""Intraclass correlation: the six Shrout & Fleiss / McGraw & Wong forms from a
vectorised two-way ANOVA, with F tests and 95% confidence intervals.

pingouin.intraclass_corr is the reference (tests check agreement to 1e-9); its
pandas path is several times slower on large data, and it rounds the
intervals to 2 decimals by default. `pingouin_icc` wraps it with full-precision
intervals and the row names of pingouin >= 0.6 whatever the version.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special


# scipy.special's F-distribution functions: the same values as scipy.stats.f
# (tests compare with pingouin, which uses stats.f) without its per-call overhead.
def f_ppf(q: float, dfn: float, dfd: float) -> float:
    return float(special.fdtri(dfn, dfd, q))


def f_sf(x: float, dfn: float, dfd: float) -> float:
    return float(special.fdtrc(dfn, dfd, x))


FORMS = ("ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)")
# pingouin up to 0.5 named the rows ICC1 ... ICC3k.
OLD_NAMES = {
    "ICC1": "ICC(1,1)",
    "ICC2": "ICC(A,1)",
    "ICC3": "ICC(C,1)",
    "ICC1k": "ICC(1,k)",
    "ICC2k": "ICC(A,k)",
    "ICC3k": "ICC(C,k)",
}
DESCRIPTIONS = {
    "ICC(1,1)": "one-way random, single rater (Shrout & Fleiss ICC1)",
    "ICC(A,1)": "two-way random, absolute agreement, single rater (ICC2)",
    "ICC(C,1)": "two-way mixed, consistency, single rater (ICC3)",
    "ICC(1,k)": "one-way random, mean of k raters (ICC1k)",
    "ICC(A,k)": "two-way random, absolute agreement, mean of k raters (ICC2k)",
    "ICC(C,k)": "two-way mixed, consistency, mean of k raters (ICC3k)",
}


@dataclass
class IccRow:
    form: str
    icc: float
    f: float
    df1: float
    df2: float
    p: float
    ci_low: float
    ci_high: float

    def as_dict(self) -> dict:
        return {
            "form": self.form,
            "description": DESCRIPTIONS[self.form],
            "icc": self.icc,
            "F": self.f,
            "df1": self.df1,
            "df2": self.df2,
            "p": self.p,
            "ci95": [self.ci_low, self.ci_high],
        }


def icc_table(matrix: np.ndarray, alpha: float = 0.05) -> list[IccRow]:
    """All six forms for a complete targets x raters matrix (no missing values)."""
    x = np.asarray(matrix, dtype=float)
    if x.ndim != 2 or np.isnan(x).any():
        raise ValueError("ICC needs a complete targets x raters matrix (no missing ratings).")
    n, k = x.shape
    if n < 2 or k < 2:
        raise ValueError(f"ICC needs at least 2 targets and 2 raters (got {n} x {k}).")
    grand = x.mean()
    row_means = x.mean(axis=1)
    col_means = x.mean(axis=0)
    ss_total = ((x - grand) ** 2).sum()
    ss_rows = k * ((row_means - grand) ** 2).sum()
    ss_cols = n * ((col_means - grand) ** 2).sum()
    ss_error = ss_total - ss_rows - ss_cols
    msr = ss_rows / (n - 1)
    msc = ss_cols / (k - 1)
    mse = ss_error / ((n - 1) * (k - 1))
    msw = (ss_total - ss_rows) / (n * (k - 1))
    if msr == 0 and mse == 0 and msw == 0:
        raise ValueError("ICC is not defined when every rating is the same (zero variance).")

    icc1 = (msr - msw) / (msr + (k - 1) * msw)
    icc2 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    icc3 = (msr - mse) / (msr + (k - 1) * mse)
    icc1k = (msr - msw) / msr
    icc2k = (msr - mse) / (msr + (msc - mse) / n)
    icc3k = (msr - mse) / msr

    df1, df2_one, df2_two = n - 1, n * (k - 1), (n - 1) * (k - 1)
    f1, f3 = msr / msw, msr / mse
    p1, p3 = f_sf(f1, df1, df2_one), f_sf(f3, df1, df2_two)
    q = 1 - alpha / 2

    f1l = f1 / f_ppf(q, df1, df2_one)
    f1u = f1 * f_ppf(q, df2_one, df1)
    ci1 = ((f1l - 1) / (f1l + (k - 1)), (f1u - 1) / (f1u + (k - 1)))
    ci1k = (1 - 1 / f1l, 1 - 1 / f1u)

    f3l = f3 / f_ppf(q, df1, df2_two)
    f3u = f3 * f_ppf(q, df2_two, df1)
    ci3 = ((f3l - 1) / (f3l + (k - 1)), (f3u - 1) / (f3u + (k - 1)))
    ci3k = (1 - 1 / f3l, 1 - 1 / f3u)

    # ICC(A,1): Satterthwaite's approximation (McGraw & Wong 1996), as pingouin does.
    fj = msc / mse
    vn = df2_two * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
    vd = df1 * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
    v = vn / vd
    f2u = f_ppf(q, n - 1, v)
    f2l = f_ppf(q, v, n - 1)
    low2 = n * (msr - f2u * mse) / (f2u * (k * msc + (k * n - k - n) * mse) + n * msr)
    high2 = n * (f2l * msr - mse) / (k * msc + (k * n - k - n) * mse + n * f2l * msr)
    ci2 = (low2, high2)
    ci2k = (low2 * k / (1 + low2 * (k - 1)), high2 * k / (1 + high2 * (k - 1)))

    return [
        IccRow("ICC(1,1)", icc1, f1, df1, df2_one, p1, *ci1),
        IccRow("ICC(A,1)", icc2, f3, df1, df2_two, p3, *ci2),
        IccRow("ICC(C,1)", icc3, f3, df1, df2_two, p3, *ci3),
        IccRow("ICC(1,k)", icc1k, f1, df1, df2_one, p1, *ci1k),
        IccRow("ICC(A,k)", icc2k, f3, df1, df2_two, p3, *ci2k),
        IccRow("ICC(C,k)", icc3k, f3, df1, df2_two, p3, *ci3k),
    ]


def one_way_unbalanced(scores: np.ndarray, groups: np.ndarray, alpha: float = 0.05) -> dict:
    """ICC(1,1) and ICC(1,k) when items have different numbers of ratings.

    `scores[i]` belongs to item `groups[i]` (integer codes 0..n-1). One-way
    random-effects ANOVA with the effective group size
    k0 = (N - sum(k_i^2) / N) / (n - 1) (Shrout & Fleiss 1979; Donner 1986)."""
    scores = np.asarray(scores, dtype=float)
    sizes = np.bincount(groups).astype(float)
    n, total = len(sizes), sizes.sum()
    if n < 2 or sizes.min() < 1 or total - n < 1:
        raise ValueError("ICC needs at least 2 items and more ratings than items.")
    means = np.bincount(groups, weights=scores) / sizes
    grand = scores.mean()
    ss_between = (sizes * (means - grand) ** 2).sum()
    ss_within = ((scores - means[groups]) ** 2).sum()
    msb = ss_between / (n - 1)
    msw = ss_within / (total - n)
    if msb == 0 and msw == 0:
        raise ValueError("ICC is not defined when every rating is the same (zero variance).")
    k0 = (total - (sizes**2).sum() / total) / (n - 1)
    f = msb / msw
    df1, df2 = n - 1, total - n
    q = 1 - alpha / 2
    fl, fu = f / f_ppf(q, df1, df2), f * f_ppf(q, df2, df1)
    return {
        "k0": k0,
        "ICC(1,1)": {
            "icc": (msb - msw) / (msb + (k0 - 1) * msw),
            "F": f,
            "df1": df1,
            "df2": df2,
            "p": f_sf(f, df1, df2),
            "ci95": [(fl - 1) / (fl + k0 - 1), (fu - 1) / (fu + k0 - 1)],
        },
        "ICC(1,k)": {
            "icc": (msb - msw) / msb,
            "F": f,
            "df1": df1,
            "df2": df2,
            "p": f_sf(f, df1, df2),
            "ci95": [1 - 1 / fl, 1 - 1 / fu],
        },
    }


def pingouin_icc(long_table, targets: str, raters: str, ratings: str) -> list[IccRow]:
    """pingouin's ICC with full-precision intervals and the new row names."""
    import pingouin

    previous = pingouin.options.get("round.column.CI95")
    pingouin.options["round.column.CI95"] = None
    try:
        table = pingouin.intraclass_corr(
            long_table, targets=targets, raters=raters, ratings=ratings
        )
    finally:
        pingouin.options["round.column.CI95"] = previous
    rows = []
    for _, row in table.iterrows():
        form = OLD_NAMES.get(row["Type"], row["Type"])
        low, high = row["CI95"] if "CI95" in row else row["CI95%"]
        rows.append(
            IccRow(
                form,
                float(row["ICC"]),
                float(row["F"]),
                float(row["df1"]),
                float(row["df2"]),
                float(row["pval"]),
                float(low),
                float(high),
            )
        )
    return sorted(rows, key=lambda r: FORMS.index(r.form))

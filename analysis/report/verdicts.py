"""Verdicts a researcher can publish: each one passes, fails or is
inconclusive, says why, and says what would decide it.

- The alternative annotator test (analysis.statistics.alt_test, the authors' procedure)
  per population of human raters (experts, crowd workers, others), read in
  three values:
  * passes: the winning rate omega is at least 0.5 (the authors' rule);
  * fails: for more than half of the raters the reverse one-sided test
    (H1: mean(W_h - W_f) > epsilon, the rater beats the judge by more than
    the margin; Benjamini-Yekutieli at the same q) rejects, so omega cannot
    reach 0.5 however many items are added;
  * inconclusive: neither, or the authors' minimum is not met (3 or more
    human raters, each on 30 or more items: the FAQ of `nitaytech/AltTest`).
    What would decide it comes from that minimum (how many more raters on
    the same items, how many more items for which raters) or, when it is
    met, from a predictive simulation: the study so far plus N more items
    per rater, whose outcomes (W_h - W_f is -1, 0 or 1) are drawn from each
    rater's shares as the data leave them uncertain (a Dirichlet posterior,
    with a prior at the margin); the smallest N at which 90% of the
    simulated studies reach a verdict (pass or fail) is reported as "about
    N more items per rater", promising a verdict in 80% of such studies.
  Scores with no variance among the humans pass trivially, and say so.
- A correlation with the reference is "close" when its 95% interval lies
  at or above 0.7, "moderate" when it lies within [0.5, 0.7), "weak" when
  it lies below 0.5; an interval that spans 0.5 or 0.7 leaves the word open
  and says so. Without an interval (fewer meetings than the interval needs:
  analysis.statistics.bootstrap) the word is read from r alone and is not settled.
- A ranking agrees with the reference's when Kendall's tau is 1 and its
  interval stays at 1; it differs when the interval excludes 1; otherwise
  the resamples disagree and the verdict says so. Tied means name no top
  system.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import special

from analysis.statistics import alt_test
from analysis.statistics.stats import not_computable

MIN_RATERS = alt_test.RECOMMENDED_HUMANS  # 3: the authors' FAQ
MIN_ITEMS = alt_test.MIN_ITEMS_PER_HUMAN  # 30: the authors' FAQ
POWER_TARGET = 0.9  # the simulated chance of reaching a verdict that sizes the study
# what the words promise: less than the simulation finds, because a judge near the
# margin looks farther from it than it is in a few dozen items (the coverage
# harness: promised at the simulation's own rate, predictions came true 42% of the
# time for a judge at the margin where 82% was promised)
POWER_PROMISE = 0.8
POWER_SIMULATIONS = 400
# The prior's weight: 10 items on which the judge sits exactly at the margin. With
# none (the observed shares plugged in) the simulation promised verdicts that the
# larger studies did not reach; with 30, it asked for twice the items it asks with
# 10 (the coverage harness's replays: docs/analysis.md)
PRIOR_ITEMS = 30
POWER_FACTORS = (1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32)
POWER_SEED = 20251125
# Above this many tested raters the simulation follows this many of them,
# drawn at random (seeded), each standing for its share of the rest (the
# Benjamini-Yekutieli thresholds stay those of every tested rater:
# rejected_share). Its cost grows with raters x studies x sizes: with every one
# of 10,000 crowd raters, "what would decide it" took 15 s of an 18 s report
# (benchmarks/analysis_scale.py at 10^6 ratings); the paper's data and any
# study below the cap are simulated rater by rater as before.
SIMULATED_RATERS = 100
CLOSE, MODERATE = 0.7, 0.5

POPULATIONS = {
    # population: (one rater, several raters, one rater with its article)
    "crowd": ("crowd rater", "crowd raters", "a crowd rater"),
    "experts": ("expert", "experts", "an expert"),
    "other": ("human rater", "human raters", "a human rater"),
}
KIND_POPULATION = {"gold_human": "experts", "crowd_human": "crowd"}


def population_of(kind: str) -> str:
    return KIND_POPULATION.get(kind, "other")


def plural(count: int, word: str, several: str | None = None) -> str:
    """The count and its word: "1 expert", "3 experts" (`several`: an irregular plural)."""
    return f"{count} {word if count == 1 else (several or word + 's')}"


# --- The alt-test in three values ------------------------------------------------------------


def reverse_rejections(
    wins: alt_test.Wins, tested: np.ndarray, epsilon: float, q: float
) -> np.ndarray:
    """Per rater: whether the reverse one-sided test (the rater beats the judge
    by more than epsilon) is rejected, Benjamini-Yekutieli over the tested raters."""
    n, _, p_less = alt_test.one_sided_t_pvalues(wins.differences, wins.rater_index, epsilon)
    with np.errstate(invalid="ignore"):
        # the upper tail of the same t statistic (stdtr is the lower one)
        p_greater = 1.0 - p_less
    rejected = np.zeros(len(wins.rater_codes), dtype=bool)
    index = np.flatnonzero(tested)
    rejected[index] = alt_test.benjamini_yekutieli(p_greater[index], q)
    return rejected


def outcome_counts(wins: alt_test.Wins) -> np.ndarray:
    """Per rater: how many items gave W_h - W_f = -1, 0 and 1 (raters x 3)."""
    codes = (wins.differences + 1).astype(int)
    raters = len(wins.rater_codes)
    return np.bincount(wins.rater_index * 3 + codes, minlength=raters * 3).reshape(raters, 3)


def posterior_shares(
    counts: np.ndarray, epsilon: float, rng: np.random.Generator, simulations: int
) -> np.ndarray:
    """Each rater's outcome shares (-1, 0, 1), drawn once per simulated study
    from their posterior (simulations x raters x 3): a Dirichlet on the counts
    plus PRIOR_ITEMS items at the margin (mean W_h - W_f equal to epsilon, with
    the rater's own share of ties). The shares are an estimate: plugged in as
    they are, every simulated study would share their error, and the
    simulation would promise too much; the prior leans toward the margin,
    where no number of items decides."""
    ties = np.minimum(counts[:, 1] / counts.sum(axis=1), 1 - epsilon)
    margin = np.stack([(1 - ties - epsilon) / 2, ties, (1 - ties + epsilon) / 2], axis=1)
    alpha = np.maximum(counts + PRIOR_ITEMS * margin, 1e-9)  # a share never seen, nor at the margin
    gammas = rng.standard_gamma(alpha, size=(simulations, *alpha.shape))
    return gammas / gammas.sum(axis=2, keepdims=True)


def simulated_verdicts(
    counts: np.ndarray,
    sizes: np.ndarray,
    shares: np.ndarray,
    epsilon: float,
    q: float,
    rng: np.random.Generator,
    tested: int | None = None,
) -> tuple[float, float]:
    """The share of simulated studies that pass and that fail when each rater
    j has the outcomes so far (counts[j]) and sizes[j] - now more, drawn from
    that study's shares (posterior_shares). `tested`: how many raters the
    simulated ones stand for (all of them when None)."""
    now = counts.sum(axis=1)
    more = np.broadcast_to(sizes - now, shares.shape[:2])
    draws = counts[None, :, :] + rng.multinomial(more, shares)  # simulations x raters x 3
    n = sizes[None, :].astype(float)
    total = draws[:, :, 2] - draws[:, :, 0]
    mean = total / n
    squares = draws[:, :, 2] + draws[:, :, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = (squares - n * mean**2) / (n - 1)
        t = (mean - epsilon) / np.sqrt(np.maximum(variance, 0) / n)
        p_less = special.stdtr(n - 1, t)
    p_less = np.where(np.isnan(t), 1.0, p_less)  # mean == epsilon with no spread: no evidence
    p_greater = np.where(np.isnan(t), 1.0, 1.0 - p_less)
    passes = rejected_share(p_less, q, tested) >= 0.5
    fails = rejected_share(p_greater, q, tested) > 0.5
    return float(passes.mean()), float(fails.mean())


def rejected_share(p_values: np.ndarray, q: float, tested: int | None = None) -> np.ndarray:
    """Per row (a simulated study): the share of its p-values the
    Benjamini-Yekutieli procedure rejects (alt_test.benjamini_yekutieli, for
    every row at once). `tested`: the number of raters the m columns stand
    for, each column for tested / m of them (a random sample of raters): the
    procedure on that many p-values, each of the m repeated tested / m times,
    rejects the k smallest columns' raters when p_(k) <= k / m * q / H(tested),
    H the harmonic number. None: the columns are every tested rater."""
    rows, m = p_values.shape
    ordered = np.sort(np.nan_to_num(p_values, nan=np.inf), axis=1)
    harmonic = np.sum(1.0 / np.arange(1, (tested or m) + 1))
    thresholds = np.arange(1, m + 1) / m * (q / harmonic)
    below = ordered <= thresholds[None, :]
    # the largest k with p_(k) <= threshold_k: that many are rejected
    last = np.where(below.any(axis=1), m - np.argmax(below[:, ::-1], axis=1), 0)
    return last / m


def items_to_decide(
    wins: alt_test.Wins, tested: np.ndarray, epsilon: float, q: float, seed: int = POWER_SEED
) -> dict:
    """The predictive simulation: the smallest multiple of each rater's items
    at which a verdict is reached in POWER_TARGET of the simulated studies
    (the outcomes so far, and the rest drawn from posterior_shares: the same
    shares at every size)."""
    every = outcome_counts(wins)[tested]
    now = every.sum(axis=1)
    rng = np.random.default_rng(seed)
    counts = every
    if len(every) > SIMULATED_RATERS:
        counts = every[np.sort(rng.choice(len(every), SIMULATED_RATERS, replace=False))]
    simulated_now = counts.sum(axis=1)
    shares = posterior_shares(counts, epsilon, rng, POWER_SIMULATIONS)
    for factor in POWER_FACTORS:
        sizes = np.ceil(simulated_now * factor).astype(int)
        passes, fails = simulated_verdicts(
            counts, sizes, shares, epsilon, q, rng, tested=len(every)
        )
        if passes + fails >= POWER_TARGET:
            more = int(np.ceil(np.median(np.ceil(now * factor) - now)))
            return {
                "more_items": more,
                "factor": factor,
                "decided_probability": passes + fails,
                "pass_probability": passes,
            }
    return {
        "more_items": None,
        "factor": POWER_FACTORS[-1],
        "decided_probability": None,
        "pass_probability": None,
        "beyond": int(np.ceil(np.median(now * (POWER_FACTORS[-1] - 1)))),
    }


def most_raters_per_item(annotations: pd.DataFrame, judge: pd.Series) -> int:
    """The most human raters on any one item the judge scored."""
    scored = annotations[
        annotations["score"].notna() & annotations["item"].isin(judge.dropna().index)
    ]
    return int(scored.groupby("item", observed=True)["rater"].nunique().max()) if len(scored) else 0


def shortfall(wins: alt_test.Wins) -> tuple[int, list[tuple[str, int]], int]:
    """What the authors' minimum (MIN_RATERS raters rating the same items,
    each on MIN_ITEMS or more) still lacks: how many more raters on the same
    items (MIN_RATERS less the most on any one item; each rates MIN_ITEMS or
    more of them), which raters with fewer than MIN_ITEMS items must reach it
    so that MIN_RATERS raters have enough (those closest to it first; the new
    raters count), as (rater, items) pairs, and how many raters are short."""
    per_rater = wins.items_per_rater
    more_raters = max(0, MIN_RATERS - wins.raters_per_item[1])
    missing = max(0, MIN_RATERS - int((per_rater >= MIN_ITEMS).sum()) - more_raters)
    short = [
        (str(code), int(n))
        for code, n in zip(wins.rater_codes, per_rater, strict=True)
        if n < MIN_ITEMS
    ]
    closest = sorted(short, key=lambda entry: -entry[1])  # stable: the table's order on ties
    return more_raters, closest[:missing], len(short)


def alt_test_verdict(
    annotations: pd.DataFrame,
    judge: pd.Series,
    *,
    population: str,
    evaluators: list[str],
    described: dict[str, dict],
    epsilon: float,
    epsilon_rule: str,
    alignment: str,
    q: float = alt_test.Q_FDR,
) -> dict:
    """The alt-test of one judge against one population of human raters, in
    three values, with what would decide it."""
    noun, several, _ = POPULATIONS[population]
    raters = int(annotations["rater"].nunique()) if len(annotations) else 0
    base = {
        "population": population,
        "evaluators": evaluators,
        "raters": raters,
        "epsilon": float(epsilon),
        "epsilon_rule": epsilon_rule,
        "trivial": False,
        "more_raters": None,
        "more_items": None,
        "reverse_share": None,
        "decided_probability": None,
    }
    if raters == 0:
        roles = "; ".join(f"{name} is {d['role']}" for name, d in described.items())
        reason = f"the selection holds no individual ratings by {several}" + (
            f" ({roles})" if roles else ""
        )
        return base | {
            "verdict": "no_data",
            "reason": reason,
            "decide": f"rate with at least {MIN_RATERS} {several} per item, "
            f"on {MIN_ITEMS} or more items each",
            "more_raters": MIN_RATERS,
            "test": not_computable(reason),
        }
    wins = alt_test.win_table(annotations, judge, alignment=alignment)
    test = alt_test.alt_test(
        annotations, judge, epsilon=epsilon, alignment=alignment, q=q, wins=wins
    )
    base["test"] = test
    if isinstance(wins, dict):  # no item with 2 or more raters and the judge
        # at most one rater on any item the judge scored: the others are missing
        # there, however many raters the selection holds elsewhere
        most = most_raters_per_item(annotations, judge)
        more = MIN_RATERS - most
        need = (
            f"needs at least {MIN_RATERS} {several} rating the same {MIN_ITEMS}+ items: "
            f"{plural(more, 'more rater')} on the same items"
            + ("" if most else " (the judge scored none of the items rated)")
        )
        return base | {
            "verdict": "inconclusive",
            "reason": f"not enough human data ({plural(raters, noun, several)}): {wins['reason']}",
            "decide": need,
            "more_raters": more,
        }
    per_rater = wins.items_per_rater
    enough = per_rater >= MIN_ITEMS
    more_raters, to_complete, short = shortfall(wins)
    if more_raters or to_complete:
        parts = [f"{plural(more_raters, 'more rater')} on the same items"] if more_raters else []
        if to_complete:
            listed = ", ".join(f"{code} has {n}: {MIN_ITEMS - n} more" for code, n in to_complete)
            among = "" if len(to_complete) == short else f"{len(to_complete)} of the {short} "
            parts.append(f"items for {among}raters with fewer than {MIN_ITEMS} ({listed})")
        provisional = (
            f"; provisionally ω {test['winning_rate']:.2f}"
            if test.get("computable", True) is not False
            else ""
        )
        return base | {
            "verdict": "inconclusive",
            "reason": f"not enough human data: {plural(int(enough.sum()), 'rater')} with "
            f"{MIN_ITEMS}+ items, at most {wins.raters_per_item[1]} per item{provisional}",
            "decide": f"needs at least {MIN_RATERS} {several} on {MIN_ITEMS}+ items each: "
            + "; ".join(parts),
            "more_raters": more_raters or None,
            "more_items": max((MIN_ITEMS - n for _, n in to_complete), default=0) or None,
        }
    # The authors' minimum is met: the test decides or the simulation says how far it is.
    omega = test["winning_rate"]
    if test["passed"]:
        trivial = bool(np.ptp(wins.human_scores) == 0)
        words = (
            f"passes trivially: no variance (every one of the {several} gave the same score to "
            "every item, so any rater agrees with the rest)"
            if trivial
            else f"passes at ε {epsilon:g}: ω {omega:.2f}, ρ {test['advantage_probability']:.2f}"
        )
        return base | {"verdict": "passes", "trivial": trivial, "reason": words, "decide": None}
    tested = enough
    reversed_ = reverse_rejections(wins, tested, epsilon, q)
    share = float(reversed_[tested].mean())
    base["reverse_share"] = share
    if share > 0.5:
        return base | {
            "verdict": "fails",
            "reason": f"fails at ε {epsilon:g}: ω {omega:.2f}; {share:.0%} of the {several} beat "
            "it by more than ε (the reverse test), so ω cannot reach 0.5 with more items",
            "decide": None,
        }
    power = items_to_decide(wins, tested, epsilon, q)
    if power["more_items"] is None:
        # no promise here: replayed, most such studies did reach a verdict at 32 times the data
        decide = (
            "too few ratings to say how many more items per rater would decide it (no size up "
            f"to {POWER_FACTORS[-1]:g} times the data decides it in {POWER_TARGET:.0%} of "
            f"simulated studies: the judge may sit close to the margin ε {epsilon:g}); rate "
            "more items and look again"
        )
    else:
        decide = (
            f"about {power['more_items']} more items per rater would decide it: a verdict in "
            f"{POWER_PROMISE:.0%} or more of studies that size ({power['decided_probability']:.0%} "
            "of those simulated from the ratings so far, their uncertainty included; a judge "
            "nearer the margin than it looks needs more)"
        )
    return base | {
        "verdict": "inconclusive",
        "reason": f"inconclusive at ε {epsilon:g}: ω {omega:.2f} (the judge beats too few raters "
        f"to pass, and too few beat it to fail)",
        "decide": decide,
        "more_items": power["more_items"],
        "decided_probability": power["decided_probability"],
        "promised_probability": None if power["more_items"] is None else POWER_PROMISE,
    }


# --- Correlation and ranking -----------------------------------------------------------------


def correlation_words(correlation: dict, reference: str) -> dict:
    """The correlation's verdict (close, moderate, weak, open) and its words."""
    r = correlation["r"]
    low, high = correlation["ci95"] if correlation.get("ci95") else (None, None)
    note = correlation.get("ci_note")
    if low is None or high is None:
        # without an interval the point estimate's word is only provisional
        verdict = "close" if r >= CLOSE else "moderate" if r >= MODERATE else "weak"
        numbers = f"Pearson r {r:.2f}; {note or 'no interval: not enough resamples'}"
        return {
            "verdict": verdict,
            "settled": False,
            "words": f"tracks {reference} {_ADVERB[verdict]} by r, not settled without an "
            f"interval ({numbers})",
        }
    numbers = (
        f"Pearson r {r:.2f}, 95% CI {low:.2f}–{high:.2f} over {correlation['clusters']} "
        "resampled meetings"
    )
    if low >= CLOSE:
        return {"verdict": "close", "settled": True, "words": _tracks("close", reference, numbers)}
    if high < MODERATE:
        return {"verdict": "weak", "settled": True, "words": _tracks("weak", reference, numbers)}
    if low >= MODERATE and high < CLOSE:
        return {
            "verdict": "moderate",
            "settled": True,
            "words": _tracks("moderate", reference, numbers),
        }
    spans = [t for t in (MODERATE, CLOSE) if low < t <= high]
    point = "close" if r >= CLOSE else "moderate" if r >= MODERATE else "weak"
    return {
        "verdict": point,
        "settled": False,
        "words": f"tracks {reference} {_ADVERB[point]} by r, but the interval spans "
        f"{' and '.join(f'{t:g}' for t in spans)}, so that is not settled ({numbers})",
    }


_ADVERB = {"close": "closely", "moderate": "only moderately", "weak": "weakly"}


def _tracks(verdict: str, reference: str, numbers: str) -> str:
    if verdict == "weak":
        return f"does not track {reference} ({numbers}: a weak correlation)"
    return f"tracks {reference} {_ADVERB[verdict]} ({numbers})"


def ranking_words(ranking: dict, reference: str) -> dict:
    """The ranking's verdict (same, different, open) and its words."""
    tau = ranking["kendall_tau"]
    systems = len(ranking["judge_ranking"])
    if tau is None:
        return {
            "verdict": "open",
            "settled": False,
            "words": "no ranking agreement can be read "
            f"({ranking.get('top_note') or 'every mean ties'})",
        }
    low, high = ranking["ci95"]
    interval = f"τ {tau:.2f} [{two_places(low)}, {two_places(high)}]"
    subject = f"these {systems} systems"
    if ranking.get("top_note"):
        interval += f"; {ranking['top_note']}"
    if low is None or high is None:
        verdict = "same" if tau >= 1 - 1e-12 else "different"
        how = f"as {reference} does" if verdict == "same" else f"differently from {reference}"
        note = ranking.get("ci_note") or "no interval: not enough resamples"
        return {
            "verdict": verdict,
            "settled": False,
            "words": f"ranks {subject} {how} here, not settled without an interval "
            f"(τ {tau:.2f}; {note})",
        }
    if tau >= 1 - 1e-12 and low >= 1 - 1e-12:
        return {
            "verdict": "same",
            "settled": True,
            "words": f"ranks {subject} as {reference} does ({interval})",
        }
    if tau >= 1 - 1e-12:
        return {
            "verdict": "same",
            "settled": False,
            "words": f"ranks {subject} as {reference} does here, but not in every resample of "
            f"the meetings ({interval}): not settled",
        }
    if high >= 1 - 1e-12:
        return {
            "verdict": "different",
            "settled": False,
            "words": f"ranks {subject} differently from {reference} here, but the interval "
            f"includes the same ranking ({interval}): not settled",
        }
    return {
        "verdict": "different",
        "settled": True,
        "words": f"ranks {subject} differently from {reference} ({interval})",
    }


def two_places(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.2f}"


# --- The answer in words, per use ------------------------------------------------------------


def population_words(verdict: dict) -> str:
    """One clause: can the judge replace a rater of this population."""
    noun, several, one = POPULATIONS[verdict["population"]]
    raters = verdict["raters"]
    if verdict["verdict"] == "passes":
        if verdict["trivial"]:
            return f"it passes trivially against {several}: no variance in their scores"
        test = verdict["test"]
        return (
            f"it can replace {one} (alt-test passes at ε {verdict['epsilon']:g}: "
            f"ω {test['winning_rate']:.2f})"
        )
    if verdict["verdict"] == "fails":
        test = verdict["test"]
        return (
            f"it cannot replace {one} (alt-test fails at ε {verdict['epsilon']:g}: "
            f"ω {test['winning_rate']:.2f})"
        )
    if verdict["verdict"] == "no_data":
        return f"no verdict against {several}: {verdict['reason']}"
    return f"inconclusive against {several} ({plural(raters, noun, several)}; {verdict['decide']})"


# The answer's clauses in their order: the ranking, the scores response by
# response, then each population of raters.
CLAUSE_ORDER = ("ranking", "scores", "crowd", "experts", "other")


def constant_words(score: float) -> str:
    return (
        f"gives every answer the same score ({score:g}): a constant judge cannot rank the systems"
    )


def answer(judge: str, row: dict, populations: list[str]) -> tuple[dict, str]:
    """Per use, a clause; and the sentence joining them. Beside the ranking,
    how closely the judge follows the reference response by response: three
    systems can be ranked alike by a judge whose scores say little."""
    clauses: dict[str, str] = {}
    ranking = row.get("ranking_verdict")
    if row.get("constant_score") is not None:
        clauses["ranking"] = constant_words(row["constant_score"])
    elif ranking is not None:
        clauses["ranking"] = ranking["words"]
    else:
        reason = (
            row["ranking"].get("reason", "no reference")
            if isinstance(row["ranking"], dict)
            else "no reference"
        )
        clauses["ranking"] = f"cannot be compared on the ranking ({reason})"
    correlation = row.get("correlation_verdict")
    if correlation is not None and row.get("constant_score") is None:
        clauses["scores"] = f"response by response it {correlation['words']}"
    for population in populations:
        verdict = row["alt_tests"].get(population)
        if verdict is not None:
            clauses[population] = population_words(verdict)
    for population in ("crowd", "experts"):
        # a use the selection cannot answer says so, rather than going unmentioned
        if population not in clauses:
            several = POPULATIONS[population][1]
            clauses[population] = f"no verdict against {several}: none in the selection"
    ordered = [clauses[u] for u in CLAUSE_ORDER if u in clauses]
    return clauses, f"{judge} " + "; ".join(ordered) + "."

"""The answer as a table: one row per judge, one cell per use (rank the
systems, replace a crowd rater, replace an expert), each a verdict (passes,
fails, inconclusive, cannot be answered here) with the numbers behind it, so
that a weak judge reads weak beside a strong one and a constant judge is named
as one. The verdicts are analysis.report.verdicts'; this only lays them out."""

from __future__ import annotations

from analysis.report.verdicts import POPULATIONS, plural, two_places

USE_LABELS = {
    "ranking": "Rank the systems",
    "crowd": "Replace a crowd rater",
    "experts": "Replace an expert",
}
CELL_WORDS = {
    "passes": "passes",
    "fails": "fails",
    "inconclusive": "inconclusive",
    "not_here": "cannot be answered here",
}


def _interval(value: float | None, ci95: list | None) -> str:
    low, high = ci95 if ci95 else (None, None)
    if low is None or high is None:
        return f"{two_places(value)} (no interval)"
    return f"{two_places(value)} [{two_places(low)}, {two_places(high)}]"


def ranking_cell(row: dict) -> dict:
    """Rank the systems: τ with its interval settles it; r beside it says how
    much the judge's scores follow the reference response by response."""
    if row.get("constant_score") is not None:
        return {
            "verdict": "fails",
            "numbers": f"constant: every answer scored {row['constant_score']:g}",
        }
    ranking, verdict = row.get("ranking"), row.get("ranking_verdict")
    if verdict is None or not isinstance(ranking, dict):
        reason = ranking.get("reason", "no reference") if isinstance(ranking, dict) else ""
        return {"verdict": "not_here", "numbers": reason or "no reference"}
    if verdict["verdict"] == "open" or not verdict["settled"]:
        cell = "inconclusive"
    else:
        cell = "passes" if verdict["verdict"] == "same" else "fails"
    numbers = [f"τ {_interval(ranking['kendall_tau'], ranking.get('ci95'))}"]
    correlation = row.get("correlation")
    if isinstance(correlation, dict) and correlation.get("computable", True):
        words = row.get("correlation_verdict") or {}
        strength = {"close": "close", "moderate": "moderate", "weak": "weak"}.get(
            words.get("verdict", ""), ""
        )
        numbers.append(
            f"r {_interval(correlation['r'], correlation.get('ci95'))}"
            + (f" {strength}" if strength else "")
            + ("" if words.get("settled", True) else ", not settled")
        )
    return {"verdict": cell, "numbers": "; ".join(numbers)}


def population_cell(verdict: dict | None, population: str) -> dict:
    """Replace a rater of the population: the alt-test's verdict, ω at ε."""
    several = POPULATIONS[population][1]
    if verdict is None:
        return {"verdict": "not_here", "numbers": f"no {several} in the selection"}
    if verdict["verdict"] == "no_data":
        return {"verdict": "not_here", "numbers": verdict["reason"]}
    test = verdict.get("test")
    numbers = f"{plural(verdict['raters'], POPULATIONS[population][0], several)}"
    if isinstance(test, dict) and test.get("computable", True) and "winning_rate" in test:
        numbers += f"; ω {test['winning_rate']:.2f} at ε {verdict['epsilon']:g}"
    if verdict["verdict"] == "passes" and verdict.get("trivial"):
        numbers += "; trivially: no variance in their scores"
    return {"verdict": verdict["verdict"], "numbers": numbers}


def use_cells(row: dict) -> dict[str, dict]:
    """Per use (ranking, crowd, experts): {"verdict", "numbers"}, the cells of
    the report's table of judges x uses."""
    return {
        "ranking": ranking_cell(row),
        "crowd": population_cell(row["alt_tests"].get("crowd"), "crowd"),
        "experts": population_cell(row["alt_tests"].get("experts"), "experts"),
    }

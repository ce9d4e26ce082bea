"""The coverage harness's rows, their verdicts, and the table.

A row is one interval or decision Concord reports, replayed many times on one
dataset in one setting (labels per system, a goal...). Its coverage is the
share of replays whose interval held the truth, over the replays where
Concord reported one: the worst group's (the worst system) and, where
several intervals are read together, all of them at once. A method that
refuses below its condition ("not enough labels for an interval: N more")
is judged on what it reports, and the row says how often it reported.

A row holds when its coverage is at least TARGET (0.94 for a 95% interval);
a row whose method reported nothing is "not reported below its condition".
Decisions (a verdict that contradicts all the data, a prediction that does
not come true) are rows too, as the share of replays in which the promise
held.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

TARGET = 0.94
NOT_REPORTED = "not reported below its condition"


@dataclass
class Settings:
    replays: int = 1000
    seed: int = 0
    small: bool = False
    resamples: int = 400  # bootstrap resamples within a replay


@dataclass
class Row:
    family: str
    statistic: str
    dataset: str
    setting: str
    replays: int
    coverage: float | None  # the worst group's, over the replays that reported
    coverage_all: float | None = None  # all groups at once
    # whether all at once is part of the promise (intervals read together, e.g. a
    # ranking); otherwise it is shown, not judged
    simultaneous: bool = False
    width: float | None = None  # mean full width of the reported intervals
    reported: float = 1.0  # share of replays in which an interval was reported
    cost: float | None = None  # e.g. ratings paid against the fixed design's (a ratio)
    target: float = TARGET
    # a cost the row promises to stay under (e.g. 1.0: no more than the fixed design)
    cost_target: float | None = None
    judged: bool = True  # False: shown beside the others, not a promise
    # the CI mode's few replays: a row fails only below target - slack (3 Monte-Carlo
    # errors); the full mode's table has none
    slack: float = 0.0
    promise: str = "95% interval"
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def reported_replays(self) -> int:
        return int(round(self.reported * self.replays))

    @property
    def monte_carlo_error(self) -> float | None:
        n = self.reported_replays
        return math.sqrt(self.target * (1 - self.target) / n) if n else None

    @property
    def status(self) -> str:
        if not self.judged:
            return "shown"
        if self.reported_replays == 0 or self.coverage is None:
            return NOT_REPORTED
        read = self.coverage
        if self.simultaneous and self.coverage_all is not None:
            read = min(read, self.coverage_all)
        if read < self.target - self.slack - 1e-12:
            return f"below {self.target:g}"
        if self.cost_target is not None and (self.cost or 0) > self.cost_target + 1e-12:
            return f"costs more than {self.cost_target:g}x"
        return "holds"

    def as_dict(self) -> dict:
        out = asdict(self)
        out["status"] = self.status
        out["monte_carlo_error"] = self.monte_carlo_error
        return out


def ci_slack(row: Row) -> float:
    """Three Monte-Carlo standard errors of a coverage at the target, over the
    replays the row reported in (the CI mode's allowance for its few replays)."""
    n = max(row.reported_replays, 1)
    return 3 * math.sqrt(row.target * (1 - row.target) / n)


def fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table, grouped by statistic."""
    lines = [
        "| statistic | dataset | setting | replays | reported | coverage (worst) "
        "| all at once | width | cost | status |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r.statistic} | {r.dataset} | {r.setting} | {r.replays} | {fmt(r.reported, 2)} "
            f"| {fmt(r.coverage)} | {fmt(r.coverage_all)} | {fmt(r.width, 2)} "
            f"| {fmt(r.cost, 2)} | {r.status} |"
        )
    return "\n".join(lines)

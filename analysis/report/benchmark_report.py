"""A benchmark's results in its authors' shape: a table of task scores (0-100)
per system and metric with the average over tasks, as ZeroSCROLLS' leaderboard
and L-Eval's tables print them; win rates against the baseline from pairwise
judges (L-Eval's open-ended tasks), counted as each judge counts; and, where
people rated the same responses, Kendall's tau between each automatic metric
and the human scores (L-Eval reports it), per response and per system.

A task score is computed by the metric's own plug-in from the stored
judgments, in the benchmark's question order (ZeroSCROLLS' ROUGE from the
F-measures kept with each judgment; L-Eval's topic retrieval by position):
what `manage.py score` prints for the same predictions.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from corpus.models import Benchmark, Dataset, QuestionText
from generation.models import Response
from judging.evaluators import Metric, UnknownEvaluator, plugin_for
from judging.metrics import longbench_v2
from judging.models import HUMAN_KINDS, Evaluator, Judgment

# The score column of a benchmark without tasks (its one dataset's task is "").
TASKLESS_COLUMN = "score"


def task_column(task: str) -> str:
    return task or TASKLESS_COLUMN


@dataclass
class TaskScore:
    system: str
    metric: str
    task: str
    score: float | None  # 0-100; None when no item could be scored
    items: int  # in the score
    left_out: int = 0  # scored, but left out of the task score as the official script does
    left_out_because: str = ""


@dataclass
class BenchmarkReport:
    benchmark: str
    name: str
    format: str
    split: str
    tasks: list[str]
    scores: list[TaskScore] = field(default_factory=list)
    win_rates: list[dict[str, Any]] = field(default_factory=list)
    kendall: list[dict[str, Any]] = field(default_factory=list)
    # per metric or human evaluator: its Bradley-Terry ranking of the systems
    rankings: list[dict[str, Any]] = field(default_factory=list)
    # LongBench v2: result.py's Overall, Easy, Hard, Short, Medium, Long per system
    breakdown: list[dict[str, Any]] = field(default_factory=list)

    @property
    def has_average(self) -> bool:
        """A benchmark without tasks (one unnamed task) has its score and no average."""
        return self.tasks != [""]

    def _by_row(self) -> dict[tuple[str, str], dict[str, float | None]]:
        grouped: dict[tuple[str, str], dict[str, float | None]] = defaultdict(dict)
        for row in self.scores:
            grouped[(row.system, row.metric)][row.task] = row.score
        return grouped

    def _metric_tasks(self) -> dict[str, set[str]]:
        """The tasks each metric scored for any system: what its averages cover."""
        tasks: dict[str, set[str]] = defaultdict(set)
        for row in self.scores:
            tasks[row.metric].add(row.task)
        return tasks

    def averages(self) -> dict[tuple[str, str], float | None]:
        """(system, metric): the mean of its task scores, when it has a score on
        every task the metric scored for any system; else None, since a mean
        over fewer (or other) tasks would not compare with the others'."""
        metric_tasks = self._metric_tasks()
        averages: dict[tuple[str, str], float | None] = {}
        for (system, metric), scores in self._by_row().items():
            values = [scores.get(task) for task in sorted(metric_tasks[metric])]
            complete = all(v is not None for v in values)
            averages[(system, metric)] = (
                sum(v for v in values if v is not None) / len(values) if complete else None
            )
        return averages

    def missing_for_average(self) -> list[dict[str, Any]]:
        """Each system and metric without an average, with the tasks it lacks."""
        metric_tasks = self._metric_tasks()
        missing = []
        for (system, metric), scores in sorted(self._by_row().items()):
            lacking = sorted(t for t in metric_tasks[metric] if scores.get(t) is None)
            if lacking:
                missing.append({"system": system, "metric": metric, "tasks": lacking})
        return missing

    def left_out(self) -> list[dict[str, Any]]:
        """Each metric's and task's items left out of its task scores, and why
        (the most of any system: the same questions for each)."""
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for row in self.scores:
            if row.left_out:
                entry = found.setdefault(
                    (row.metric, row.task),
                    {"metric": row.metric, "task": row.task, "items": 0, "because": ""},
                )
                entry["items"] = max(entry["items"], row.left_out)
                entry["because"] = row.left_out_because
        return [found[key] for key in sorted(found)]

    def rows(self) -> list[dict[str, Any]]:
        """The table, one row per system and metric: each task's score, then the average."""
        table: dict[tuple[str, str], dict[str, Any]] = {}
        for row in self.scores:
            entry = table.setdefault(
                (row.system, row.metric), {"system": row.system, "metric": row.metric}
            )
            entry[task_column(row.task)] = row.score
        averages = self.averages()
        if self.has_average:
            for key, entry in table.items():
                entry["average"] = averages.get(key)
        return [table[key] for key in sorted(table)]

    def as_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "name": self.name,
            "format": self.format,
            "split": self.split,
            "tasks": self.tasks,
            "table": self.rows(),
            "win_rates": self.win_rates,
            "kendall_tau": self.kendall,
            "rankings": self.rankings,
            "no_average": self.missing_for_average() if self.has_average else [],
            "left_out": self.left_out(),
            "breakdown": self.breakdown,
        }


def benchmark_report(slug: str, split: str, projects: list[int] | None = None) -> BenchmarkReport:
    """The benchmark's task scores on the runs of `projects` (None: every project)."""
    benchmark = Benchmark.objects.filter(slug=slug).first()
    if benchmark is None:
        known = ", ".join(Benchmark.objects.order_by("slug").values_list("slug", flat=True))
        raise ValueError(f"No benchmark {slug!r}; known: {known or 'none'}.")
    datasets = list(Dataset.objects.filter(benchmark=benchmark, split=split).order_by("task"))
    if not datasets:
        splits = sorted(
            set(Dataset.objects.filter(benchmark=benchmark).values_list("split", flat=True))
        )
        raise ValueError(
            f"{benchmark.name} has no split {split!r}; its splits: {', '.join(splits)}."
        )
    report = BenchmarkReport(
        slug, benchmark.name, benchmark.format, split, [d.task for d in datasets]
    )
    judgments = (
        Judgment.objects.filter(response__run__dataset__in=datasets, evaluator__kind="metric")
        .filter(**({} if projects is None else {"response__run__project__in": projects}))
        .order_by(
            "response__run__dataset__task",
            "response__question__document__external_id",
            "response__question__order",
        )
        .values_list(
            "evaluator_id",
            "response__run__system__name",
            "response__run__dataset__task",
            "raw_score",
            "feedback",
            "response__question_id",
            "response__run__dataset_id",
        )
    )
    # how the data say each question is evaluated (L-Eval's `evaluation`; else None),
    # and LongBench v2's groups (difficulty, length)
    evaluations, groups = {}, {}
    for question, dataset, evaluation, difficulty, length in QuestionText.objects.filter(
        dataset__in=datasets
    ).values_list(
        "question_id", "dataset_id", "prompt__evaluation", "prompt__difficulty", "prompt__length"
    ):
        evaluations[(question, dataset)] = evaluation
        groups[(question, dataset)] = {"difficulty": difficulty, "length": length}
    grouped: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    Item = tuple[float, dict[str, float], str | None]
    collected: dict[tuple[int, str, str], list[Item]] = defaultdict(list)
    for evaluator_id, system, task, raw, feedback, question, dataset in judgments:
        parts = json.loads(feedback) if feedback.startswith("{") else {}
        evaluation = evaluations.get((question, dataset))
        collected[(evaluator_id, system, task)].append((raw, parts, evaluation))
        if benchmark.format == Benchmark.Format.LONGBENCH_V2:
            judged = {"judge": raw == 1.0, **groups[(question, dataset)]}
            grouped[(evaluator_id, system)].append(judged)
    evaluators = Evaluator.objects.in_bulk({key[0] for key in collected})
    for (evaluator_id, system, task), items in sorted(
        collected.items(), key=lambda kv: (evaluators[kv[0][0]].name, kv[0][1], kv[0][2])
    ):
        evaluator = evaluators[evaluator_id]
        try:
            plugin = plugin_for(evaluator)
        except UnknownEvaluator:
            continue
        assert isinstance(plugin, Metric)
        counted = [(v, p) for v, p, evaluation in items if plugin.counted(evaluation)]
        try:
            values, parts = [v for v, _ in counted], [p for _, p in counted]
            score: float | None = plugin.task_score(values, parts)
        except ValueError:
            score = None
        left_out = len(items) - len(counted)
        because = plugin.left_out_because if left_out else ""
        report.scores.append(
            TaskScore(system, plugin.name, task, score, len(counted), left_out, because)
        )
    accuracy = longbench_v2.METRIC
    report.breakdown = [
        {"system": system, "metric": accuracy, **longbench_v2.breakdown(items)}
        for (evaluator_id, system), items in sorted(grouped.items(), key=lambda kv: kv[0][1])
        if evaluators[evaluator_id].name == f"metric: {accuracy}"
    ]
    report.win_rates = _win_rates(datasets, projects)
    report.kendall = _kendall(datasets, projects)
    report.rankings = _rankings(datasets, projects)
    return report


def _rankings(datasets: list[Dataset], projects: list[int] | None) -> list[dict[str, Any]]:
    """Each metric's, judge's, judge panel's and human evaluator's
    Bradley-Terry ranking of the systems (analysis.statistics.bradley_terry):
    on every question, every two systems meet, the higher per-answer score
    winning; clustered by document, as the agreement report's rankings are by
    meeting."""
    import numpy as np

    from analysis.report.rankings import RANKING_RESAMPLES
    from analysis.statistics import bradley_terry as bt
    from analysis.statistics.bootstrap import DEFAULT_SEED, ClusterBootstrap

    rows = (
        Judgment.objects.filter(response__run__dataset__in=datasets)
        .filter(evaluator__kind__in=(*RANKED_KINDS, *HUMAN_KINDS))
        .filter(**({} if projects is None else {"response__run__project__in": projects}))
        .values_list(
            "evaluator__name",
            "response__run__system__name",
            "response__question_id",
            "response__question__document_id",
            "score",
            "response_id",
        )
    )
    found = list(rows)
    panels, refused = _panel_rows(found, projects)
    found += panels
    out = []
    for name in sorted({row[0] for row in found}):
        mine = [row for row in found if row[0] == name]
        systems, system_codes = np.unique([r[1] for r in mine], return_inverse=True)
        _, questions = np.unique([r[2] for r in mine], return_inverse=True)
        documents, document_codes = np.unique([r[3] for r in mine], return_inverse=True)
        scores = np.array([r[4] for r in mine], float)
        first, second, outcome, cluster = bt.battles_from_scores(
            system_codes, questions, document_codes, scores
        )
        if len(first) == 0:
            continue
        boot = ClusterBootstrap(cluster, len(documents), RANKING_RESAMPLES, DEFAULT_SEED)
        ranking = bt.bradley_terry(
            first, second, outcome, cluster, [str(s) for s in systems], boot, "documents"
        )
        out.append({"evaluator": name, "documents": len(documents), **ranking})
    out += [{"evaluator": name, "computable": False, "reason": why} for name, why in refused]
    return sorted(out, key=lambda r: r["evaluator"])


# judges whose scores a benchmark's rankings read beside the metrics and people
RANKED_KINDS = ("metric", "llm_rubric", "imported")


def _panels_of(projects: list[int] | None, pairwise: bool) -> dict[str, tuple[list[str], str]]:
    """The judge panels of `projects` (None: every one) and the shared ones,
    of pairwise judges or of scores."""
    from django.db.models import Q

    from analysis.report.panels import PANEL_KIND, is_pairwise, panel_members

    panels = Evaluator.objects.filter(kind=PANEL_KIND)
    if projects is not None:
        panels = panels.filter(Q(project__isnull=True) | Q(project__in=projects))
    return {
        name: panel_members(config)
        for name, config in panels.values_list("name", "config")
        if is_pairwise(config) == pairwise
    }


def _panel_rows(found: list[tuple], projects: list[int] | None) -> tuple[list[tuple], list]:
    """Each panel of scores as judgment rows (its rule over its members' mean
    score per response, where every member scored it), and the panels that
    cannot be made here, with the reason (a learned panel learns from the
    agreement report's reference; a member with no score on this split)."""
    import numpy as np

    from analysis.statistics import panels as panel_statistics

    per_member: dict[str, dict[int, list]] = defaultdict(dict)
    about: dict[int, tuple] = {}
    for name, system, question, document, score, response in found:
        cell = per_member[name].setdefault(response, [0.0, 0])
        cell[0] += score
        cell[1] += 1
        about[response] = (system, question, document)
    rows: list[tuple] = []
    refused: list[tuple[str, str]] = []
    for name, (members, rule) in sorted(_panels_of(projects, pairwise=False).items()):
        present = [m for m in members if m in per_member]
        if not present:  # a panel of another benchmark's judges
            continue
        if rule == "learned":
            refused.append((name, "a learned panel is ranked in the agreement report, where "
                            "its weights are learned from the reference's scores"))  # fmt: skip
            continue
        if len(present) < len(members):
            absent = ", ".join(m for m in members if m not in per_member)
            refused.append((name, f"no score on this split from {absent}"))
            continue
        shared = sorted(set.intersection(*(set(per_member[m]) for m in members)))
        if not shared:
            refused.append((name, "no answer of this split is scored by every member"))
            continue
        table = np.array(
            [[per_member[m][r][0] / per_member[m][r][1] for m in members] for r in shared]
        )
        combined = panel_statistics.combine(table, rule)
        rows += [(name, *about[r], float(v), r) for r, v in zip(shared, combined, strict=True)]
    return rows, refused


def _win_rates(datasets: list[Dataset], projects: list[int] | None) -> list[dict[str, Any]]:
    """Each pairwise judge's and pairwise panel's win rates per task, counted
    as the judge counts (L-Eval's: per order, ties a half; a panel as its
    members); where verdicts span several tasks, also over all of them
    pooled (POOLED), as L-Eval's llm_eval.py counts its headline figure:
    every verdict of every task in one count."""
    import pandas as pd

    from analysis.report.panels import with_pairwise_panels
    from analysis.statistics.pairwise import verdict_table, win_rates
    from judging.evaluators import JudgeConfig

    pairwise = _panels_of(projects, pairwise=True)
    rows = []
    tables = []
    countings: dict[str, str] = {}

    def rates_of(table: pd.DataFrame, task: str, pooled: bool) -> None:
        for name in sorted(table["evaluator"].unique()):
            if name not in countings:
                evaluator = Evaluator.objects.get(name=name)
                if evaluator.kind in HUMAN_KINDS:
                    countings[name] = "per_verdict"
                elif name in pairwise:
                    countings[name] = _panel_counting(pairwise[name][0])
                else:
                    countings[name] = JudgeConfig.from_dict(evaluator.config).counting
            rates = win_rates(table[table["evaluator"] == name], countings[name]).get(name, {})
            for system, summary in sorted(rates.items()):
                rows.append(
                    {"judge": name, "task": task, "system": system, **summary, "pooled": pooled}
                )

    for dataset in datasets:
        response_ids = list(
            Response.objects.filter(run__dataset=dataset)
            .filter(**({} if projects is None else {"run__project__in": projects}))
            .values_list("pk", flat=True)
        )
        table = with_pairwise_panels(verdict_table(response_ids=response_ids), pairwise)
        if table.empty:
            continue
        tables.append(table)
        rates_of(table, dataset.task, pooled=False)
    if len(tables) > 1:
        rates_of(pd.concat(tables, ignore_index=True), POOLED, pooled=True)
    return rows


# The task of a win rate over every task's verdicts (L-Eval's headline figure)
POOLED = "all tasks, pooled"


def _panel_counting(members: list[str]) -> str:
    """A pairwise panel counts as its members do (L-Eval's judge: per order),
    or by the consistent rule where they count differently."""
    from judging.evaluators import JudgeConfig

    countings = {
        JudgeConfig.from_dict(config).counting
        for config in Evaluator.objects.filter(name__in=members).values_list("config", flat=True)
    }
    return countings.pop() if len(countings) == 1 else "consistent"


def _kendall(datasets: list[Dataset], projects: list[int] | None) -> list[dict[str, Any]]:
    """Kendall's tau (b) between each metric and each human evaluator on the
    responses both scored: per response, and per system (their means)."""
    from scipy.stats import kendalltau

    sums: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(dict)
    systems: dict[int, str] = {}
    for kind, name, response, system, score in Judgment.objects.filter(
        response__run__dataset__in=datasets,
        **({} if projects is None else {"response__run__project__in": projects}),
    ).values_list(
        "evaluator__kind", "evaluator__name", "response_id", "response__run__system__name", "score"
    ):
        if kind == "metric" or kind in HUMAN_KINDS:
            role = "human" if kind in HUMAN_KINDS else "metric"
            total = sums[(role, name)].setdefault(response, [0.0, 0.0])
            total[0] += score
            total[1] += 1
            systems[response] = system
    # several raters (or seeds) of one response: their mean
    frame = {
        key: {response: total / n for response, (total, n) in scores.items()}
        for key, scores in sums.items()
    }
    rows = []
    for (role, metric), metric_scores in sorted(frame.items()):
        if role != "metric":
            continue
        for (other, human), human_scores in sorted(frame.items()):
            if other != "human":
                continue
            shared = sorted(set(metric_scores) & set(human_scores))
            if len(shared) < 2:
                continue
            tau = kendalltau(
                [metric_scores[r] for r in shared], [human_scores[r] for r in shared], variant="b"
            ).statistic
            per_system: dict[str, list[list[float]]] = defaultdict(lambda: [[], []])
            for r in shared:
                per_system[systems[r]][0].append(metric_scores[r])
                per_system[systems[r]][1].append(human_scores[r])
            system_tau = None
            if len(per_system) >= 2:
                means = [(sum(a) / len(a), sum(b) / len(b)) for a, b in per_system.values()]
                system_tau = kendalltau(*zip(*means, strict=True), variant="b").statistic
            rows.append(
                {
                    "metric": metric,
                    "human": human,
                    "responses": len(shared),
                    "tau_responses": None if math.isnan(tau) else float(tau),
                    "systems": len(per_system),
                    "tau_systems": None
                    if system_tau is None or math.isnan(system_tau)
                    else float(system_tau),
                }
            )
    return rows

"""A benchmark report (analysis.report.benchmark_report) written as a researcher takes
it: a text table as the authors print theirs, JSON, CSV (cells a spreadsheet
would run as formulas neutralised) or Parquet (the table, with pyarrow)."""

from __future__ import annotations

import io
import json
from typing import Any

from analysis.report.benchmark_report import BenchmarkReport, task_column
from core.spreadsheet import csv_text

FORMATS = ("table", "json", "csv", "parquet")


def columns(report: BenchmarkReport) -> list[str]:
    """system, metric, a column per task (one "score" for a benchmark without
    tasks), then the average over tasks where there are several."""
    average = ["average"] if report.has_average else []
    return ["system", "metric", *[task_column(t) for t in report.tasks], *average]


def as_table(report: BenchmarkReport) -> str:
    """Scores 0-100 with two decimals, a row per system and metric, the average last."""
    heads = columns(report)
    rows = report.rows()

    def cell(value: Any) -> str:
        if value is None:
            return "-"
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    table = [heads] + [[cell(row.get(h)) for h in heads] for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(heads))]
    lines = [f"{report.name} ({report.split}): task scores, 0-100"]
    for number, row in enumerate(table):
        lines.append(
            "  ".join(
                c.ljust(w) if i < 2 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if number == 0:
            lines.append("  ".join("-" * w for w in widths))
    for m in report.left_out():
        lines.append(
            f"{m['task'] or 'the task'} ({m['metric']}): {m['items']} scored but left out of "
            f"the task score: {m['because']}"
        )
    for rate in report.win_rates:
        if rate["win_rate"] is not None:
            lines.append(
                f"win rate of {rate['system']} against {rate['against']} ({rate['judge']}, "
                f"{rate['task']}, counted {rate['counting']}): {100 * rate['win_rate']:.2f} "
                f"over {rate['n']} verdicts"
            )
    for tau in report.kendall:
        lines.append(
            f"Kendall tau, {tau['metric']} vs {tau['human']}: "
            f"{_number(tau['tau_responses'])} over {tau['responses']} responses, "
            f"{_number(tau['tau_systems'])} over {tau['systems']} systems"
        )
    return "\n".join(lines) + "\n"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def as_bytes(report: BenchmarkReport, format: str) -> bytes:
    if format == "table":
        return as_table(report).encode()
    if format == "json":
        return (json.dumps(report.as_json(), indent=2, ensure_ascii=False) + "\n").encode()
    if format == "csv":
        return csv_text(columns(report), report.rows()).encode()
    if format == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        heads = columns(report)
        table = pa.Table.from_pylist([{h: row.get(h) for h in heads} for row in report.rows()])
        out = io.BytesIO()
        pq.write_table(table, out)
        return out.getvalue()
    raise ValueError(f"format {format!r}: one of {', '.join(FORMATS)}.")

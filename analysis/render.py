"""A report in each export format: JSON, CSV (tidy or wide), LaTeX, and a
self-contained HTML page with its plots embedded. The report formats read an
AgreementReport's attributes; the CSVs read the score table."""

from __future__ import annotations

import base64
import io
import json

import pandas as pd
from django.template.loader import render_to_string

from analysis.report_types import AgreementReport, is_computed

FORMATS = ("json", "csv", "csv-wide", "latex", "html")


def tidy_csv(table: pd.DataFrame) -> str:
    columns = [
        "response_id",
        "evaluator",
        "rater",
        "judgment_seed",
        "order",
        "score",
        "system",
        "mode",
        "run_seed",
        "dataset_version",
        "split",
        "meeting",
        "question_id",
        "question_type",
        "answer_position",
    ]
    return table[columns].sort_values(["response_id", "evaluator", "rater"]).to_csv(index=False)


def wide_csv(table: pd.DataFrame) -> str:
    """One row per response; one column per evaluator, or per evaluator:rater
    for evaluators with individual raters."""
    keyed = table.assign(
        column=[
            f"{e}:{r}" if r else str(e)
            for e, r in zip(table["evaluator"], table["rater"], strict=True)
        ]
    )
    wide = keyed.pivot_table(index="response_id", columns="column", values="score", aggfunc="mean")
    meta = keyed.groupby("response_id")[
        [
            "system",
            "mode",
            "dataset_version",
            "split",
            "meeting",
            "question_id",
            "question_type",
            "answer_position",
        ]
    ].first()
    return meta.join(wide).reset_index().to_csv(index=False)


def _fmt(value) -> str:
    return "--" if value is None else f"{value:.2f}"


def _latex_escape(text: str) -> str:
    for char, escaped in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("_", r"\_"),
        ("#", r"\#"),
        ("$", r"\$"),
        ("{", r"\{"),
        ("}", r"\}"),
    ):
        text = text.replace(char, escaped)
    return text


def to_latex(report: AgreementReport) -> str:
    """booktabs tables: mean scores (systems x evaluators) and Pearson correlations."""
    stamp = report.stamp
    lines = [
        f"% Concord agreement report, data sha256 {stamp.data_sha256}",
        f"% selection {json.dumps(stamp.selection.model_dump())}, created {stamp.created_at}",
    ]
    evaluators = report.evaluators
    if not evaluators:
        return "\n".join([*lines, "% empty selection: no table"]) + "\n"
    means = report.mean_scores
    lines += [
        r"\begin{table}[t]",
        r"\centering",
        r"\begin{tabular}{l" + "r" * len(evaluators) + "}",
        r"\toprule",
        "Model & " + " & ".join(_latex_escape(e) for e in evaluators) + r" \\",
        r"\midrule",
    ]
    for system in report.systems:
        row = [_fmt(means.get(system, {}).get(e)) for e in evaluators]
        lines.append(_latex_escape(system) + " & " + " & ".join(row) + r" \\")
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        r"\caption{Mean score (1--10) per system and evaluator.}",
        r"\end{table}",
        "",
    ]
    pearson = report.correlations.pearson
    lines += [
        r"\begin{table}[t]",
        r"\centering",
        r"\begin{tabular}{l" + "r" * len(evaluators) + "}",
        r"\toprule",
        " & " + " & ".join(_latex_escape(e) for e in evaluators) + r" \\",
        r"\midrule",
    ]
    for a in evaluators:
        lines.append(
            _latex_escape(a)
            + " & "
            + " & ".join(_fmt(pearson[a].get(b)) for b in evaluators)
            + r" \\"
        )
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        r"\caption{Pearson correlation between evaluators, on responses.}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


# --- HTML -------------------------------------------------------------------------------------


def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def plots(report: AgreementReport) -> dict[str, str]:
    """The report's figures as data URIs (so the HTML file stands alone)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    out: dict[str, str] = {}
    evaluators, systems = report.evaluators, report.systems
    if not evaluators:
        return out
    means = report.mean_scores
    figure, axis = plt.subplots(figsize=(max(5, 1.3 * len(systems)), 3.2))
    width = 0.8 / len(evaluators)
    for i, evaluator in enumerate(evaluators):
        values = [means.get(s, {}).get(evaluator) or 0 for s in systems]
        axis.bar(np.arange(len(systems)) + i * width, values, width, label=evaluator)
    axis.set_xticks(
        np.arange(len(systems)) + width * (len(evaluators) - 1) / 2,
        systems,
        rotation=20,
        ha="right",
    )
    axis.set_ylim(0, 10)
    axis.set_ylabel("mean score")
    axis.legend(fontsize=7, ncol=2)
    out["means"] = _png(figure)

    pearson = report.correlations.pearson
    matrix = np.array(
        [
            [pearson[a].get(b) if pearson[a].get(b) is not None else np.nan for b in evaluators]
            for a in evaluators
        ],
        dtype=float,
    )
    figure, axis = plt.subplots(figsize=(1.1 * len(evaluators) + 2, 1.0 * len(evaluators) + 1))
    image = axis.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu_r")
    axis.set_xticks(range(len(evaluators)), evaluators, rotation=30, ha="right")
    axis.set_yticks(range(len(evaluators)), evaluators)
    for i in range(len(evaluators)):
        for j in range(len(evaluators)):
            if not np.isnan(matrix[i, j]):
                axis.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=8)
    figure.colorbar(image, ax=axis, shrink=0.8)
    out["correlations"] = _png(figure)

    bins = report.gold_bins
    if is_computed(bins) and bins.bins:
        figure, axis = plt.subplots(figsize=(6, 3.2))
        levels = list(range(1, 11))
        for evaluator in evaluators:
            if evaluator == bins.gold:
                continue
            xs, ys, errs = [], [], []
            for level in levels:
                entry = bins.bins[str(level)].evaluators.get(evaluator)
                if entry is not None and is_computed(entry):
                    ci = entry.ci95 or [entry.mean, entry.mean]
                    xs.append(level)
                    ys.append(entry.mean)
                    errs.append([[entry.mean - ci[0]], [ci[1] - entry.mean]])
            if xs:
                axis.errorbar(xs, ys, yerr=np.hstack(errs), capsize=3, marker="o", label=evaluator)
        axis.plot([1, 10], [1, 10], color="grey", linewidth=0.5)
        axis.set_xlabel(f"{bins.gold} score bin (N below each bin in the table)")
        axis.set_ylabel("mean score, 95% CI")
        axis.set_xticks(levels)
        axis.legend(fontsize=7)
        out["gold_bins"] = _png(figure)

    breakdown = report.breakdown
    if is_computed(breakdown) and breakdown.question_type:
        figure, axes = plt.subplots(1, 2, figsize=(9, 3), sharey=True)
        for axis, (column, by_evaluator) in zip(axes, breakdown.columns(), strict=True):
            first = evaluators[0]
            table = by_evaluator.get(first, {})
            categories = sorted({c for s in table.values() for c in s})
            width = 0.8 / max(1, len(table))
            for i, (system, values) in enumerate(sorted(table.items())):
                axis.bar(
                    np.arange(len(categories)) + i * width,
                    [values[c].mean if c in values else 0 for c in categories],
                    width,
                    label=system,
                )
            axis.set_xticks(np.arange(len(categories)) + width * (len(table) - 1) / 2, categories)
            axis.set_title(f"{column.replace('_', ' ')} ({first})", fontsize=9)
            axis.set_ylim(0, 10)
        axes[0].legend(fontsize=7)
        out["breakdown"] = _png(figure)
    return out


def to_html(report: AgreementReport) -> str:
    return render_to_string(
        "analysis/report.html",
        {"report": report, "plots": plots(report), "report_json": report.to_json()},
    )

"""A report in each export format: JSON, CSV (tidy or wide), LaTeX, and a
self-contained HTML page with its plots embedded. The report formats read an
AgreementReport's attributes; the CSVs read the score table, with the text
cells a spreadsheet would run as formulas neutralised (config/spreadsheet.py)."""

from __future__ import annotations

import base64
import io
import json

import pandas as pd
from django.template.loader import render_to_string

from analysis.report_types import AgreementReport, is_computed
from config.spreadsheet import frame_csv

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
    ordered = table[columns].sort_values(["response_id", "evaluator", "rater"])
    return frame_csv(ordered)


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
    return frame_csv(meta.join(wide).reset_index())


def _fmt(value) -> str:
    return "--" if value is None else f"{value:.2f}"


def _comment(text: str) -> str:
    """One LaTeX comment line: no line break may end the comment early."""
    return " ".join(str(text).split())


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


def to_latex(report: AgreementReport, opening: list[str] | None = None) -> str:
    """booktabs tables: mean scores (systems x evaluators) and Pearson
    correlations, after comment lines saying what the report covers."""
    stamp = report.stamp
    lines = [
        f"% Concord agreement report, data sha256 {stamp.data_sha256}",
        f"% selection {json.dumps(stamp.selection.model_dump())}, created {stamp.created_at}",
    ]
    scope = report.scope
    lines += [
        f"% {_comment(line)}"
        for line in (opening or [])[1:]
        or [scope.statement, f"reference: {scope.reference_coverage} ({scope.reference_rule})"]
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
    lines += latex_trust(report)
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


def _ci(values) -> str:
    return f"[{_fmt(values[0])}, {_fmt(values[1])}]" if values else "--"


def latex_trust(report: AgreementReport) -> list[str]:
    """booktabs tables: the judge-trust rows and the PPI++ system scores."""
    lines: list[str] = []
    trust = report.trust
    if is_computed(trust) and trust.rows:
        reference = _latex_escape(trust.reference or "reference")
        populations = list(trust.populations)
        columns = " & ".join(f"alt-test, {_latex_escape(p)}" for p in populations)
        lines += [
            r"\begin{table}[t]",
            r"\centering",
            r"\begin{tabular}{l" + "l" * len(populations) + "lll}",
            r"\toprule",
            "Judge & " + (columns + " & " if columns else "") + f"$r$ with {reference} & levels & "
            r"Kendall $\tau$ \\",
            r"\midrule",
        ]
        for judge, row in trust.rows.items():
            cells = []
            for population in populations:
                verdict = row.alt_tests[population]
                test = verdict.test
                omega = f" ($\\omega$ {_fmt(test.winning_rate)})" if is_computed(test) else ""
                cells.append(verdict.verdict.replace("_", " ") + omega)
            r = row.correlation
            corr = f"{_fmt(r.r)} {_ci(r.ci95)}" if is_computed(r) else "n/c"
            levels = str(row.levels.levels) if is_computed(row.levels) else "n/c"
            rank = row.ranking
            tau = f"{_fmt(rank.kendall_tau)} {_ci(rank.ci95)}" if is_computed(rank) else "n/c"
            lines.append(" & ".join([_latex_escape(judge), *cells, corr, levels, tau]) + r" \\")
        margins = ", ".join(
            f"{_latex_escape(p)} $\\varepsilon = {part.epsilon:g}$"
            for p, part in trust.populations.items()
        )
        lines += [
            r"\bottomrule",
            r"\end{tabular}",
            f"\\caption{{Judge trust against {_latex_escape(trust.reference_coverage)}; "
            f"alt-test margins: {margins or 'no human raters'}; 95\\% intervals from "
            f"{trust.resamples} resamples of the {trust.clusters} meetings; n/c: not "
            "computable (see the JSON report).}",
            r"\end{table}",
            "",
        ]
        lines += [f"% {_comment(sentence)}" for sentence in trust.answers]
    ppi = report.ppi
    if is_computed(ppi):
        lines += [
            r"\begin{table}[t]",
            r"\centering",
            r"\begin{tabular}{llrll}",
            r"\toprule",
            r"Judge & System & $n$ & gold only & PPI++ \\",
            r"\midrule",
        ]
        for judge, entry in ppi.judges.items():
            for system, e in entry.systems.items():
                if not is_computed(e):
                    continue
                lines.append(
                    f"{_latex_escape(judge)} & {_latex_escape(system)} & {e.n_labelled} & "
                    f"{_fmt(e.gold_mean)} {_ci(e.gold_ci95)} & {_fmt(e.ppi_mean)} "
                    f"{_ci(e.ppi_ci95)} " + r"\\"
                )
        lines += [
            r"\bottomrule",
            r"\end{tabular}",
            f"\\caption{{System means on the {_latex_escape(ppi.gold)} scale from $n$ gold "
            "ratings per system, alone and with the judge's scores (PPI++), 95\\% CIs.}",
            r"\end{table}",
            "",
        ]
    return lines


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

    out.update(trust_plots(report))

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


MAX_PLOTTED_JUDGES = 4


def trust_plots(report: AgreementReport) -> dict[str, str]:
    """The reliability plot (judge score against the mean gold score of the
    responses that got it, with the isotonic map) and the PPI forest plot
    (per system: the gold-only and the PPI++ intervals)."""
    import matplotlib.pyplot as plt
    import numpy as np

    out: dict[str, str] = {}
    diagnostics = report.diagnostics
    calibration = diagnostics.calibration if is_computed(diagnostics) else None
    if calibration is not None and is_computed(calibration):
        judges = [j for j, c in calibration.items() if is_computed(c)][:MAX_PLOTTED_JUDGES]
        if judges:
            figure, axis = plt.subplots(figsize=(6, 3.6))
            for judge in judges:
                levels = calibration[judge].map
                xs = [level.judge_score for level in levels]
                ys = [level.mean_gold for level in levels]
                errors = np.array(
                    [
                        [y - (lv.ci95 or [y, y])[0], (lv.ci95 or [y, y])[1] - y]
                        for y, lv in zip(ys, levels, strict=True)
                    ]
                ).T
                line = axis.errorbar(xs, ys, yerr=errors, fmt="o", capsize=3, label=judge)
                axis.step(
                    xs,
                    [level.calibrated for level in levels],
                    where="mid",
                    color=line[0].get_color(),
                    linewidth=1,
                )
            axis.plot([1, 10], [1, 10], color="grey", linewidth=0.5)
            axis.set_xlabel("judge score (steps: the isotonic map)")
            axis.set_ylabel("mean gold score, 95% CI")
            axis.legend(fontsize=7)
            out["calibration"] = _png(figure)
    ppi = report.ppi
    if is_computed(ppi) and ppi.judges:
        judges = list(ppi.judges)[:MAX_PLOTTED_JUDGES]
        figure, axes = plt.subplots(
            1, len(judges), figsize=(3.4 * len(judges) + 1, 2.8), sharey=True, squeeze=False
        )
        for axis, judge in zip(axes[0], judges, strict=True):
            systems = [(s, e) for s, e in ppi.judges[judge].systems.items() if is_computed(e)]
            for row, (_, entry) in enumerate(systems):
                axis.plot(entry.gold_ci95, [row + 0.15] * 2, color="#8a6100", linewidth=2)
                axis.plot(entry.ppi_ci95, [row - 0.15] * 2, color="#1f5fa8", linewidth=2)
                axis.plot([entry.gold_mean], [row + 0.15], "o", color="#8a6100")
                axis.plot([entry.ppi_mean], [row - 0.15], "o", color="#1f5fa8")
                if entry.all_gold_mean is not None:
                    axis.plot([entry.all_gold_mean], [row], "k|", markersize=14)
            axis.set_yticks(range(len(systems)), [s for s, _ in systems])
            axis.set_title(judge, fontsize=9)
            axis.set_xlabel("mean gold score, 95% CI")
        axes[0][0].plot([], [], color="#8a6100", label="gold only")
        axes[0][0].plot([], [], color="#1f5fa8", label="PPI++")
        axes[0][0].legend(fontsize=7)
        out["ppi"] = _png(figure)
    return out


def to_html(report: AgreementReport, request=None, scope=None) -> str:
    """The page; with the request that asked for it, the planner's form to
    create a study (posted back to Concord, so never in a file on its own)."""
    from analysis.selection import ITEM_METHODS

    context = {
        "report": report,
        "plots": plots(report),
        "report_json": report.to_json(),
        "live": request is not None,
        "methods": ITEM_METHODS,
    }
    if request is not None:
        from analysis.builder import builder_context

        context["builder"] = builder_context(request.GET, scope)
        context["selection_fields"] = {
            key: ",".join(value) if isinstance(value, list) else value
            for key, value in report.stamp.selection.model_dump().items()
            if value not in (None, [], "")
        }
    return render_to_string("analysis/report.html", context, request=request)

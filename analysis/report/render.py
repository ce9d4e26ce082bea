"""A report in each export format: JSON, CSV (tidy or wide), LaTeX, and a
self-contained HTML page with its plots embedded. The report formats read an
AgreementReport's attributes; the CSVs read the score table, with the text
cells a spreadsheet would run as formulas neutralised (core/spreadsheet.py)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from urllib.parse import urlencode

import pandas as pd
from django.template.loader import render_to_string
from django.urls import reverse

from analysis.report.links import REPORT_FORMATS
from analysis.report.report_types import AgreementReport, NotComputable, is_computed
from core.spreadsheet import frame_csv

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


# One pass over the text (str.translate): replacing one character after another
# escaped the braces of an earlier replacement (a backslash became
# \textbackslash\{\}: a backslash, then the braces printed).
LATEX_ESCAPES = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "&": r"\&",
        "%": r"\%",
        "_": r"\_",
        "#": r"\#",
        "$": r"\$",
        "{": r"\{",
        "}": r"\}",
        # TeX reads ^^5c as a backslash: a name "^^5cinput^^7b/etc/passwd^^7d" would
        # be \input{/etc/passwd} when the report is compiled
        "^": r"\textasciicircum{}",
        "~": r"\textasciitilde{}",
    }
)


def _latex_escape(text: str) -> str:
    return text.translate(LATEX_ESCAPES)


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
    means, correlations = report.mean_scores, report.correlations
    if isinstance(means, NotComputable) or isinstance(correlations, NotComputable):
        raise ValueError("a report on judgments has its mean scores and correlations")
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
    pearson = correlations.pearson
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


@dataclass(frozen=True)
class FigureView:
    """A figure as the page shows it: the PNG inline (so that the HTML file
    stands alone), its caption and, on the live page, its PNG and SVG links."""

    name: str
    alt: str
    caption: str
    notes: tuple[str, ...]
    src: str
    png_url: str = ""
    svg_url: str = ""


def figure_views(
    report: AgreementReport, images: dict[str, bytes] | None = None, query: str | None = None
) -> dict[str, FigureView]:
    """Each figure of the report with its PNG (drawn here unless `images` has
    it: analysis.report.caching passes the cached ones) and, given the selection's
    query string, the links to /analysis/report/plot/<name>.<png|svg>."""
    from analysis.figures import drawing, plots

    views = {}
    for name, figure in plots.figures(report).items():
        png = images[name] if images is not None and name in images else drawing.draw(figure, "png")
        urls = {}
        if query is not None:
            for fmt in drawing.FORMATS:
                path = reverse("analysis-report-plot", kwargs={"name": name, "fmt": fmt})
                urls[f"{fmt}_url"] = f"{path}?{query}" if query else path
        views[name] = FigureView(
            name,
            figure.alt,
            figure.caption,
            figure.notes,
            "data:image/png;base64," + base64.b64encode(png).decode(),
            **urls,
        )
    return views


def to_html(
    report: AgreementReport,
    request=None,
    scope=None,
    *,
    images: dict[str, bytes] | None = None,
    report_json: str | None = None,
    content_sha256: str | None = None,
) -> str:
    """The page; with the request that asked for it, the planner's form to
    create a study (posted back to Concord, so never in a file on its own) and
    each figure's PNG and SVG links. `images` (PNG bytes by figure name),
    `report_json` and `content_sha256` (analysis.report.caching.content_hash) save
    drawing and serialising again what is cached.

    The page's statistics after the planner depend on the report alone: that
    part is rendered once per report content, code and page kind (live or
    file) and kept in the report cache (two thirds of the template's time)."""
    from analysis.report.caching import REPORT_CACHE_SECONDS, code_version, content_hash
    from analysis.report.selection import ITEM_METHODS

    context = {
        "report": report,
        "report_json": report.to_json() if report_json is None else report_json,
        "live": request is not None,
        "methods": ITEM_METHODS,
    }
    query = None
    if request is not None:
        from analysis.report.builder import builder_context
        from analysis.report.selection import join_names

        context["builder"] = builder_context(request.GET, scope, user=request.user)
        fields = {
            key: join_names(value) if isinstance(value, list) else value
            for key, value in report.stamp.selection.model_dump().items()
            if value not in (None, [], "")
        }
        context["selection_fields"] = fields
        query = urlencode(fields)
        page = reverse("analysis-report")
        context["exports"] = [
            {"label": label, "url": f"{page}?{urlencode(fields | {'format': fmt})}"}
            for fmt, label in REPORT_FORMATS
            if fmt != "html"
        ]
        if fields.get("benchmark") and fields.get("split"):  # the same answer, per length
            context["length_url"] = (
                reverse("analysis-benchmark-length", args=[fields["benchmark"]])
                + "?"
                + urlencode({"split": fields["split"]})
            )
    context["plots"] = figure_views(report, images, query)
    context["cache_seconds"] = REPORT_CACHE_SECONDS
    context["fragment_key"] = ":".join(
        (
            content_sha256 or content_hash(report),
            code_version(),
            "file" if query is None else "live?" + query,
        )
    )
    return render_to_string("analysis/report.html", context, request=request)

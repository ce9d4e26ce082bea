"""/analysis/benchmark/<slug>/length/?split=S[&share=0.9][&buckets=3]
[&format=json|csv|svg]: a benchmark's scores by input length
(analysis.report.by_length), its figure, and the same as files."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from analysis.views import report_projects
from core.downloads import as_attachment, export_filename
from users.decorators import researcher_required

if TYPE_CHECKING:  # NumPy and SciPy load with the first request, not at start-up
    from analysis.figures.figure_types import Figure
    from analysis.report.by_length import LengthView

FORMATS = ("json", "csv", "svg")
CONTENT_TYPES = {"json": "application/json", "csv": "text/csv", "svg": "image/svg+xml"}


def figure(view: LengthView) -> Figure:
    """One panel per evaluator: each system's mean by bucket, with its interval."""
    from analysis.figures.figure_types import Figure, IntervalPanel, Series, interval_point
    from analysis.figures.plots import colours

    order = {b.label: i for i, b in enumerate(view.buckets)}
    systems = sorted({row["system"] for row in view.scores})
    palette = colours(systems)
    panels = []
    for evaluator in sorted({row["evaluator"] for row in view.scores}):
        rows = [r for r in view.scores if r["evaluator"] == evaluator]
        scale = (0.0, 100.0) if evaluator.startswith("metric: ") else (1.0, 10.0)
        low = min([scale[0], *(r["mean"] for r in rows)])
        high = max([scale[1], *(r["mean"] for r in rows)])
        series = tuple(
            Series(
                system,
                palette[system],
                tuple(
                    interval_point(
                        order[r["bucket"]], r["mean"], r["ci95"], r["clusters"], scale=(low, high)
                    )
                    for r in rows
                    if r["system"] == system
                ),
            )
            for system in systems
            if any(r["system"] == system for r in rows)
        )
        pad = (high - low) * 0.05
        panels.append(
            IntervalPanel(
                evaluator,
                f"input length ({view.tokenizer})",
                "mean score",
                series,
                ticks=tuple(float(i) for i in range(len(view.buckets))),
                tick_labels=tuple(b.label for b in view.buckets),
                value_limits=(low - pad, high + pad),
                value_ticks=tuple(low + (high - low) * i / 5 for i in range(6)),
                category_limits=(-0.5, len(view.buckets) - 0.5),
            )
        )
    return Figure(
        "by-length",
        f"{view.benchmark} scores by input length, one panel per evaluator",
        "Each system's mean score per length bucket, with its 95% interval (the number: "
        "documents).",
        tuple(panels),
    )


@researcher_required(refusal="Reports are for researchers and admins.")
def length_report_page(request: HttpRequest, slug: str) -> HttpResponse:
    from analysis.figures.drawing import draw
    from analysis.report.by_length import length_view

    split = request.GET.get("split", "")
    fmt = request.GET.get("format", "html")
    if fmt != "html" and fmt not in FORMATS:
        return HttpResponse(
            f"format {fmt!r}: html or one of {', '.join(FORMATS)}.",
            status=400,
            content_type="text/plain",
        )
    try:
        share = float(request.GET.get("share", "0.9"))
        buckets = int(request.GET.get("buckets", "3"))
        view = length_view(slug, split, report_projects(request), share=share, buckets=buckets)
    except ValueError as error:
        if fmt == "html":
            raise Http404(str(error)) from None
        return HttpResponse(str(error), status=400, content_type="text/plain")
    if fmt == "html":
        return render(
            request,
            "analysis/length_report.html",
            {"view": view, "has_figure": bool(view.scores), "formats": FORMATS},
        )
    if fmt == "json":
        body = json.dumps(view.as_json(), indent=2).encode()
    elif fmt == "csv":
        body = view.scores_csv().encode()
    else:
        if not view.scores:
            return HttpResponse("No scores to draw.", status=404, content_type="text/plain")
        body = draw(figure(view), "svg")
    response = HttpResponse(body, content_type=CONTENT_TYPES[fmt])
    return as_attachment(
        response, export_filename(f"{slug}-{split}-by-length", fmt, timezone.localdate())
    )

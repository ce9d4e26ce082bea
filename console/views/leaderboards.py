"""A generation run handed back to its benchmark's leaderboard, from the run's
page: an L-Eval run as its `<task>.pred.jsonl`, a LongBench v2 run as its
`<model>.jsonl` of results; a ZeroSCROLLS run with its
system's finished runs on the other tasks of the split (same mode and seed)
as the submission CSV. Refused (incomplete, a task missing) back on the run's
page with the reason (judging.leaderboard_exports)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET

from console.views.runs import get_run
from core.downloads import as_attachment
from generation.models import GenerationRun
from judging.leaderboard_exports import (
    BABILONG,
    LEVAL,
    LONGBENCH_V2,
    RULER,
    ExportRefused,
    babilong_predictions,
    leaderboard_of,
    leval_predictions,
    longbench_v2_results,
    ruler_predictions,
    zeroscrolls_companions,
    zeroscrolls_submission,
)
from users.decorators import researcher_required

CONTENT_TYPES = {
    LEVAL: "application/jsonl; charset=utf-8",
    LONGBENCH_V2: "application/jsonl; charset=utf-8",
    RULER: "application/jsonl; charset=utf-8",
}


@researcher_required
@require_GET
def run_leaderboard_file(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_run(request, "generation", pk)
    assert isinstance(run, GenerationRun)
    shape = leaderboard_of(run)
    if shape is None:
        raise Http404("This run's benchmark has no leaderboard file.")
    try:
        if shape == LEVAL:
            file = leval_predictions(run)
        elif shape == LONGBENCH_V2:
            file = longbench_v2_results(run)
        elif shape == RULER:
            file = ruler_predictions(run)
        elif shape == BABILONG:
            file = babilong_predictions(run)
        else:
            companions = [r for r in zeroscrolls_companions(run) if r.project_id == run.project_id]
            file = zeroscrolls_submission(companions)
    except ExportRefused as error:
        messages.error(request, str(error))
        return redirect("console:run", kind="generation", pk=pk)
    content_type = CONTENT_TYPES.get(shape, "text/csv; charset=utf-8")
    response = HttpResponse(file.content, content_type=content_type)
    return as_attachment(response, file.path.rsplit("/", 1)[-1])

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
    LEVAL,
    LONGBENCH_V2,
    LOOGLE,
    PER_RUN,
    RULER,
    ExportRefused,
    leaderboard_of,
    zeroscrolls_companions,
    zeroscrolls_submission,
)
from users.decorators import researcher_required

CONTENT_TYPES = {
    LEVAL: "application/jsonl; charset=utf-8",
    LONGBENCH_V2: "application/jsonl; charset=utf-8",
    RULER: "application/jsonl; charset=utf-8",
    LOOGLE: "application/jsonl; charset=utf-8",
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
        if shape in PER_RUN:
            file = PER_RUN[shape](run)
        else:
            companions = [r for r in zeroscrolls_companions(run) if r.project_id == run.project_id]
            file = zeroscrolls_submission(companions)
    except ExportRefused as error:
        messages.error(request, str(error))
        return redirect("console:run", kind="generation", pk=pk)
    content_type = CONTENT_TYPES.get(shape, "text/csv; charset=utf-8")
    response = HttpResponse(file.content, content_type=content_type)
    return as_attachment(response, file.path.rsplit("/", 1)[-1])

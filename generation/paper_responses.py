"""The ELITR-Bench paper's published responses written as runs and responses of
its systems, idempotently."""

from __future__ import annotations

from django.db import transaction

from corpus.bulk import SyncCount, id_map, sync_rows
from corpus.choices import Language
from corpus.importers.elitr_bench import PaperResponse
from generation.models import GenerationRun, Response, System

RunKey = tuple[str, str, str, str]  # system, version, split, mode
ResponseKey = tuple[str, str, str, str, str, str]  # RunKey + meeting, question


@transaction.atomic
def import_paper_responses(
    responses: list[PaperResponse],
    dataset_ids: dict[tuple[str, str, str], int],
    question_ids: dict[tuple[str, str], int],
) -> tuple[dict[str, SyncCount], dict[ResponseKey, int]]:
    """Store responses generated elsewhere: one imported run per (system,
    version, split, mode), English datasets, seed unknown."""
    counts: dict[str, SyncCount] = {}
    systems = sorted({r.system for r in responses})
    counts["systems"] = sync_rows(
        System.objects.filter(name__in=systems),
        (
            {
                "name": name,
                "model_name": name,
                "backend": System.Backend.IMPORTED,
                "project_id": None,  # shared: the published release's systems
                "description": "Responses imported from the ELITR-Bench paper's files.",
            }
            for name in systems
        ),
        key=("name",),
    )
    system_ids = {
        k[0]: v for k, v in id_map(System.objects.filter(name__in=systems), ("name",)).items()
    }

    run_sources: dict[RunKey, str] = {}
    for r in responses:
        run_sources.setdefault((r.system, r.version, r.split, r.mode), r.origin)
    # The paper's responses answer the English questions.
    dataset_pks = {
        pk for (_, language, _), pk in dataset_ids.items() if language == Language.ENGLISH
    }
    runs = GenerationRun.objects.filter(
        system_id__in=system_ids.values(), dataset_id__in=dataset_pks, seed__isnull=True
    )
    counts["generation runs"] = sync_rows(
        runs,
        (
            {
                "system_id": system_ids[system],
                "dataset_id": dataset_ids[(version, Language.ENGLISH, split)],
                "mode": mode,
                "seed": None,
                "origin": GenerationRun.Origin.IMPORTED,
                "status": GenerationRun.Status.DONE,
                "source": origin[:500],
            }
            for (system, version, split, mode), origin in run_sources.items()
        ),
        key=("system_id", "dataset_id", "mode"),
    )
    run_ids = id_map(runs, ("system__name", "dataset__version", "dataset__split", "mode"))
    counts["responses"] = sync_rows(
        Response.objects.filter(run_id__in=run_ids.values()),
        (
            {
                "run_id": run_ids[(r.system, r.version, r.split, r.mode)],
                "question_id": question_ids[(r.meeting_id, r.question_id)],
                "text": r.text,
            }
            for r in responses
        ),
        key=("run_id", "question_id"),
        compare=("text",),
    )
    response_ids = id_map(
        Response.objects.filter(run_id__in=run_ids.values()),
        (
            "run__system__name",
            "run__dataset__version",
            "run__dataset__split",
            "run__mode",
            "question__document__external_id",
            "question__external_id",
        ),
    )
    return counts, response_ids

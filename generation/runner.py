"""Generation runs: a system answers every question of a dataset, meeting by
meeting, in single-turn or multi-turn mode.

Creating, starting, resuming and cancelling a run, and doing its work: with a
local model (`generation.local`) or on an OpenAI-compatible server
(`generation.remote`), every call through the model driver and on the
ledger. Each response is stored as soon as it is made, with token counts and
timing; a crashed or cancelled run resumes where it stopped (multi-turn
conversations are rebuilt from their stored turns). See docs/generation.md.
"""

from __future__ import annotations

from django.db import transaction

from core.database import outlasting_outages
from core.words import count
from corpus.choices import DatasetVersion, Mode, either
from corpus.models import Dataset, QuestionText
from generation.benchmark_prompts import SINGLE_TURN_ONLY
from generation.config import GenerationConfig, GenerationConfigError
from generation.local import run_local
from generation.models import GenerationRun, Response, System
from generation.remote import run_remote
from generation.work import GenerationError, OutOfMemory, meetings
from llm.driver import usage_and_note
from runs import lifecycle
from runs.lifecycle import Lease, enqueue_on_commit, finish, holding_lease
from users.models import Project, default_project

__all__ = [
    "GenerationError",
    "OutOfMemory",
    "cancel_generation_run",
    "create_generation_run",
    "resume_generation_run",
    "run_generation",
    "start_generation_run",
]


@transaction.atomic
def create_generation_run(
    system: System,
    dataset: Dataset,
    mode: str,
    seed: int | None = None,
    project: Project | None = None,
) -> GenerationRun:
    """The run in the project (default: the system's own, else the default
    project); a run of this system, dataset, mode and seed in another project
    is refused."""
    project = project or system.project or default_project()
    if system.project_id is not None and system.project_id != project.pk:
        raise GenerationError(f"{system.name} belongs to another project.")
    try:
        GenerationConfig.from_dict(system.config or {})
    except (GenerationConfigError, TypeError) as error:
        raise GenerationError(f"{system.name}: {error}") from None
    if mode not in Mode.values:
        raise GenerationError(f"mode: {either(Mode)}.")
    if dataset.version == DatasetVersion.CONV and mode == Mode.SINGLE_TURN:
        raise GenerationError("Conv questions depend on earlier turns: use multi-turn mode.")
    if mode == Mode.MULTI_TURN and dataset.benchmark.format in SINGLE_TURN_ONLY:
        raise GenerationError(
            f"{dataset.benchmark.get_format_display()} asks each question alone: use "
            "single-turn mode."
        )
    total = QuestionText.objects.filter(dataset=dataset).count()
    if not total:
        raise GenerationError(f"{dataset} has no questions.")
    run, created = GenerationRun.objects.get_or_create(
        system=system,
        dataset=dataset,
        mode=mode,
        seed=seed,
        defaults={"origin": GenerationRun.Origin.GENERATED, "total": total, "project": project},
    )
    if run.project_id != project.pk:
        raise GenerationError(
            f"{system.name}'s run on this dataset, mode and seed belongs to another project."
        )
    if not created and run.status == GenerationRun.Status.DONE:
        raise GenerationError(f"Run {run.pk} of this system, dataset, mode and seed is done.")
    if run.status in (GenerationRun.Status.FAILED, GenerationRun.Status.CANCELLED):
        # started again: it goes on with what is not answered yet
        GenerationRun.objects.filter(pk=run.pk).update(
            status=GenerationRun.Status.QUEUED, message="", finished_at=None
        )
        run.refresh_from_db()
    return run


def start_generation_run(
    system: System,
    dataset: Dataset,
    mode: str,
    seed: int | None = None,
    project: Project | None = None,
) -> GenerationRun:
    """Create the run (or take the unfinished one of this system, dataset, mode
    and seed) and queue it once the surrounding transaction commits. The one
    way admin, API, commands and sweeps start generation; a broker that cannot
    take the task leaves the run failed, saying why."""
    with transaction.atomic():
        run = create_generation_run(system, dataset, mode, seed, project)
        if not run.lease_is_live:  # a live worker already runs it
            enqueue_on_commit(run)
    run.refresh_from_db()
    return run


def resume_generation_run(run: GenerationRun) -> lifecycle.Outcome:
    if run.origin != GenerationRun.Origin.GENERATED:
        return lifecycle.Outcome(False, f"Run {run.pk} was imported: nothing to generate.", "done")
    return lifecycle.resume(run)


def cancel_generation_run(run: GenerationRun) -> lifecycle.Outcome:
    return lifecycle.cancel(run)


def run_generation(run_id: int) -> GenerationRun:
    """Answer every question not answered yet, holding the run's lease; a run
    another live worker holds, or a finished one, is left as it is."""
    with holding_lease(GenerationRun, run_id) as lease:
        if lease is not None:
            _generate(
                GenerationRun.objects.select_related("system", "dataset__benchmark").get(pk=run_id),
                lease,
            )
    return GenerationRun.objects.get(pk=run_id)


def _generate(run: GenerationRun, lease: Lease) -> None:
    config = GenerationConfig.from_dict(run.system.config)
    problem = ""
    try:
        if config.backend == "hf":
            if not run_local(run, config, meetings(run), lease):
                return
        else:
            problem = run_remote(run, config, lease)
    except MemoryError as error:  # the host ran out
        finish(run, GenerationRun.Status.FAILED, f"Out of memory on the host: {error}", lease)
        return
    except (OutOfMemory, GenerationError) as error:
        finish(run, GenerationRun.Status.FAILED, str(error), lease)
        return
    done = outlasting_outages(
        Response.objects.filter(run=run).count, what=f"Counting the answers of {run.kind_label}"
    )
    outlasting_outages(
        run.refresh_from_db, fields=["counted_usage"], what=f"Reading {run.kind_label}"
    )
    if problem or done < run.total:
        problem = problem or f"{count(run.total - done, 'question')} not answered: resume the run."
        finish(run, GenerationRun.Status.FAILED, usage_and_note(problem, run), lease, done=done)
    else:
        finish(run, GenerationRun.Status.DONE, usage_and_note("", run), lease, done=done, failed=0)

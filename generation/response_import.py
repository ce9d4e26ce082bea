"""Model outputs a researcher already has, for any benchmark: one response per
record, from JSON Lines, CSV or Parquet (docs/benchmark-formats.md,
"Responses"), or the same records from the API or the console's upload.

    {"system": "GPT-4",                 the system that answered (or --system for all)
     "document_id": "quality-1",        the question's document and id, as imported
     "question_id": "2",
     "response": "the model's answer",  may be empty (a model that said nothing)
     "task": "quality",                 optional: the task's dataset (default: --task)
     "seed": 2023,                      optional: one run per system, dataset, mode and seed
     "mode": "st"}                      optional (default: --mode, st)

Each (system, dataset, mode, seed) becomes an imported generation run (done),
each record its response. The whole file is checked first (a record names a
question the dataset does not hold, a response given twice, a NUL character:
line-numbered errors); then it is written in one transaction, idempotently: a
second import changes nothing. A response that was judged or rated keeps its
text: an import that would change it is refused (import it under another
system name), so that no score is left describing another answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from corpus.bulk import SyncCount, id_map, sync_rows
from corpus.choices import Mode
from corpus.importers.checks import identifier
from corpus.importers.errors import ImportFailure
from corpus.importers.formats.base import task_from_file
from corpus.importers.records import Record, read_records, unknown_fields
from corpus.models import Dataset, QuestionText
from generation.models import GenerationRun, Response, System
from llm.text import storable
from users.models import Project, default_project

KNOWN_FIELDS = frozenset(
    {"system", "document_id", "question_id", "response", "task", "seed", "mode"}
)
MAX_SEED = 2**31 - 1


@dataclass(frozen=True)
class ImportedResponse:
    where: str
    system: str
    task: str
    mode: str
    seed: int | None
    document_id: str
    question_id: str
    text: str


@dataclass
class ResponseImport:
    """What an import wrote."""

    counts: dict[str, SyncCount] = field(default_factory=dict)
    runs: list[int] = field(default_factory=list)


def records_from_rows(rows: list[dict[str, Any]], origin: str) -> list[Record]:
    """API or form rows as records, placed by their index ("responses[3]")."""
    return [Record(f"{origin}[{n}]", row) for n, row in enumerate(rows)]


def parse_responses(
    records: Iterable[Record], *, system: str = "", task: str = "", mode: str = Mode.SINGLE_TURN
) -> list[ImportedResponse]:
    if mode not in Mode.values:
        raise ImportFailure(f"mode {mode!r}: one of {', '.join(Mode.values)}.")
    parsed: list[ImportedResponse] = []
    for record in records:
        unknown_fields(record, KNOWN_FIELDS)
        fields, where = record.fields, record.where
        name = fields.get("system", system)
        if not isinstance(name, str) or not name.strip():
            raise ImportFailure(f"{where}: no 'system' (give it in the record or for the file).")
        text = fields.get("response")
        if not isinstance(text, str):
            raise ImportFailure(f"{where}: 'response' must be a string (it may be empty).")
        record_mode = fields.get("mode", mode)
        if record_mode not in Mode.values:
            raise ImportFailure(f"{where}: mode {record_mode!r}: one of {', '.join(Mode.values)}.")
        seed = fields.get("seed")
        if seed is not None:
            seed = int(identifier(seed, "seed", where))
            if not 0 <= seed <= MAX_SEED:
                raise ImportFailure(f"{where}: 'seed' must be a whole number from 0 to {MAX_SEED}.")
        record_task = fields.get("task", task) or ""
        if not isinstance(record_task, str):
            raise ImportFailure(f"{where}: 'task' must be a string.")
        parsed.append(
            ImportedResponse(
                where,
                name.strip(),
                record_task,
                str(record_mode),
                seed,
                identifier(fields.get("document_id"), "document_id", where),
                identifier(fields.get("question_id"), "question_id", where),
                text,
            )
        )
    if not parsed:
        raise ImportFailure("No responses: the file holds no record.")
    return parsed


def read_response_file(path: str | Path, **options: Any) -> list[ImportedResponse]:
    return parse_responses(read_records(path), **options)


@transaction.atomic
def import_responses(
    responses: list[ImportedResponse],
    *,
    benchmark: str,
    split: str,
    version: str = "qa",
    language: str = "en",
    origin: str = "",
    project: Project | None = None,
) -> ResponseImport:
    """Write the responses (checked against the stored questions first) into
    the project's runs (default: the default project); a new system is the
    project's, and a system or run of another project is refused."""
    project = project or default_project()
    datasets = {
        d.task: d
        for d in Dataset.objects.filter(
            benchmark__slug=benchmark, split=split, version=version, language=language
        )
    }
    if not datasets:
        raise ImportFailure(
            f"No dataset {benchmark} {version} {language} {split}: import the benchmark first."
        )
    questions = {
        (dataset_id, doc, ext): question_id
        for dataset_id, doc, ext, question_id in QuestionText.objects.filter(
            dataset__in=datasets.values()
        ).values_list(
            "dataset_id", "question__document__external_id", "question__external_id", "question_id"
        )
    }
    seen: dict[tuple[str, str, str, int | None, int], str] = {}
    rows: list[tuple[tuple[str, int, str, int | None], int, str]] = []
    for r in responses:
        # a task as its authors write it (L-Eval's codeU) or as stored (codeu)
        dataset = datasets.get(r.task) or (datasets.get(task_from_file(r.task)) if r.task else None)
        if dataset is None:
            known = ", ".join(repr(t) for t in sorted(datasets)) or "none"
            if not r.task:
                raise ImportFailure(
                    f"{r.where}: {benchmark} {split} has tasks ({known}): name the record's "
                    "'task', or give --task."
                )
            raise ImportFailure(f"{r.where}: no task {r.task!r} in {benchmark} {split} ({known}).")
        question = questions.get((dataset.pk, r.document_id, r.question_id))
        if question is None:
            raise ImportFailure(
                f"{r.where}: {benchmark} {split} {r.task or ''} holds no question "
                f"{r.question_id!r} of document {r.document_id!r}."
            )
        key = (r.system, r.mode, dataset.task, r.seed, question)
        if key in seen:
            raise ImportFailure(
                f"{r.where}: a second response to this question (first: {seen[key]})."
            )
        seen[key] = r.where
        rows.append(((r.system, dataset.pk, r.mode, r.seed), question, storable(r.text)))
    result = ResponseImport()
    names = sorted({system for (system, *_), _, _ in rows})
    foreign = (
        System.objects.filter(name__in=names, project__isnull=False)
        .exclude(project=project)
        .first()
    )
    if foreign is not None:
        raise ImportFailure(
            f"System {foreign.name} belongs to another project; import these responses "
            "under another system name."
        )
    named_before = set(System.objects.filter(name__in=names).values_list("name", flat=True))
    result.counts["systems"] = sync_rows(
        System.objects.filter(name__in=names),
        (
            {
                "name": name,
                "model_name": name,
                "backend": System.Backend.IMPORTED,
                "description": "Responses imported from a file (made elsewhere).",
            }
            for name in names
        ),
        key=("name",),
    )
    System.objects.filter(name__in=set(names) - named_before).update(project=project)
    clash = System.objects.filter(name__in=names).exclude(backend=System.Backend.IMPORTED).first()
    if clash is not None:
        raise ImportFailure(
            f"System {clash.name} generates its own responses ({clash.get_backend_display()}); "
            "import these under another system name."
        )
    system_ids = {
        k[0]: v for k, v in id_map(System.objects.filter(name__in=names), ("name",)).items()
    }
    counts: dict[tuple[str, int, str, int | None], int] = {}
    for run_key, _, _ in rows:
        counts[run_key] = counts.get(run_key, 0) + 1
    run_ids: dict[tuple[str, int, str, int | None], int] = {}
    created = updated = unchanged = 0
    for (system, dataset_id, mode, seed), total in counts.items():
        run, made = GenerationRun.objects.get_or_create(
            system_id=system_ids[system],
            dataset_id=dataset_id,
            mode=mode,
            seed=seed,
            defaults={
                "project": project,
                "origin": GenerationRun.Origin.IMPORTED,
                "status": GenerationRun.Status.DONE,
                "source": origin[:500],
                "total": total,
                "done": total,
            },
        )
        if not made and run.project_id != project.pk:
            raise ImportFailure(
                f"{system}'s responses on this dataset, mode and seed belong to another "
                "project; import these under another system name."
            )
        if not made and run.origin != GenerationRun.Origin.IMPORTED:
            raise ImportFailure(
                f"{system} already has a generated run on this dataset, mode and seed "
                f"(run {run.pk}); import these responses under another system name."
            )
        created += made
        unchanged += not made
        run_ids[(system, dataset_id, mode, seed)] = run.pk
    result.counts["generation runs"] = SyncCount(created, updated, unchanged)
    result.runs = sorted(run_ids.values())
    wanted = [
        {"run_id": run_ids[run_key], "question_id": question, "text": text}
        for run_key, question, text in rows
    ]
    stored: dict[tuple[int, int], tuple[int, str]] = {
        (run, question): (pk, text)
        for pk, run, question, text in Response.objects.filter(
            run_id__in=run_ids.values()
        ).values_list("pk", "run_id", "question_id", "text")
    }
    for run_key, question, text in rows:
        existing = stored.get((run_ids[run_key], question))
        if existing is not None and existing[1] != text and _scored(existing[0]):
            raise ImportFailure(
                f"Response {existing[0]} was judged or rated and keeps its text; this import "
                "would change it. Import the new responses under another system name."
            )
    result.counts["responses"] = sync_rows(
        Response.objects.filter(run_id__in=run_ids.values()),
        wanted,
        key=("run_id", "question_id"),
        compare=("text",),
    )
    for run_id in run_ids.values():
        done = Response.objects.filter(run_id=run_id).count()
        GenerationRun.objects.filter(pk=run_id).update(total=done, done=done)
    return result


def _scored(response_id: int) -> bool:
    """Judged (a judgment, or a pairwise verdict either side) or in a human
    study: looked up through Django's model registry, since generation does not
    import the apps to its right that make these."""
    from django.apps import apps

    if Response.objects.filter(pk=response_id, judgments__isnull=False).exists():
        return True
    verdicts = apps.get_model("judging", "PairwiseVerdict").objects
    if verdicts.filter(response_id=response_id).exists():
        return True
    if verdicts.filter(opponent_id=response_id).exists():
        return True
    return Response.objects.filter(pk=response_id, study_items__isnull=False).exists()


class _RolledBack(Exception):
    """Ends a dry run's transaction (its result is kept aside first)."""


def dry_run_import(responses: list[ImportedResponse], **options: Any) -> ResponseImport:
    """What `import_responses` would write (its counts; every refusal it would
    make), written in a transaction that is then rolled back: the preview
    the console shows before the researcher confirms. The runs' ids it
    reports do not exist afterwards."""
    outcome: list[ResponseImport] = []
    try:
        with transaction.atomic():
            outcome.append(import_responses(responses, **options))
            raise _RolledBack
    except _RolledBack:
        pass
    return outcome[0]


def responses_by_system(responses: list[ImportedResponse]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for response in responses:
        counts[response.system] = counts.get(response.system, 0) + 1
    return dict(sorted(counts.items()))

"""The ELITR-Bench import: corpus, the paper's responses and their scores, in
one transaction.

It lives in judging because it writes to corpus, generation and judging, and
an app may only use the apps to its left (docs/architecture.md). Parsing and
every check happen before the first write; any failure rolls everything back.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction

from corpus.bulk import SyncCount
from corpus.choices import Language
from corpus.importers import ImportFailure
from corpus.importers.download import download_elitr_bench
from corpus.importers.elitr_bench import (
    ANSWER_POSITIONS,
    LANGUAGES,
    PUBLISHED_PASSWORD,
    QUESTION_TYPES,
    VERSIONS,
    ElitrBundle,
    Progress,
    parse_elitr_bench,
)
from corpus.ruler.orders import BadOrder, RulerOrder, ruler_order
from corpus.ruler.tokens import UnknownTokenizer
from corpus.services import ELITR_BENCH, import_elitr_corpus
from corpus.staging import discard, is_staged_path
from generation.paper_responses import import_paper_responses
from judging.models import BenchmarkImport
from judging.paper_scores import import_paper_scores
from runs.lifecycle import enqueue_on_commit, finish, holding_lease


@dataclass
class ElitrImportSummary:
    source: str
    bundle: ElitrBundle
    counts: dict[str, SyncCount] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return any(c.changed for c in self.counts.values())

    def split_rows(self) -> list[dict[str, object]]:
        """Per split: meetings, questions by type and by position, words."""
        rows = []
        for split in sorted(set(self.bundle.meeting_splits.values())):
            meetings = [m for m, s in self.bundle.meeting_splits.items() if s == split]
            questions = [q for q in self.bundle.questions.values() if q.meeting_id in meetings]
            types = Counter(q.question_type for q in questions)
            positions = Counter(q.answer_position for q in questions)
            rows.append(
                {
                    "split": split,
                    "meetings": len(meetings),
                    "questions": len(questions),
                    **{t: types.get(t, 0) for t in QUESTION_TYPES},
                    **{p: positions.get(p, 0) for p in ANSWER_POSITIONS},
                    "words": sum(self.bundle.transcripts[m].word_count for m in meetings),
                }
            )
        return rows

    def judgments_by_evaluator(self) -> dict[str, int]:
        counter: Counter[str] = Counter()
        for response in self.bundle.responses:
            counter.update(response.scores.keys())
        return dict(sorted(counter.items()))

    def as_text(self) -> str:
        """A plain-text summary, for job records and logs."""
        lines = [f"Source: {self.source}"]
        for row in self.split_rows():
            lines.append(
                f"{row['split']}: {row['meetings']} meetings, {row['questions']} questions "
                f"({', '.join(f'{t} {row[t]}' for t in QUESTION_TYPES)}; "
                f"{', '.join(f'{p} {row[p]}' for p in ANSWER_POSITIONS)}), {row['words']} words"
            )
        lines.append(f"datasets: {', '.join(' '.join(d) for d in self.bundle.datasets())}")
        lines.append(
            f"responses: {len(self.bundle.responses)} "
            f"({self.bundle.duplicate_responses_merged} repeated in several files, stored once)"
        )
        lines.append(
            "judgments: " + ", ".join(f"{k} {v}" for k, v in self.judgments_by_evaluator().items())
        )
        for name, count in self.counts.items():
            lines.append(
                f"{name}: {count.created} created, {count.updated} updated, "
                f"{count.unchanged} unchanged"
            )
        lines.append(
            "Nothing changed: the database already held this data."
            if not self.changed
            else "Imported."
        )
        lines.append(f"Time: {self.seconds:.1f} s")
        lines.extend(f"Warning: {w}" for w in self.bundle.warnings)
        return "\n".join(lines)


def import_elitr_bench(
    source: str | Path,
    *,
    password: str | None = PUBLISHED_PASSWORD,
    versions: tuple[str, ...] = VERSIONS,
    languages: tuple[str, ...] = LANGUAGES,
    with_responses: bool = False,
    progress: Progress | None = None,
    benchmark_info: dict = ELITR_BENCH,
) -> ElitrImportSummary:
    started = time.perf_counter()
    if with_responses and Language.ENGLISH not in languages:
        raise ImportFailure(
            "--with-responses needs the English questions (the responses answer them): "
            "add en to --languages."
        )
    report = progress or (lambda stage, done, total: None)
    bundle = parse_elitr_bench(
        source,
        password=password,
        versions=versions,
        languages=languages,
        with_responses=with_responses,
        progress=report,
    )
    summary = ElitrImportSummary(str(source), bundle)
    report("writing to the database", 0, 3 if with_responses else 1)
    with transaction.atomic():
        corpus = import_elitr_corpus(bundle, benchmark_info)
        summary.counts.update(corpus.counts)
        report("writing to the database", 1, 3 if with_responses else 1)
        if with_responses:
            counts, response_ids = import_paper_responses(
                bundle.responses, corpus.dataset_ids, corpus.question_ids
            )
            summary.counts.update(counts)
            report("writing to the database", 2, 3)
            summary.counts.update(import_paper_scores(bundle.responses, response_ids))
            report("writing to the database", 3, 3)
    summary.seconds = time.perf_counter() - started
    return summary


def preview_elitr_bench(
    source: str | Path,
    *,
    versions: tuple[str, ...] = VERSIONS,
    languages: tuple[str, ...] = LANGUAGES,
    with_responses: bool = False,
) -> ElitrImportSummary:
    """What importing `source` would write (meetings, questions per split,
    datasets, responses, judgments), read and checked in full by the same
    parser; nothing is written. An ImportFailure names the file and field."""
    bundle = parse_elitr_bench(
        source, versions=versions, languages=languages, with_responses=with_responses
    )
    return ElitrImportSummary(str(source), bundle)


def resolve_elitr_source(
    source: str | None, *, mirror: str | None = None, report=lambda message: None
) -> Path:
    """SOURCE if given, else $CONCORD_ELITR_DATA, else the archives downloaded
    (once) into the download cache."""
    if source:
        return Path(source)
    if settings.CONCORD_ELITR_DATA:
        report(f"Reading CONCORD_ELITR_DATA={settings.CONCORD_ELITR_DATA}")
        return Path(settings.CONCORD_ELITR_DATA)
    return download_elitr_bench(
        Path(settings.CONCORD_DOWNLOAD_DIR) / "elitr-bench", mirror=mirror, report=report
    )


def start_benchmark_import(
    source: str, versions: str, languages: str, with_responses: bool, user=None
) -> BenchmarkImport:
    """Create the import job and queue it once the transaction commits (the
    admin's one way in); a broker that cannot take it leaves it failed, saying why."""
    with transaction.atomic():
        job = BenchmarkImport.objects.create(
            source=source,
            versions=versions,
            languages=languages,
            with_responses=with_responses,
            created_by=user,
        )
        enqueue_on_commit(job)
    job.refresh_from_db()
    return job


def start_ruler_make(order: RulerOrder, user=None) -> BenchmarkImport:
    """A job that makes RULER as `order` says and imports it (the console's
    "Make RULER"), queued once the transaction commits."""
    with transaction.atomic():
        job = BenchmarkImport.objects.create(
            kind=BenchmarkImport.Kind.RULER, options=order.as_options(), created_by=user
        )
        enqueue_on_commit(job)
    job.refresh_from_db()
    return job


def run_import_job(job_id: int) -> BenchmarkImport:
    """Run a queued BenchmarkImport holding its lease, recording stage, progress
    and the outcome. Safe to run twice (a redelivered task): a finished job is
    left as it is, and the import itself is idempotent."""
    with holding_lease(BenchmarkImport, job_id) as lease:
        if lease is not None:
            _import(BenchmarkImport.objects.get(pk=job_id))
    return BenchmarkImport.objects.get(pk=job_id)


def _import(job: BenchmarkImport) -> None:
    def progress(stage: str, done: int, total: int) -> None:
        BenchmarkImport.objects.filter(pk=job.pk).update(stage=stage, done=done, total=total)

    try:
        if job.kind == BenchmarkImport.Kind.RULER:
            text = make_and_import_ruler(job.options, progress)
        else:
            text = import_elitr_bench(
                resolve_elitr_source(job.source),
                versions=tuple(job.versions.split(",")),
                languages=tuple(job.languages.split(",")),
                with_responses=job.with_responses,
                progress=progress,
            ).as_text()
    except (ImportFailure, BadOrder, UnknownTokenizer) as failure:
        status, message = BenchmarkImport.Status.FAILED, f"{failure}\nNothing was imported."
    else:
        status, message = BenchmarkImport.Status.DONE, text
    BenchmarkImport.objects.filter(pk=job.pk).update(stage="finished")
    finish(job, status, message)
    # a browser upload (corpus.staging) is kept until its import ran, not after
    token = is_staged_path(job.source) if job.source else ""
    if token:
        discard(token)


def make_and_import_ruler(options: dict, progress) -> str:
    """RULER made as `options` (a RulerOrder's) say, in a folder of its own
    that goes once imported, then imported as the benchmark `ruler`."""
    import shutil
    import tempfile

    from corpus.importers.formats import read_benchmark
    from corpus.ruler.prepare import write_data
    from corpus.ruler.tokens import token_counter
    from corpus.services import import_benchmark

    order = ruler_order(**options)  # checked again: stored JSON, read back
    folder = Path(tempfile.mkdtemp(prefix="concord-ruler-"))
    try:
        count = token_counter(order.tokenizer)
        written = write_data(
            folder, order.tasks, order.lengths, order.samples, count, order.seed, progress
        )
        progress("importing", len(written), len(written))
        bundle = read_benchmark("ruler", folder)
        bundle.origin = f"made here: {order.describe()}"
        counts = import_benchmark(bundle)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    changed = "; ".join(
        f"{name}: {c.created} new, {c.updated} changed, {c.unchanged} unchanged"
        for name, c in counts.items()
    )
    return (
        f"Made RULER ({order.describe()}): {len(written)} task files, "
        f"{len(bundle.documents):,} documents, {len(bundle.items):,} questions.\n{changed}"
    )

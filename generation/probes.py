"""Probes: answers known to be bad, made for every question of a dataset, for
a judge to score beside the real systems' answers.

A judge that gives them good scores is fooled: "Judging the judges" (Thakur
et al., 2025) finds judges lenient and fooled by dummy answers, and JudgeBench
(Tan et al., ICLR 2025) near chance where the right answer is objective. Each
kind of probe is a system of its own ("probe-dont-know", ...), shared by every
project; its answers to one dataset are one imported run in the project that
asked for them. A researcher then judges them as any system (a judging run
that names the probe systems), and the report's "Probes" part compares the
judge's scores of them with its scores of the answers the humans rated good.
Every other part of the report leaves the probe systems out
(analysis.report.scores.runs_for).

The kinds, per question (single-turn, the dataset's wording):
- ``restate``: the question given back as if it were the answer;
- ``dont-know``: "I don't know.";
- ``other-question``: the reference answer to another question of the same
  meeting (right, but not to this question);
- ``wrong-number``: a confident number that the reference answer does not
  hold;
- ``irrelevant-passage``: a long passage of the meeting's transcript (about
  1,500 characters from its middle) that does not answer.
"""

from __future__ import annotations

import re

from django.db import transaction

PROBE_KINDS = {
    "restate": "the question restated as if it were the answer",
    "dont-know": '"I don\'t know."',
    "other-question": "the reference answer to another question of the same meeting",
    "wrong-number": "a confident number the reference answer does not hold",
    "irrelevant-passage": "a long passage of the transcript that does not answer",
}
PREFIX = "probe-"
PASSAGE_CHARS = 1500


def probe_system_name(kind: str) -> str:
    return f"{PREFIX}{kind}"


def wrong_number(reference: str) -> str:
    """A number the reference answer does not hold, said with confidence."""
    held = {int(n) for n in re.findall(r"\d+", reference)}
    number = max(held, default=3) * 3 + 7
    while number in held:
        number += 1
    return f"The answer is exactly {number}, as stated clearly in the meeting."


def passage(transcript: str) -> str:
    """About PASSAGE_CHARS characters from the middle of the transcript, cut
    at line breaks where it has them."""
    middle = len(transcript) // 2
    start = max(0, middle - PASSAGE_CHARS // 2)
    chunk = transcript[start : start + PASSAGE_CHARS]
    lines = chunk.split("\n")
    if len(lines) > 2:
        chunk = "\n".join(lines[1:-1])
    return chunk.strip()


def probe_answer(kind: str, question: str, reference: str, other: str, transcript: str) -> str:
    if kind == "restate":
        return f"The answer to the question is this: {question.strip()}"
    if kind == "dont-know":
        return "I don't know."
    if kind == "other-question":
        return other.strip() or "I don't know."
    if kind == "wrong-number":
        return wrong_number(reference)
    if kind == "irrelevant-passage":
        return passage(transcript)
    raise ValueError(f"unknown probe {kind!r}: one of {', '.join(PROBE_KINDS)}")


class ProbeError(ValueError):
    """Probes that cannot be made (the message says why)."""


@transaction.atomic
def make_probes(dataset, project, kinds: list[str] | None = None) -> dict[str, int]:
    """Each kind's probe answers to every question of the dataset, as one run
    of its probe system in `project` (made once: a second call adds nothing).
    Returns the answers made per kind."""
    from corpus.models import QuestionText
    from generation.models import GenerationRun, Response, System

    kinds = list(PROBE_KINDS) if kinds is None else kinds
    unknown = [k for k in kinds if k not in PROBE_KINDS]
    if unknown or not kinds:
        raise ProbeError(f"probes: choose among {', '.join(PROBE_KINDS)}")
    texts = list(
        QuestionText.objects.filter(dataset=dataset)
        .select_related("question__document")
        .order_by("question__document_id", "question__order", "question_id")
    )
    if not texts:
        raise ProbeError(f"{dataset} has no questions to make probes for")
    by_document: dict[int, list] = {}
    for text in texts:
        by_document.setdefault(text.question.document_id, []).append(text)
    made: dict[str, int] = {}
    for kind in kinds:
        system, _ = System.objects.get_or_create(
            name=probe_system_name(kind),
            defaults={
                "model_name": "probe",
                "backend": System.Backend.IMPORTED,
                "config": {"probe": kind},
                "description": f"Probe answers known to be bad: {PROBE_KINDS[kind]}.",
                "project": None,
            },
        )
        if system.config.get("probe") != kind:
            raise ProbeError(f"a system named {system.name} exists and is not a probe")
        run, created = GenerationRun.objects.get_or_create(
            system=system,
            dataset=dataset,
            mode="st",
            seed=0,
            defaults={
                "project": project,
                "origin": GenerationRun.Origin.IMPORTED,
                "status": GenerationRun.Status.DONE,
                "source": f"probes: {PROBE_KINDS[kind]}",
                "total": len(texts),
                "done": len(texts),
            },
        )
        if not created:
            if run.project_id != project.pk:
                raise ProbeError(f"{system.name}'s answers to {dataset} belong to another project")
            made[kind] = 0
            continue
        responses = []
        for siblings in by_document.values():
            for index, text in enumerate(siblings):
                other = siblings[(index + 1) % len(siblings)] if len(siblings) > 1 else None
                answer = probe_answer(
                    kind,
                    text.text,
                    text.reference_answer,
                    other.reference_answer if other is not None else "",
                    text.question.document.text,
                )
                responses.append(Response(run=run, question=text.question, text=answer))
        Response.objects.bulk_create(responses)
        made[kind] = len(responses)
    return made

"""What a generation run works on and how an answer is kept, whoever makes it
(a local model, `generation.local`; a server, `generation.remote`): the
meetings with their questions, the answers stored so far, the prompts'
questions (with L-Eval's length instruction), and storing a response."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from core.database import outlasting_outages
from core.errors import ErrorCode, Invalid
from corpus.models import Document, Question, QuestionText
from generation.config import GenerationConfig
from generation.long_inputs import length_instruction
from generation.models import GenerationRun, Response
from generation.prompts_leval import length_instruction as leval_length_instruction
from llm.calls import CallResult
from llm.driver import usage_of
from llm.text import storable
from runs import lifecycle
from runs.lifecycle import Lease


class GenerationError(Invalid):
    code = ErrorCode.GENERATION_REFUSED


class OutOfMemory(GenerationError):
    code = ErrorCode.OUT_OF_MEMORY


@contextmanager
def naming_the_prompt(prompt_tokens: int, config: GenerationConfig) -> Iterator[None]:
    """torch.cuda.OutOfMemoryError (a RuntimeError, named here without importing
    torch) becomes a message that says which prompt did not fit: the one that
    did not fit alone when batches were halved down to one (llm.hf's
    PromptOutOfMemory), else `prompt_tokens`."""
    try:
        yield
    except Exception as error:
        if type(error).__name__ not in ("OutOfMemoryError", "PromptOutOfMemory"):
            raise
        tokens = getattr(error, "prompt_tokens", prompt_tokens)
        raise OutOfMemory(
            f"Out of memory on the GPU generating for a prompt of {tokens} tokens "
            f"(+{config.max_new_tokens} new): {error}. The run stopped cleanly; lower "
            "context_length or max_new_tokens, or use a bigger GPU, then resume."
        ) from error


@dataclass
class MeetingWork:
    """A document and its questions, as a run asks them (an ELITR meeting, an
    L-Eval document, a ZeroSCROLLS document with its rows' questions)."""

    document: Document
    questions: list[Question]
    texts: list[str]
    references: list[str]
    prompts: list[dict[str, Any]] = field(default_factory=list)  # each question's prompt parts


def meetings(run: GenerationRun) -> list[MeetingWork]:
    texts = (
        QuestionText.objects.filter(dataset=run.dataset)
        .select_related("question__document")
        .order_by("question__document__external_id", "question__order")
    )
    work: dict[int, MeetingWork] = {}
    for text in texts:
        document = text.question.document
        entry = work.setdefault(document.pk, MeetingWork(document, [], [], []))
        entry.questions.append(text.question)
        entry.texts.append(text.text)
        entry.references.append(text.reference_answer)
        entry.prompts.append(text.prompt or {})
    return list(work.values())


def stopping(run: GenerationRun, lease: Lease) -> bool:
    return lease.lost.is_set() or lifecycle.is_cancelled(run)


def stored_answers(run: GenerationRun, meeting: MeetingWork) -> dict[int, str]:
    return outlasting_outages(
        lambda: dict(
            Response.objects.filter(run=run, question__in=meeting.questions).values_list(
                "question_id", "text"
            )
        ),
        what=f"Reading the answers of {run.kind_label}",
    )


def family_length_instruction(config: GenerationConfig, reference: str) -> str:
    """L-Eval's length instruction in the wording of the system's model family
    ("The suggested output length is around N words." for GPT and the LLaMA
    chat models L-Eval ran, "Answer this question with N words." for Claude,
    Llama-2-chat, ChatGLM2, XGen); Concord's own without a family."""
    if config.prompt_family:
        return leval_length_instruction(config.prompt_family, reference)
    return length_instruction(reference)


def questions_for_prompt(config: GenerationConfig, meeting: MeetingWork) -> list[str]:
    if not config.length_instruction:
        return list(meeting.texts)
    return [
        f"{q} {family_length_instruction(config, r)}"
        for q, r in zip(meeting.texts, meeting.references, strict=True)
    ]


def length_instruction_for(config: GenerationConfig, meeting: MeetingWork, index: int) -> str:
    if not config.length_instruction:
        return ""
    return family_length_instruction(config, meeting.references[index])


def save_response(
    run: GenerationRun,
    question: Question,
    text: str,
    usage: dict[str, float] | None = None,
    *,
    generated: bool = True,
    **fields: Any,
) -> None:
    """Store a response and count it, with the usage of the call that made it;
    its tokens count as generated unless the ledger answered it (`generated`
    False: nothing was decoded). While the database cannot be reached it is
    tried again (a try whose commit went through is not counted twice: the
    response is there)."""
    tokens = (fields.get("output_tokens") or 0) if generated else 0

    def store() -> None:
        try:
            with transaction.atomic():
                Response.objects.create(run=run, question=question, text=storable(text), **fields)
                GenerationRun.objects.filter(pk=run.pk).update(
                    done=F("done") + 1,
                    generated_tokens=F("generated_tokens") + tokens,
                    **{name: F(name) + value for name, value in (usage or {}).items()},
                )
        except IntegrityError:
            pass  # answered before (a redelivered task): one response per run and question

    outlasting_outages(store, what=f"Storing an answer of {run.kind_label}")


def save_answer(
    run: GenerationRun, question: Question, text: str, result: CallResult, **fields: Any
) -> None:
    """Store the answer a model call gave, with the call's tokens, time and
    usage (its tokens count as generated unless the ledger answered it)."""
    call = result.call
    save_response(
        run,
        question,
        text,
        usage=usage_of(result),
        generated=not result.cached,
        input_tokens=call.prompt_tokens,
        output_tokens=call.completion_tokens,
        finish_reason=call.finish_reason,
        seconds=call.latency_ms / 1000,
        call=call,
        **fields,
    )

"""ZeroSCROLLS' prompts, as its authors' code builds them (tau-nlp/zero_scrolls,
`experiments/api/openai_api.py` and `api.py`): no template of Concord's, the
row's own `input` (instruction, document, query, response header; rebuilt
exactly from the stored document, question and prompt parts), for a chat
model with " Do not provide any explanation." after the instruction (question
answering and aggregation tasks, not summarisation) and without the response
header, truncated by tokens when it does not fit: the first tokens of the
whole input, then the truncation separator, then the query (and what follows
it) whole.

`chat_prompt` is `OpenAIAPI.build_prompt` for gpt-3.5-turbo and gpt-4, with the
tokenizer and the window given (tests/data/zeroscrolls/prompts.json holds the
official outputs it is checked against).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

# experiments/api/api.py
SUMMARIZATION_TASKS = frozenset({"gov_report", "summ_screen_fd", "qmsum", "squality"})
GENERATION_TOKENS = {
    "gov_report": 1024,
    "summ_screen_fd": 512,
    "qmsum": 512,
    "qasper": 128,
    "narrative_qa": 64,
    "quality": 10,
    "musique": 32,
    "squality": 512,
    "space_digest": 36,
    "book_sum_sort": 256,
}
FORMAT_REQUEST = "Do not provide any explanation."
CHAT_OVERHEAD_TOKENS = 9  # what OpenAIAPI.get_max_document_tokens keeps back for a chat model


class Tokenizer(Protocol):
    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


@dataclass(frozen=True)
class Row:
    """The parts of a ZeroSCROLLS row that its prompt is built from."""

    input: str
    document_start_index: int
    document_end_index: int
    query_start_index: int
    query_end_index: int
    truncation_seperator: str

    @classmethod
    def of_question(cls, document: str, question: str, parts: dict[str, Any]) -> Row:
        """The row again, from what the import stored (corpus.importers.formats.zeroscrolls)."""
        before, between = parts["before_document"], parts["between"]
        start = len(before)
        query_start = start + len(document) + len(between)
        return cls(
            before + document + between + question + parts["after_query"],
            start,
            start + len(document),
            query_start,
            query_start + len(question),
            parts["truncation_separator"],
        )


def with_format_request(row: Row) -> Row:
    """`insert_format_request`: the request after the instruction (the text
    before the first blank line), every index moved by its length plus the
    space, as the authors' code moves them."""
    end = row.input.find("\n\n")
    text = f"{row.input[:end].strip()} {FORMAT_REQUEST}{row.input[end:]}"
    shift = len(FORMAT_REQUEST) + 1
    return replace(
        row,
        input=text,
        document_start_index=row.document_start_index + shift,
        document_end_index=row.document_end_index + shift,
        query_start_index=row.query_start_index + shift,
        query_end_index=row.query_end_index + shift,
    )


def chat_prompt(
    row: Row,
    task: str,
    tokenizer: Tokenizer | None,
    max_input_output_tokens: int | None,
    max_generation_tokens: int,
    *,
    chat: bool = True,
) -> tuple[str, bool]:
    """The prompt (and whether it was truncated). Without a tokenizer or a
    window the input is taken whole."""
    if chat:
        if task not in SUMMARIZATION_TASKS:
            row = with_format_request(row)
        row = replace(row, input=row.input[: row.query_end_index])
    text = row.input
    if tokenizer is None or max_input_output_tokens is None:
        return text, False
    tokens = tokenizer.encode(text)
    if len(tokens) <= max_input_output_tokens - max_generation_tokens:
        return text, False
    query_and_answer = text[row.query_start_index :]
    separator = row.truncation_seperator
    suffix = tokenizer.encode(separator + query_and_answer)
    budget = max_input_output_tokens - len(suffix) - max_generation_tokens - 1
    if chat:
        budget -= CHAT_OVERHEAD_TOKENS
    return tokenizer.decode(tokens[:budget]) + separator + query_and_answer, True

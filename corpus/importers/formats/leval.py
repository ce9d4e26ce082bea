"""L-Eval's task files as its authors publish them (OpenLMLab/LEval,
`LEval-data/{Closed,Open}-ended-tasks/<task>.jsonl`): one long document per
line with its questions and reference answers.

    {"input": "the document ...",
     "instructions": ["question 1", ...],      one per question
     "outputs": ["reference 1", ...],           as many as instructions
     "source": "quality_raw",                   optional (gsm100 has none)
     "evaluation": "exam" | "f1" | "rouge" | "LLM" | "human"}

The task is the file's name (`quality.jsonl`: quality) unless given; a
document is `<task>-<n>` (its line's rank in the file), its questions 1, 2,
... in order. Each question keeps the line's `evaluation` and `source` (its
prompt parts), which say how L-Eval scores it.
"""

from __future__ import annotations

from pathlib import Path

from corpus.importers.errors import ImportFailure
from corpus.importers.formats.base import (
    BenchmarkBundle,
    QuestionItem,
    check_names,
    task_from_file,
    text_field,
)
from corpus.importers.records import read_records, unknown_fields

FORMAT = "leval"
KNOWN_FIELDS = frozenset({"input", "instructions", "outputs", "source", "evaluation"})
EVALUATIONS = ("exam", "f1", "rouge", "LLM", "human")
# L-Eval's two groups of tasks (its data folders); every other is open-ended
CLOSED_ENDED = frozenset(
    {"coursera", "gsm100", "quality", "tpo", "topic_retrieval_longchat", "sci_fi", "codeu"}
)
DESCRIPTION = (
    "L-Eval (An et al., 2023): 20 long-document tasks, closed-ended (exact match over "
    "choices or numbers) and open-ended (F1, ROUGE, LLM and human judges). Imported from "
    "the authors' task files."
)


def read(
    path: str | Path,
    *,
    benchmark: str = "leval",
    benchmark_name: str | None = None,
    split: str = "test",
    version: str = "qa",
    language: str = "en",
    task: str = "",
) -> BenchmarkBundle:
    path = Path(path)
    task = task or task_from_file(path.stem)
    check_names(slug=benchmark, split=split, version=version, language=language, task=task)
    bundle = BenchmarkBundle(
        benchmark,
        benchmark_name or "L-Eval",
        FORMAT,
        version,
        language,
        split,
        str(path),
        description=DESCRIPTION,
        source_url="https://github.com/OpenLMLab/LEval",
    )
    for rank, record in enumerate(read_records(path), 1):
        unknown_fields(record, KNOWN_FIELDS)
        fields, where = record.fields, record.where
        document = text_field(fields, "input", where)
        instructions, outputs = fields.get("instructions"), fields.get("outputs")
        for name, value in (("instructions", instructions), ("outputs", outputs)):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ImportFailure(f"{where}: '{name}' must be a list of strings.")
        assert isinstance(instructions, list) and isinstance(outputs, list)
        if not instructions:
            raise ImportFailure(f"{where}: no instructions (questions) on this line.")
        if len(instructions) != len(outputs):
            raise ImportFailure(
                f"{where}: {len(instructions)} instructions but {len(outputs)} outputs; "
                "each instruction needs its reference output."
            )
        evaluation = fields.get("evaluation")
        if evaluation not in EVALUATIONS:
            raise ImportFailure(
                f"{where}: 'evaluation' {evaluation!r} is not one of {', '.join(EVALUATIONS)}."
            )
        source = fields.get("source", "")
        if not isinstance(source, str):
            raise ImportFailure(f"{where}: 'source' must be a string.")
        document_id = f"{task}-{rank}"
        bundle.add_document(document_id, document, where)
        for number, (instruction, output) in enumerate(zip(instructions, outputs, strict=True), 1):
            if not instruction.strip():
                raise ImportFailure(f"{where}: instruction {number} is empty.")
            bundle.items.append(
                QuestionItem(
                    task=task,
                    document_id=document_id,
                    question_id=str(number),
                    question=instruction,
                    answers=(output,),
                    prompt={"evaluation": evaluation, "source": source},
                )
            )
    if not bundle.items:
        raise ImportFailure(f"{path}: no documents in the file.")
    return bundle

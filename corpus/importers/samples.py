"""Small benchmarks in L-Eval's and ZeroSCROLLS' own file shapes, written by
Concord (no download), so that the demo shows the three benchmarks side by
side and the tests exercise the real importers. The texts are made up (short
stories and reports about an invented observatory), not the benchmarks' data;
their shapes are the authors': L-Eval's task JSON Lines (`input`,
`instructions`, `outputs`, `source`, `evaluation`), ZeroSCROLLS' rows (`id`,
`pid`, `input` with the document and query indices, `output`,
`truncation_seperator`), with ZeroSCROLLS' own instructions and separator.
"""

from __future__ import annotations

import json
from pathlib import Path

STORIES = (
    (
        "The Night Shift at Harrow Ridge",
        "Mira Castell had kept the Harrow Ridge observatory running for eleven winters. "
        "When the dome motor failed on the coldest night of the year, she climbed the "
        "service ladder with a torch in her teeth and turned the gear by hand for three "
        "hours, so that the comet survey would not lose its only clear sky of the month. "
        "Her assistant, Tobin, logged every plate. In the morning the director found the "
        "two of them asleep on the observation deck, the plates stacked in perfect order.",
        (
            (
                "Why did Mira turn the dome gear by hand?\n\n (A) The director ordered her to. "
                "\n (B) The motor had failed and the sky was clear. \n (C) Tobin was asleep. "
                "\n (D) She wanted to test the ladder. ",
                "(B) The motor had failed and the sky was clear.",
            ),
            (
                "Who logged the plates?\n\n (A) The director \n (B) Mira \n (C) Tobin "
                "\n (D) Nobody ",
                "(C) Tobin",
            ),
        ),
    ),
    (
        "The Lantern Keeper",
        "On the island of Vell, the lantern keeper Osric counted the ships by the sound "
        "of their bells. One foggy evening he heard a bell he did not know, rang his own "
        "in answer, and guided a lost ferry past the northern reef. The ferry's captain "
        "later gave the village a new bell, which still hangs beside the lantern.",
        (
            (
                "How did Osric know that an unknown ship was near?\n\n (A) He saw its lights. "
                "\n (B) He heard a bell he did not know. \n (C) The captain called him. "
                "\n (D) The village told him. ",
                "(B) He heard a bell he did not know.",
            ),
        ),
    ),
)

REPORTS = (
    (
        "Annual report of the Harrow Ridge observatory",
        "In its eleventh year the observatory completed 214 nights of observation, 31 more "
        "than the year before. The comet survey recorded four new objects. A failure of the "
        "dome motor in January was repaired in February at a cost of 12,400 euros. The "
        "board approved a second telescope for the next year and a training programme for "
        "two assistants.",
        "The observatory observed on 214 nights (31 more than the year before) and found four "
        "new comets; the dome motor failed and was repaired; a second telescope and training "
        "for two assistants were approved.",
        "How many new objects did the comet survey record?",
        "four",
    ),
    (
        "Report on the Vell lantern",
        "The lantern on Vell guided 1,203 ships last year. Fog reduced visibility on 58 "
        "evenings. A ferry that lost its way near the northern reef was guided to harbour "
        "after the keeper answered its bell. The village received a bronze bell from the "
        "ferry's captain as thanks.",
        "The Vell lantern guided 1,203 ships despite 58 foggy evenings; its keeper guided a "
        "lost ferry past the reef, and the captain gave the village a bronze bell.",
        "What did the ferry's captain give the village?",
        "a bronze bell",
    ),
)


def write_leval_tasks(folder: Path) -> list[Path]:
    """Two L-Eval task files: quality (closed-ended, exam) and meeting_summ-like
    open-ended report questions (f1 and rouge lines)."""
    folder.mkdir(parents=True, exist_ok=True)
    quality = folder / "quality.jsonl"
    with quality.open("w", encoding="utf-8") as out:
        for title, text, questions in STORIES:
            line = {
                "instructions": [q for q, _ in questions],
                "outputs": [a for _, a in questions],
                "input": f"{title.upper()}\n\n{text}",
                "source": "quality_raw",
                "evaluation": "exam",
            }
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    reports = folder / "report_qa.jsonl"
    with reports.open("w", encoding="utf-8") as out:
        for title, text, summary, question, answer in REPORTS:
            for instructions, outputs, evaluation in (
                ([question], [answer], "f1"),
                (["Summarize the report."], [summary], "rouge"),
            ):
                line = {
                    "instructions": instructions,
                    "outputs": outputs,
                    "input": f"{title}\n\n{text}",
                    "source": "report_qa",
                    "evaluation": evaluation,
                }
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return [quality, reports]


# ZeroSCROLLS' prompt for its question-answering tasks (Qasper's wording, as the
# dataset's `input` holds it) and its truncation separator.
QA_INSTRUCTION = (
    "You are given a scientific article and a question. Answer the question as concisely "
    "as you can, using a single phrase or sentence if possible. If the question cannot be "
    'answered based on the information in the article, write "unanswerable". If the '
    'question is a yes/no question, answer "yes", "no", or "unanswerable". Do not provide '
    "any explanation.\n\nArticle:\n"
)
SEPARATOR = "... [The rest of the article is omitted]\n\n"


def zeroscrolls_row(identifier: str, pid: str, document: str, query: str, output: str) -> dict:
    """A row as ZeroSCROLLS' dataset holds it: the whole prompt in `input`, the
    document and the query located by their indices."""
    before, between, after = QA_INSTRUCTION, "\n\nQuestion:\n", "\n\nAnswer:\n"
    text = before + document + between + query + after
    start = len(before)
    query_start = start + len(document) + len(between)
    return {
        "id": identifier,
        "pid": pid,
        "input": text,
        "output": output,
        "document_start_index": start,
        "document_end_index": start + len(document),
        "query_start_index": query_start,
        "query_end_index": query_start + len(query),
        "truncation_seperator": SEPARATOR,
    }


def write_zeroscrolls_task(folder: Path) -> Path:
    """A small `qasper` task in ZeroSCROLLS' rows: two documents, three
    questions, one of them with two references (two rows of one id)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "qasper.jsonl"
    rows = []
    for number, (title, text, _, question, answer) in enumerate(REPORTS, 1):
        document = f"{title}\n\n{text}"
        rows.append(zeroscrolls_row(f"q{number}", f"doc{number}", document, question, answer))
    first_title, first_text = REPORTS[0][0], REPORTS[0][1]
    document = f"{first_title}\n\n{first_text}"
    question = "How many nights did the observatory observe?"
    rows.append(zeroscrolls_row("q3", "doc1", document, question, "214"))
    rows.append(zeroscrolls_row("q3", "doc1", document, question, "214 nights"))
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path

"""A small synthetic ELITR-style meeting, for offline demos and tests.

It is written in the unpacked ELITR-Bench layout (data/, czech/,
generated-responses/, ELITR-English-test/<meeting>/transcript_MAN*.txt), so it
goes through the same importer as the real data. The text is made up: it is
not ELITR data and says so.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from corpus.choices import DatasetVersion

SYSTEMS = ("Synthetic-Echo", "Synthetic-Hedge", "Synthetic-Terse")
PEOPLE = ("PERSON1", "PERSON2", "PERSON3", "PERSON4")
FILLER = (
    "Okay, so let us move on.",
    "Uh, I am not sure about that, we should check the logs.",
    "Yes, I can hear you now.",
    "The evaluation scripts are in the repository.",
    "Hmm, <unintelligible/> maybe next week.",
    "I will send the link in the chat.",
    "We need more annotators for the test set.",
    "The GPU queue was full again yesterday.",
)
# (type, position, question, answer, conv wording or None, Czech question, Czech answer)
QUESTIONS = (
    (
        "who",
        "S",
        "Who attended the meeting?",
        "PERSON1, PERSON2, PERSON3 and PERSON4",
        None,
        "Kdo se zúčastnil meetingu?",
        "PERSON1, PERSON2, PERSON3 a PERSON4",
    ),
    (
        "what",
        "B",
        "What dataset did the team decide to annotate first?",
        "The lecture recordings",
        None,
        "Který dataset se tým rozhodl anotovat jako první?",
        "Nahrávky přednášek",
    ),
    (
        "who",
        "B",
        "Who will prepare the annotation guidelines?",
        "PERSON2",
        "Who will prepare its guidelines?",
        "Kdo připraví pokyny pro anotaci?",
        "PERSON2",
    ),
    (
        "when",
        "M",
        "When is the deadline for the workshop paper?",
        "On the 14th of March",
        None,
        "Kdy je termín pro článek na workshop?",
        "14. března",
    ),
    (
        "howmany",
        "M",
        "How many annotators are needed for the test set?",
        "Three annotators",
        None,
        "Kolik anotátorů je potřeba pro testovací sadu?",
        "Tři anotátoři",
    ),
    (
        "what",
        "E",
        "What did PERSON4 promise to send after the meeting?",
        "The link to the shared spreadsheet",
        None,
        "Co slíbil PERSON4 poslat po meetingu?",
        "Odkaz na sdílenou tabulku",
    ),
)
FACTS = {
    1: "(PERSON1) Let us start with the lecture recordings, they are the most urgent dataset.",
    2: "(PERSON2) I will prepare the annotation guidelines for the lecture recordings.",
    3: "(PERSON3) The deadline for the workshop paper is the 14th of March.",
    4: "(PERSON1) For the test set we need three annotators, not two.",
    5: "(PERSON4) After the meeting I will send you the link to the shared spreadsheet.",
}
FACT_POSITION = {1: 0.1, 2: 0.2, 3: 0.45, 4: 0.55, 5: 0.9}


def synthetic_transcript(lines: int = 600, seed: int = 0) -> str:
    rng = random.Random(seed)
    body = [f"({rng.choice(PEOPLE)}) {rng.choice(FILLER)}" for _ in range(lines)]
    for number, fact in sorted(FACTS.items(), reverse=True):
        body.insert(int(FACT_POSITION[number] * lines), fact)
    opening = [f"({p}) Hi, this is {p}." for p in PEOPLE]
    return "\n".join(opening + body) + "\n"


def write_synthetic_elitr(
    target: str | Path, *, meetings: int = 1, split: str = "test2", seed: int = 0
) -> Path:
    """Write `meetings` synthetic meetings (same questions, different chatter)
    under `target` and return `target`."""
    target = Path(target)
    rng = random.Random(seed)
    meeting_ids = [f"meeting_en_synthetic_{n:03d}" for n in range(1, meetings + 1)]
    for number, meeting_id in enumerate(meeting_ids):
        transcript_dir = target / "ELITR-English-test" / meeting_id
        transcript_dir.mkdir(parents=True, exist_ok=True)
        (transcript_dir / "transcript_MAN_annot01.txt").write_text(
            synthetic_transcript(seed=seed + number), encoding="utf-8"
        )

    def questions(version: str, czech: bool) -> list[dict]:
        out = []
        for number, (qtype, position, qa, answer, conv, cs_q, cs_a) in enumerate(QUESTIONS, 1):
            text = cs_q if czech else (conv if version == DatasetVersion.CONV and conv else qa)
            out.append(
                {
                    "id": str(number),
                    "question-type": qtype,
                    "answer-position": position,
                    "question": text,
                    "groundtruth-answer": cs_a if czech else answer,
                }
            )
        return out

    for folder, prefix, czech in (
        ("data", "elitr-bench", False),
        ("czech", "elitr-bench-czech", True),
    ):
        (target / folder).mkdir(parents=True, exist_ok=True)
        for version in DatasetVersion.values:
            data = {
                "split": split,
                "meetings": [
                    {"id": m, "questions": questions(version, czech)} for m in meeting_ids
                ],
            }
            (target / folder / f"{prefix}-{version}_{split}.json").write_text(
                json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8"
            )

    response_meetings = []
    for meeting_id in meeting_ids:
        entries = []
        for entry in questions(DatasetVersion.QA, czech=False):
            generated = []
            for system in SYSTEMS:
                answer = {
                    "Synthetic-Echo": "According to the transcript: "
                    f"{entry['groundtruth-answer']}.",
                    "Synthetic-Hedge": "The transcript does not say this clearly.",
                    "Synthetic-Terse": entry["groundtruth-answer"].split()[0],
                }[system]
                gold = {"Synthetic-Echo": 9, "Synthetic-Hedge": 2, "Synthetic-Terse": 5}[system]
                silver = min(10.0, max(1.0, gold + rng.uniform(-1.5, 1)))
                generated.append(
                    {
                        "model": system,
                        "generated-response": answer,
                        "gpt-4-eval_score": str(min(10, max(1, gold + rng.choice((-1, 0, 1))))),
                        "prometheus-eval_score": str(2 * min(5, max(1, round(gold / 2)))),
                        "gold-human-eval_score": str(gold),
                        "silver-human-eval_score": f"{silver:.1f}",
                    }
                )
            entries.append({**entry, "generated-responses": generated})
        response_meetings.append({"id": meeting_id, "questions": entries})
    (target / "generated-responses").mkdir(parents=True, exist_ok=True)
    (target / "generated-responses" / f"elitr-bench-qa_{split}_st_all-eval.json").write_text(
        json.dumps({"split": split, "meetings": response_meetings}, ensure_ascii=False, indent=1),
        encoding="utf-8",
    )
    return target

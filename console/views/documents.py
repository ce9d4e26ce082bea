"""The documents: every transcript of the corpus, and one transcript as
speaker turns beside its questions."""

from __future__ import annotations

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotator.views import transcript_turns
from corpus.models import Document, Question
from corpus.passages import PassageFinder
from users.decorators import researcher_required


@researcher_required
@require_GET
def documents(request: HttpRequest) -> HttpResponse:
    docs = (
        Document.objects.defer("text")
        .select_related("benchmark")
        .annotate(questions_n=Count("questions"))
        .order_by("benchmark__name", "split", "external_id")
    )
    return render(request, "console/documents.html", {"documents": docs, "nav": "documents"})


POSITION_LABELS = dict(Question.AnswerPosition.choices)
THIRD_NAMES = {"B": "Beginning", "M": "Middle third", "E": "Final third"}


@researcher_required
@require_GET
def document_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The transcript as speaker turns, searchable, with the questions beside
    it, each linked to where its answer lies (its third, and the passage that
    words the reference answer when there is one)."""
    document = get_object_or_404(Document.objects.select_related("benchmark"), pk=pk)
    turns = transcript_turns(document.text)
    finder = PassageFinder([f"{t['speaker']} {t['text']}" for t in turns])
    speakers: dict[str, str] = {}
    for turn in turns:
        speaker = turn["speaker"]
        if speaker and speaker not in speakers:
            speakers[speaker] = f"s{len(speakers) % 5}"
        turn["speaker_class"] = speakers.get(speaker, "")
        turn["third"] = ""
    for code, start in zip("BME", finder.starts, strict=True):
        if turns:
            turns[start]["third"] = THIRD_NAMES[code]
    questions = []
    for question in (
        Question.objects.filter(document=document)
        .prefetch_related("texts__dataset")
        .order_by("order")
    ):
        texts = sorted(
            question.texts.all(),
            key=lambda t: (t.dataset.language != "en", t.dataset.version != "qa", t.dataset_id),
        )
        if not texts:
            continue
        main = texts[0]
        position = question.answer_position
        passage = None
        for text in texts:
            if text.dataset.language == main.dataset.language:
                passage = finder.find(text.reference_answer, position)
                if passage is not None:
                    break
        questions.append(
            {
                "question": question,
                "main": main,
                "others": [t for t in texts[1:] if t.text != main.text],
                "position": position,
                "position_label": POSITION_LABELS.get(position, ""),
                "third_turn": finder.starts["BME".index(position)]
                if position in "BME" and position
                else None,
                "passage": passage,
                "evidence": _evidence(main.prompt, turns, finder),
            }
        )
    context = {
        "document": document,
        "transcript": turns,
        "anchors": True,
        "questions": questions,
        "speakers": len(speakers),
        "nav": "documents",
    }
    return render(request, "console/document.html", context)


def _evidence(prompt: object, turns: list[dict], finder: PassageFinder) -> list[dict]:
    """The question's evidence sentences as its authors mark them (LooGLE's
    `S`), each with the turn of the text that holds it (the sentence found
    whole, white space aside, else the passage that words it best)."""
    evidence = prompt.get("evidence") if isinstance(prompt, dict) else None
    if isinstance(evidence, str):
        evidence = [evidence]
    if not isinstance(evidence, list):
        return []
    texts = [" ".join(f"{t['speaker']} {t['text']}".split()) for t in turns]
    found = []
    for sentence in evidence:
        if not isinstance(sentence, str) or not sentence.strip():
            continue
        wanted = " ".join(sentence.split())
        turn = next((i for i, text in enumerate(texts) if wanted in text), None)
        if turn is None:
            passage = finder.find(sentence)
            turn = passage.turn if passage is not None else None
        found.append({"text": sentence, "turn": turn})
    return found

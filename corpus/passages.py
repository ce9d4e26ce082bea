"""Where in a transcript a question's answer lies. Plain Python (no Django).

ELITR-Bench annotates each question with the position of its answer: B, M or
E (the first, second or final third of the meeting) or S (several passages).
`thirds` finds where each third starts, counting words, so the viewer can
link a question to its part of the transcript. `find_passage` looks for the
turns whose words best cover the reference answer (rare words weigh more, as
in TF-IDF), so that a question whose answer is stated in so many words links
to that passage; a reference the transcript does not word that way (a count,
a summary) finds nothing, and the link stays the third.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

WORD = re.compile(r"[a-z0-9]+")
# Words too common to say where an answer is.
_STOPWORDS_TEXT = """
    a about after again all also am an and any are as at be been before being both but by
    can could did do does doing done for from had has have having he her here hers him his how
    i if in into is it its just me more most my no nor not now of off on once only or other our
    out over own same she should so some such than that the their them then there these they
    this those through to too under until up very was we were what when where which while who
    whom why will with would yes yeah you your okay ok so um uh hmm mhm like think know going
    gonna get got one two will shall also well right"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
# A passage must cover this share of the reference's weight, and this many of its words.
MIN_COVERAGE = 0.5
MIN_WORDS = 2
WINDOW = 3  # consecutive turns looked at together


def content_words(text: str) -> list[str]:
    return [
        w for w in WORD.findall(text.lower()) if w not in STOPWORDS and (len(w) > 2 or w.isdigit())
    ]


def thirds(turn_words: list[int]) -> list[int]:
    """The index of the turn where each third of the transcript starts, by
    words: [0, the turn holding word total/3, the turn holding word 2*total/3]."""
    total = sum(turn_words)
    starts = [0]
    seen = 0
    for index, words in enumerate(turn_words):
        while len(starts) < 3 and seen + words > total * len(starts) / 3:
            starts.append(index)
        seen += words
    while len(starts) < 3:
        starts.append(max(0, len(turn_words) - 1))
    return starts


def third_of(index: int, starts: list[int]) -> str:
    """B, M or E for a turn index."""
    if index >= starts[2]:
        return "E"
    return "M" if index >= starts[1] else "B"


@dataclass(frozen=True)
class Passage:
    turn: int  # the turn that matches best
    first: int  # the window of turns the match spans
    last: int
    coverage: float  # share of the reference's weight found there (0-1)
    words: tuple[str, ...]  # the reference's words found


class PassageFinder:
    """Built once per transcript (document frequencies), asked once per question."""

    def __init__(self, turns: list[str]) -> None:
        self.turn_words = [set(content_words(t)) for t in turns]
        frequency: Counter[str] = Counter()
        for words in self.turn_words:
            frequency.update(words)
        self.frequency = frequency
        self.count = len(turns)
        self.starts = thirds([len(t.split()) for t in turns])

    def weight(self, word: str) -> float:
        return math.log((self.count + 1) / (self.frequency.get(word, 0) + 1)) + 1

    def _weight_of(self, words: set[str]) -> float:
        return sum(self.weight(w) for w in words)

    def find(self, reference: str, position: str = "") -> Passage | None:
        wanted = set(content_words(reference))
        if not wanted or not self.count:
            return None
        present = {w for w in wanted if self.frequency.get(w)}
        total = sum(self.weight(w) for w in wanted)
        best: tuple[float, int] | None = None
        best_passage = None
        # only windows that hold at least one of the words
        holding = [i for i, words in enumerate(self.turn_words) if words & present]
        candidates = sorted({s for i in holding for s in range(max(0, i - WINDOW + 1), i + 1)})
        for start in candidates:
            window = range(start, min(start + WINDOW, self.count))
            found = set().union(*(self.turn_words[i] & present for i in window))
            if len(found) < min(MIN_WORDS, len(wanted)):
                continue
            coverage = sum(self.weight(w) for w in found) / total
            # the annotated third breaks ties between equally good passages
            in_third = position in ("B", "M", "E") and third_of(start, self.starts) == position
            bonus = 0.05 if in_third else 0
            key = (coverage + bonus, -start)
            if best is None or key > best:
                best = key
                turn = max(window, key=lambda i: self._weight_of(self.turn_words[i] & found))
                best_passage = Passage(turn, start, window[-1], coverage, tuple(sorted(found)))
        if best_passage is None or best_passage.coverage < MIN_COVERAGE:
            return None
        return best_passage

"""Where a question's answer lies in a transcript (corpus.passages): the
thirds counted by words, and the passage that words the reference answer."""

from corpus.passages import PassageFinder, content_words, third_of, thirds


def test_thirds_start_at_the_turns_holding_a_third_of_the_words():
    # 6 turns of 10 words: words 1-20 are the first third (turns 0-1), and so on
    assert thirds([10] * 6) == [0, 2, 4]
    # one long turn holds both the 1/3 and the 2/3 word marks
    assert thirds([1, 100, 1]) == [0, 1, 1]
    assert thirds([]) == [0, 0, 0]
    starts = thirds([10] * 6)
    assert [third_of(i, starts) for i in range(6)] == ["B", "B", "M", "M", "E", "E"]


def test_content_words_drop_fillers_and_keep_numbers():
    assert content_words("Uh, the deadline is on 3 March, okay?") == ["deadline", "3", "march"]


TURNS = [
    "PERSON1 Hello everyone, can you hear me?",
    "PERSON2 Yes. Let us talk about the workshop.",
    "PERSON1 The deadline for the workshop paper is the fifteenth of March.",
    "PERSON3 Okay. And the annotation guidelines?",
    "PERSON2 PERSON4 will prepare the annotation guidelines next week.",
    "PERSON1 Good. The GPU cluster is down again.",
    "PERSON3 I will ask the admins about the cluster.",
    "PERSON1 Thanks, bye.",
]


def test_the_passage_that_words_the_reference_is_found():
    finder = PassageFinder(TURNS)
    deadline = finder.find("The fifteenth of March.")
    assert deadline is not None and deadline.turn == 2
    assert set(deadline.words) == {"fifteenth", "march"} and deadline.coverage == 1
    assert deadline.first <= 2 <= deadline.last
    who = finder.find("PERSON4 prepares the guidelines.")
    assert who is not None and who.turn == 4  # PERSON4 and guidelines are both there


def test_a_reference_the_transcript_does_not_word_finds_nothing():
    finder = PassageFinder(TURNS)
    assert finder.find("Three people attended.") is None  # a count, not said in so many words
    assert finder.find("") is None
    assert finder.find("the of and") is None  # nothing but fillers
    assert PassageFinder([]).find("March") is None


def test_the_annotated_third_breaks_ties():
    turns = ["alpha beta gamma"] + ["filler words here"] * 4 + ["alpha beta gamma"]
    finder = PassageFinder(turns)
    assert finder.find("alpha beta", "B").turn == 0
    assert finder.find("alpha beta", "E").turn == 5
    assert finder.find("alpha beta").turn == 0  # no position: the first


def test_on_the_paper_data_found_passages_lie_in_the_annotated_third(elitr_data):
    """The annotators' answer positions (B, M, E) are an independent check: a
    passage found from the reference answer should lie in that third."""
    import re

    from corpus.importers.elitr_bench import parse_elitr_bench

    speaker = re.compile(r"^\s*[\(\[]([A-Z]+[0-9]*)[\)\]]\s*(.*)$")
    bundle = parse_elitr_bench(elitr_data, versions=("qa",), languages=("en",))
    found = in_third = with_third = total = 0
    for meeting, transcript in bundle.transcripts.items():
        turns = [
            f"{m.group(1)} {m.group(2)}" if (m := speaker.match(line)) else line.strip()
            for line in transcript.text.splitlines()
            if line.strip()
        ]
        finder = PassageFinder(turns)
        for wording in bundle.wordings:
            if wording.meeting_id != meeting:
                continue
            position = bundle.questions[(meeting, wording.question_id)].answer_position
            total += 1
            passage = finder.find(wording.reference, position)
            if passage is None:
                continue
            found += 1
            if position in ("B", "M", "E"):
                with_third += 1
                in_third += third_of(passage.turn, finder.starts) == position
    assert total == 271  # dev 141 + test2 130
    assert found / total > 0.5  # most references are worded in the meeting
    assert in_third / with_third > 0.9  # 125 of 132 when measured

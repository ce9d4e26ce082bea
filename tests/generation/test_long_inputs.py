import pytest

from generation.long_inputs import TRIM_NOTICE, length_instruction, trim_transcript


def words(text: str) -> int:
    return len(text.split())


def test_short_transcripts_are_left_alone():
    trimmed = trim_transcript("a b c\nd e", lambda t: words(t) + 10, budget=100)
    assert (trimmed.transcript, trimmed.removed_tokens, trimmed.notice) == ("a b c\nd e", 0, "")


def test_long_transcripts_keep_their_start_and_say_so():
    transcript = "\n".join(f"(PERSON{i}) line number {i}" for i in range(100))
    budget = 150  # the prompt adds 20 tokens around the transcript

    def prompt_tokens(text):
        return words(text) + 20

    trimmed = trim_transcript(transcript, prompt_tokens, budget)
    assert trimmed.transcript.startswith("(PERSON0) line number 0\n")
    assert trimmed.transcript.endswith("\n" + TRIM_NOTICE)
    assert prompt_tokens(trimmed.transcript) <= budget
    # one more line would not fit
    kept_lines = trimmed.transcript.count("\n")
    longer = "\n".join(transcript.split("\n")[: kept_lines + 1]) + "\n" + TRIM_NOTICE
    assert prompt_tokens(longer) > budget
    assert trimmed.removed_tokens == prompt_tokens(transcript) - prompt_tokens(trimmed.transcript)
    assert trimmed.notice == TRIM_NOTICE


def test_impossible_budget_is_refused():
    with pytest.raises(ValueError, match="Even without the transcript"):
        trim_transcript("x " * 100, lambda t: words(t) + 50, budget=40)


def test_length_instruction():
    assert length_instruction("PERSON2, PERSON4 and PERSON5") == "Answer in about 4 words."
    assert length_instruction("PERSON2") == "Answer in about 1 word."

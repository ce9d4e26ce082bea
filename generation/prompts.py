"""Inference prompts of the ELITR-Bench protocol, byte for byte the authors'
(utils/common.py format_inference_prompt and their chat templates; vectors in
shared/protocols).

The transcript goes into an instruction (English, or the cross-lingual Czech
variant); in single-turn mode each question gets a fresh conversation, in
multi-turn mode all questions of a meeting are asked in order, each earlier
answer appended. Local models get a raw prompt string under a named chat
template; API models get chat messages with the instruction as system message.
"""

from __future__ import annotations

from corpus.choices import Language, Mode, either

TEMPLATES = ("raw", "llama-2", "vicuna_v1.1", "longalign")
VICUNA_SYSTEM = (
    "A chat between a curious user and an artificial intelligence assistant. The assistant "
    "gives helpful, detailed, and polite answers to the user's questions."
)


def inference_prompt(transcript: str, language: str = Language.ENGLISH) -> str:
    """The instruction around the transcript (paper Fig. 4)."""
    if language not in Language.values:
        raise ValueError(f"language {language!r}: {either(Language)}.")
    czech = (
        (
            " Although the transcript is in English, the questions are in Czech and the answers "
            "should also be formulated in Czech."
        )
        if language == Language.CZECH
        else ""
    )
    return (
        "The following is the transcript of a meeting with multiple participants, where "
        "utterances start with the speaker's anonymized name (for instance (PERSON4)) and may "
        f"span over several lines.\n\n{transcript}\n\nAs a professional conversational "
        "assistant, your task is to answer questions about the meeting by making inferences "
        f"from the provided transcript.{czech}\n\n"
    )


def question_turn(question: str, qa_markers: bool) -> str:
    return f"QUESTION: {question} ANSWER:" if qa_markers else question


def openai_messages(
    transcript: str,
    questions: list[str],
    answers: list[str],
    index: int,
    mode: str,
    language: str = Language.ENGLISH,
) -> list[dict[str, str]]:
    """The chat messages for question `index`: in multi-turn mode the earlier
    questions and `answers` come first."""
    messages = [{"role": "system", "content": inference_prompt(transcript, language)}]
    if mode == Mode.MULTI_TURN:
        for question, answer in zip(questions[:index], answers[:index], strict=True):
            messages += [
                {"role": "user", "content": question},
                {"role": "assistant", "content": answer},
            ]
    elif mode != Mode.SINGLE_TURN:
        raise ValueError(f"mode {mode!r}: {either(Mode)}.")
    messages.append({"role": "user", "content": questions[index]})
    return messages


def hf_prompt(
    template: str,
    transcript: str,
    questions: list[str],
    answers: list[str],
    index: int,
    mode: str,
    qa_markers: bool = False,
    language: str = Language.ENGLISH,
) -> str:
    """The raw prompt string for question `index` under a named chat template.
    The instruction and the first question of the conversation form the first
    user turn, joined by a blank line."""
    if template not in TEMPLATES:
        raise ValueError(f"chat template {template!r}: one of {', '.join(TEMPLATES)}.")
    if mode == Mode.SINGLE_TURN:
        asked = [index]
    elif mode == Mode.MULTI_TURN:
        asked = list(range(index + 1))
    else:
        raise ValueError(f"mode {mode!r}: {either(Mode)}.")
    turns: list[tuple[str, str | None]] = []
    for position, question_index in enumerate(asked):
        user = question_turn(questions[question_index], qa_markers)
        if position == 0:
            user = inference_prompt(transcript, language) + "\n\n" + user
        answer = answers[question_index] if question_index < index else None
        turns.append((user, answer))
    return render(template, turns)


def render(template: str, turns: list[tuple[str, str | None]]) -> str:
    """Turns of (user, assistant answer or None for the one to generate)."""
    out = []
    if template == "vicuna_v1.1":
        out.append(VICUNA_SYSTEM + " ")
    for user, answer in turns:
        if template == "raw":
            out.append(user + (answer or ""))
        elif template == "llama-2":
            out.append(f"[INST] {user} [/INST]" + (f" {answer} </s><s>" if answer else ""))
        elif template == "vicuna_v1.1":
            out.append(f"USER: {user} ASSISTANT:" + (f" {answer}</s>" if answer else ""))
        else:  # longalign
            out.append(f"[INST]{user}[/INST]" + (f"{answer}\n\n" if answer else ""))
    return "".join(out)

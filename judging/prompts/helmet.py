"""HELMET's GPT-4o judge of long-document QA as its authors ran it
(princeton-nlp/HELMET at 4526dfb, `scripts/eval_gpt4_longqa.py`): the prompt
byte for byte (checked against the script in
tests/judging/test_helmet_judge.py), the model's output parsed as the script
parses it before it is shown, and the answers shown as the Python list the
script formats."""

from __future__ import annotations

from collections.abc import Sequence

from judging.metrics import helmet as helmet_metrics

# eval_gpt4_longqa.py's judge_prompt (a str.format template: {{ }} are braces)
LONGQA_TEMPLATE = (
    "Please act as an impartial judge and evaluate the quality of the provided "
    "answer which attempts to answer the provided question based on a provided "
    "context.\n"
    "Although you are not given the context, you will be given a set of correct "
    "answers that achieves full scores on all metrics, and you need to assess the "
    "provided answers using the correct answers.\n"
    "\n"
    "Below is your grading rubric:\n"
    "\n"
    "Fluency:\n"
    "- Score 0 (incoherent, repetitive, or incomplete): Incoherent sentences, "
    "repetitive sentences (even if not by exact words), incomplete answers, or "
    "gibberish. Note that even if the answer is coherent, if it is repetitive or "
    "incomplete, it should be given a score of 0.\n"
    "- Score 1 (coherent, non-repetitive answer): Coherent, non-repetitive, fluent, "
    "grammatically correct answers.\n"
    "\n"
    "Correctness:\n"
    "- Score 0 (Incorrect): The answer does not agree with the provided correct "
    "answers at all.\n"
    "- Score 1 (partly correct): Partly agree with one of the provided correct "
    "answers (for example, the question asks for a date and a person; the answer "
    "gets the date right but the person wrong).\n"
    "- Score 2 (correct but not fully relevant): Fully agrees with one of the "
    "provided correct answers but mentions other completely irrelevant information. "
    "Note that extra details provided in the answer, even if not mentioned in the "
    "correct answers, should NOT be seen as irrelevant as long as they are relevant "
    "to the question to a reasonable extend.\n"
    "- Score 3 (correct and relevant): Fully agrees with one of the provided correct "
    "answers and only provides information relevant to the question. Note that if "
    "the answer is longer than the correct answer, as long as everything in the "
    "answer is relevant to the question, it should still be given score 3. For "
    'example, if the correct answer is "the North Pole" and the answer is "They are '
    'headed for the North Pole", it should still be given a score of 3.\n'
    "\n"
    "Now, read the following question, answer, and correct answers. First think "
    "step-by-step and provide your reasoning and assessment on the answer. Then "
    'output your score in the following json format: {{"fluency": 0, "correctness": '
    "1}}.\n"
    "\n"
    "Question: {question}\n"
    "Correct answers: {correct_answers}\n"
    "Answer: {parsed_output}\n"
)


def parse_output(output: str, prefix: str = "Answer:") -> str | None:
    """eval_gpt4_longqa.py's parse_output: utils.py's, on the output with its
    new lines made spaces."""
    return helmet_metrics.parse_output(output.replace("\n", " "), prefix)


def longqa_messages(question: str, answer: str, answers: Sequence[str]) -> list[dict[str, str]]:
    """The judge's one user message: the question, the right answers as the
    script's `d['answer']` list prints, the output as parsed."""
    prompt = LONGQA_TEMPLATE.format(
        question=question, correct_answers=list(answers), parsed_output=parse_output(answer)
    )
    return [{"role": "user", "content": prompt}]

"""L-Eval's prompts equal what its baseline scripts sent, byte for byte: for
each of 8 model families and 9 tasks (tests/data/leval/prompts.json, captured
by running `Baselines/<family>-test.py` unchanged with stand-in models), every
call for every question of the task file, in order (sci_fi: two per question)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generation.prompts_leval import (
    CLOSED_ENDED_TASKS,
    FAMILIES,
    MAX_NEW_TOKENS,
    SYSTEM_PROMPTS,
    LevalPrompt,
    length_instruction,
    leval_calls,
    leval_prompt,
    sci_fi_prediction,
    system_prompt,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "leval" / "prompts.json"
RUNS = json.loads(DATA.read_text(encoding="utf-8"))["runs"]
TASKS = (
    "quality",
    "tpo",
    "coursera",
    "gsm100",
    "codeU",
    "topic_retrieval_longchat",
    "sci_fi",
    "narrative_qa",
    "meeting_summ",
)


def family_of(run: dict) -> str:
    return run["family"].split()[0]  # "vicuna (default --max_length 2k -> ...)"


def test_every_family_and_task_is_captured_once():
    pairs = [(family_of(run), run["task"]) for run in RUNS]
    assert sorted(pairs) == sorted((f, t) for f in FAMILIES for t in TASKS)
    for run in RUNS:
        assert run["metric"] == ("exam_eval" if run["task"] in CLOSED_ENDED_TASKS else "ngram_eval")


@pytest.mark.parametrize("run", RUNS, ids=lambda run: f"{family_of(run)}-{run['task']}")
def test_calls_equal_the_official_scripts(run):
    family, task, instance = family_of(run), run["task"], run["instance"]
    closed = run["metric"] == "exam_eval"
    built: list[LevalPrompt] = []
    for instruction, reference in zip(instance["instructions"], instance["outputs"], strict=True):
        built += leval_calls(family, task, instance["input"], instruction, reference, closed=closed)
    official = run["calls"]
    assert len(built) == len(official)
    for prompt, call in zip(built, official, strict=True):
        if family == "turbo16k":
            assert prompt.text is None
            assert prompt.messages == call["messages"]
            assert call["kwargs"]["max_tokens"] == MAX_NEW_TOKENS
        else:
            assert prompt.messages is None
            assert prompt.text == call["prompt"]
            if family == "claude":
                assert call["kwargs"]["max_tokens_to_sample"] == MAX_NEW_TOKENS


def test_concords_codeu_slug_is_codeU():
    args = ("def f():\n    return 1\n", "What is the output?", "1")
    for family in FAMILIES:
        assert leval_prompt(family, "codeu", *args, closed=True) == leval_prompt(
            family, "codeU", *args, closed=True
        )


def test_length_instruction_wording():
    reference = " Mary  was\nin love\twith Ann. "
    for family in ("turbo16k", "longchat", "vicuna", "mpt"):
        assert length_instruction(family, reference) == (
            "The suggested output length is around 6 words."
        )
    for family in ("claude", "llama2-chat", "chatglm2", "xgen"):
        assert length_instruction(family, reference) == "Answer this question with 6 words."
    assert length_instruction("claude", "") == "Answer this question with 0 words."


def test_system_prompts():
    assert system_prompt("quality", True) == SYSTEM_PROMPTS["exam"]
    assert system_prompt("narrative_qa", False) == SYSTEM_PROMPTS["open"]
    assert system_prompt("gsm100", True) == SYSTEM_PROMPTS["gsm"]
    assert system_prompt("codeu", True) == SYSTEM_PROMPTS["codeU"]
    # LLM/human metrics: one file per model, the task's words are not seen
    assert system_prompt("gsm100", False, llm_metric=True) == SYSTEM_PROMPTS["open"]


def test_mpt_asks_for_a_length_only_under_ngram_eval():
    args = ("mpt", "narrative_qa", "D", "Q?", "two words")
    ngram = leval_prompt(*args, closed=False).text
    judged = leval_prompt(*args, closed=False, llm_metric=True).text
    assert ngram is not None and "around 2 words" in ngram
    assert (
        judged
        == SYSTEM_PROMPTS["open"] + "Document is as follows. D \nQuestion: Q? \nThe answer is: "
    )
    with pytest.raises(ValueError):
        leval_prompt(*args, closed=True, llm_metric=True)


def test_longchat_and_vicuna_coursera_outside_exam_eval():
    text = leval_prompt("longchat", "coursera", "D", "Q", "A", closed=False).text
    assert text is not None
    assert text.endswith(
        "Question: Q \n Please only give the correct options (e.g., A). \nASSISTANT: "
    )


def test_braces_in_inline_documents_are_read_as_fields_except_for_turbo16k():
    document = "x = {{1}} and {inst}"
    turbo = leval_prompt("turbo16k", "gsm100", document, "Q", "4", closed=True).messages
    assert turbo is not None and turbo[1]["content"] == document + "\n\nQ"
    assert leval_prompt("mpt", "gsm100", document, "Q", "4", closed=True).text == (
        SYSTEM_PROMPTS["gsm"] + "x = {1} and Q\n\nQ\nThe answer is: "
    )
    # a field that does not format: the message as built
    assert leval_prompt("xgen", "gsm100", "{a}", "Q", "4", closed=True).text == (
        SYSTEM_PROMPTS["gsm"] + "{a}\n\nQ"
    )
    # in the templated branches the values go in as they are
    text = leval_prompt("claude", "quality", "{{a}} {b}", "{c}", "A", closed=True).text
    assert text is not None and "Document is as follows. {{a}} {b} \nQuestion: {c}  " in text


def test_sci_fi_prediction_and_unknown_family():
    assert sci_fi_prediction("True", "False") == "True [fact: False]"
    with pytest.raises(ValueError, match="gpt-4"):
        leval_prompt("gpt-4", "quality", "D", "Q", "A", closed=True)
    with pytest.raises(ValueError):
        length_instruction("llama2", "A")


class Words:
    """A tokenizer whose tokens are the text's words (what the rule counts in)."""

    def encode(self, text: str) -> list[str]:
        return text.split(" ")


def test_truncation_keeps_the_end_of_code_except_for_mpt():
    """The scripts cut a long document word by word: codeU keeps its last words
    (`[cnt - max_length:]`), except in mpt-test.py, which keeps the first ones
    within its fixed 7,500 tokens (`doc_len`) whatever the model's window."""
    from generation.benchmark_prompts import leval_document

    document = " ".join(f"w{i}" for i in range(9000))
    kept = leval_document(document, "codeU", Words(), 8012).split(" ")  # 7,500 after 512 new
    assert (kept[0], kept[-1], len(kept)) == ("w1500", "w8999", 7500)
    kept = leval_document(document, "codeU", Words(), 8012, "mpt").split(" ")
    assert (kept[0], kept[-1], len(kept)) == ("w0", "w7499", 7500)
    # mpt's budget is its own: a 16k window does not lift it, no window does not lift it
    for window in (16384, None):
        assert len(leval_document(document, "quality", Words(), window, "mpt").split(" ")) == 7500
    kept = leval_document(document, "quality", Words(), 8012).split(" ")
    assert (kept[0], kept[-1]) == ("w0", "w7499")
    assert leval_document(document, "quality", Words(), None) == document  # no window, no cut


def test_a_served_model_is_cut_with_its_own_tokenizer(tiny_model):
    """A llama served by vLLM names its own tokenizer ("hf:<folder>", never
    downloaded): the server path counts and cuts L-Eval's documents with it,
    as the authors' scripts cut with the model's tokenizer."""
    from transformers import AutoTokenizer

    from generation.benchmark_prompts import api_tokenizer, leval_document
    from generation.config import GenerationConfig, GenerationConfigError

    served = {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "llama"}
    tokens = api_tokenizer(GenerationConfig.from_dict(served | {"tokenizer": f"hf:{tiny_model}"}))
    own = AutoTokenizer.from_pretrained(tiny_model)
    document = " ".join(["the meeting agreed on the budget and the next steps"] * 200)
    assert tokens.encode(document) == own(document, add_special_tokens=False)["input_ids"]
    assert len(tokens.encode(document)) > 1500
    cut = leval_document(document, "quality", tokens, 512 + 1500)  # 1,500 for the document
    assert len(own(cut, add_special_tokens=False)["input_ids"]) <= 1500
    assert document.startswith(cut) and len(cut) < len(document)
    with pytest.raises(GenerationConfigError, match="no such folder"):
        GenerationConfig.from_dict(served | {"tokenizer": "hf:/nowhere/llama"})
    with pytest.raises(GenerationConfigError, match='"hf:<folder>"'):
        GenerationConfig.from_dict(served | {"tokenizer": "llama"})

"""Inference prompts equal the ELITR-Bench authors' strings byte for byte."""

import pytest

from generation.prompts import TEMPLATES, hf_prompt, inference_prompt, openai_messages


@pytest.mark.parametrize(("key", "language"), [("english", "en"), ("czech", "cs")])
def test_inference_prompt(prompt_vectors, key, language):
    transcript = prompt_vectors["inputs"]["transcript"]
    assert (
        inference_prompt(transcript, language)
        == prompt_vectors["vectors"][f"inference_prompt.{key}"]
    )


@pytest.mark.parametrize("mode", ["st", "mt"])
def test_openai_messages(prompt_vectors, mode):
    inputs = prompt_vectors["inputs"]
    questions, answers = inputs["questions"], inputs["model_answers_for_multi_turn"]
    built = [
        openai_messages(inputs["transcript"], questions, answers, i, mode)
        for i in range(len(questions))
    ]
    assert built == prompt_vectors["vectors"][f"openai_inference_messages.{mode}"]


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize("qa_markers", [False, True])
@pytest.mark.parametrize("mode", ["st", "mt"])
def test_hf_prompts(prompt_vectors, template, qa_markers, mode):
    inputs = prompt_vectors["inputs"]
    questions, answers = inputs["questions"], inputs["model_answers_for_multi_turn"]
    key = f"hf_prompt.{template}.qmarker={str(qa_markers).lower()}.{mode}"
    built = [
        hf_prompt(template, inputs["transcript"], questions, answers, i, mode, qa_markers)
        for i in range(len(questions))
    ]
    assert built == prompt_vectors["vectors"][key]


def test_bad_options():
    with pytest.raises(ValueError, match="chat template 'chatml'"):
        hf_prompt("chatml", "t", ["q"], [], 0, "st")
    with pytest.raises(ValueError, match="mode 'xx'"):
        openai_messages("t", ["q"], [], 0, "xx")
    with pytest.raises(ValueError, match="language 'de'"):
        inference_prompt("t", "de")

"""Judge prompts. The rubric (GPT-4 style) and Prometheus prompts reproduce the
ELITR-Bench authors' strings byte for byte (shared/protocols vectors; paper
Figs. 5-8), in English and Czech."""

from judging.prompts.templates import (
    LEVAL_JUDGE_SYSTEM,
    LEVAL_JUDGE_TEMPLATE,
    LOOGLE_QA_SYSTEM,
    LOOGLE_SUMMARY_TEMPLATE,
    PLACEHOLDERS,
    TemplateError,
    leval_judge_messages,
    loogle_qa_messages,
    loogle_summary_messages,
    neutralize,
    pairwise_judge_messages,
    prometheus_judge_prompt,
    render_template,
    rubric_judge_messages,
    rubric_judge_prompt,
    validate_template,
)

__all__ = [
    "LEVAL_JUDGE_SYSTEM",
    "LEVAL_JUDGE_TEMPLATE",
    "LOOGLE_QA_SYSTEM",
    "LOOGLE_SUMMARY_TEMPLATE",
    "PLACEHOLDERS",
    "TemplateError",
    "leval_judge_messages",
    "loogle_qa_messages",
    "loogle_summary_messages",
    "neutralize",
    "pairwise_judge_messages",
    "prometheus_judge_prompt",
    "render_template",
    "rubric_judge_messages",
    "rubric_judge_prompt",
    "validate_template",
]

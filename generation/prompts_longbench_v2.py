"""LongBench v2's prompt as its authors' `pred.py` builds it (THUDM/LongBench,
MIT licence), without chain of thought, retrieval or the no-context variant:

- `prompts/0shot.txt` (below, byte for byte: no newline at its end), its
  fields filled in pred.py's order by plain replacement: `$DOC$` with the
  context stripped, then `$Q$`, `$C_A$` .. `$C_D$` with the question and the
  choices stripped (each replacement sees the text the previous one made, as
  in pred.py: a context holding "$Q$" gets the question there too);
- sent as the one user message of a chat request, temperature 0.1 and 128
  new tokens in pred.py;
- truncated in the middle when its tokens pass the model's budget
  (`config/model2maxlen.json`: 120,000 for every model but Claude's 200,000):
  `ids[:max_len//2] + ids[-max_len//2:]` (Python's `-max_len//2` is
  `(-max_len)//2`, so an odd budget keeps one more token at the end), then
  decoded; tiktoken (GPT models) with no special token refused, a Hugging
  Face tokenizer with its special tokens skipped on decoding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generation.prompts_zeroscrolls import Tokenizer

TEMPLATE_0SHOT = (
    "Please read the following text and answer the question below.\n\n<text>\n$DOC$\n</text>\n\n"
    "What is the correct answer to this question: $Q$\nChoices:\n(A) $C_A$\n(B) $C_B$\n"
    "(C) $C_C$\n(D) $C_D$\n\n"
    'Format your response as follows: "The correct answer is (insert answer here)".'
)
MAX_NEW_TOKENS = 128  # pred.py without chain of thought
TEMPERATURE = 0.1
# config/model2maxlen.json: every model's budget but claude-3.5-sonnet's (200,000)
DEFAULT_MAX_LEN = 120_000


def longbench_v2_prompt(context: str, question: str, choices: Mapping[str, Any]) -> str:
    """The filled 0-shot template, replaced in pred.py's order."""
    return (
        TEMPLATE_0SHOT.replace("$DOC$", context.strip())
        .replace("$Q$", question.strip())
        .replace("$C_A$", str(choices["choice_A"]).strip())
        .replace("$C_B$", str(choices["choice_B"]).strip())
        .replace("$C_C$", str(choices["choice_C"]).strip())
        .replace("$C_D$", str(choices["choice_D"]).strip())
    )


def truncate_middle(prompt: str, tokenizer: Tokenizer | None, max_len: int | None) -> str:
    """pred.py's query_llm truncation: the first and the last max_len // 2
    tokens when there are more than max_len (no tokenizer: as given)."""
    if tokenizer is None or not max_len:
        return prompt
    ids = _encode(tokenizer, prompt)
    if len(ids) <= max_len:
        return prompt
    kept = ids[: max_len // 2] + ids[-max_len // 2 :]
    return tokenizer.decode(kept)


def _encode(tokenizer: Tokenizer, text: str) -> list[int]:
    """tiktoken as pred.py calls it (special tokens' text allowed as plain
    text); any other tokenizer as it counts."""
    try:
        import tiktoken
    except ImportError:  # pragma: no cover - a runtime dependency
        return list(tokenizer.encode(text))
    if isinstance(tokenizer, tiktoken.Encoding):
        return list(tokenizer.encode(text, disallowed_special=()))
    return list(tokenizer.encode(text))

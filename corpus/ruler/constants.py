"""RULER's task templates and settings, as its authors publish them
(`scripts/data/synthetic/constants.py`, `scripts/synthetic.yaml`,
`scripts/data/template.py`'s base template; NVIDIA/RULER at c3f5e3b, Apache
2.0)."""

from __future__ import annotations

from typing import Any

TEMPLATES: dict[str, dict[str, Any]] = {
    "niah": {
        "tokens_to_generate": 128,
        "template": """Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic {type_needle_v} for {query} mentioned in the provided text?""",  # noqa: E501
        "answer_prefix": """ The special magic {type_needle_v} for {query} mentioned in the provided text are""",  # noqa: E501
    },
    "variable_tracking": {
        "tokens_to_generate": 30,
        "template": """Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\nQuestion: Find all variables that are assigned the value {query} in the text above.""",  # noqa: E501
        "answer_prefix": """ Answer: According to the chain(s) of variable assignment in the text above, {num_v} variables are assigned the value {query}, they are: """,  # noqa: E501
    },
    "common_words_extraction": {
        "tokens_to_generate": 120,
        "template": """Below is a numbered list of words. In these words, some appear more often than others. Memorize the ones that appear most often.\n{context}\nQuestion: What are the 10 most common words in the above list?""",  # noqa: E501
        "answer_prefix": """ Answer: The top 10 words that appear most often in the list are:""",  # noqa: E501
    },
    "freq_words_extraction": {
        "tokens_to_generate": 50,
        "template": """Read the following coded text and track the frequency of each coded word. Find the three most frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are the three most frequently appeared words in the above coded text?""",  # noqa: E501
        "answer_prefix": """ Answer: According to the coded text above, the three most frequently appeared words are:""",  # noqa: E501
    },
}

# every task of synthetic.yaml, by its base task (constants.py's keys), and each
# base task's answer budget (`tokens_to_generate`)
ALL_TASKS = {
    "niah_single_1": "niah",
    "niah_single_2": "niah",
    "niah_single_3": "niah",
    "niah_multikey_1": "niah",
    "niah_multikey_2": "niah",
    "niah_multikey_3": "niah",
    "niah_multivalue": "niah",
    "niah_multiquery": "niah",
    "vt": "variable_tracking",
    "cwe": "common_words_extraction",
    "fwe": "freq_words_extraction",
    "qa_1": "qa",
    "qa_2": "qa",
}
TOKENS_TO_GENERATE = {
    "niah": 128,
    "variable_tracking": 30,
    "common_words_extraction": 120,
    "freq_words_extraction": 50,
    "qa": 32,
}

# synthetic.yaml's tasks that need no download, with their settings
TASKS: dict[str, dict[str, Any]] = {
    "niah_single_1": {
        "task": "niah",
        "args": {
            "type_haystack": "noise",
            "type_needle_k": "words",
            "type_needle_v": "numbers",
            "num_needle_k": 1,
            "num_needle_v": 1,
            "num_needle_q": 1,
        },
    },
    "niah_multikey_2": {
        "task": "niah",
        "args": {
            "type_haystack": "needle",
            "type_needle_k": "words",
            "type_needle_v": "numbers",
            "num_needle_k": 1,
            "num_needle_v": 1,
            "num_needle_q": 1,
        },
    },
    "niah_multikey_3": {
        "task": "niah",
        "args": {
            "type_haystack": "needle",
            "type_needle_k": "uuids",
            "type_needle_v": "uuids",
            "num_needle_k": 1,
            "num_needle_v": 1,
            "num_needle_q": 1,
        },
    },
    "vt": {
        "task": "variable_tracking",
        "args": {"type_haystack": "noise", "num_chains": 1, "num_hops": 4},
    },
    "cwe": {
        "task": "common_words_extraction",
        "args": {"freq_cw": 30, "freq_ucw": 3, "num_cw": 10},
    },
    "fwe": {"task": "freq_words_extraction", "args": {"alpha": 2.0}},
}

# run.sh's default lengths, and config_tasks.sh's samples per task
LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)
NUM_SAMPLES = 500
RANDOM_SEED = 42  # prepare.py's default


def template(task: str) -> str:
    """prepare.py's template for the base model template: the task's template
    with its answer prefix after it."""
    base = TEMPLATES[TASKS[task]["task"]]
    return "{task_template}".format(task_template=base["template"]) + base["answer_prefix"]


def ruler_task(stored: str) -> str:
    """RULER's own name of a task Concord stores with its length:
    `niah_single_1-4096` -> `niah_single_1`."""
    name, _, length = stored.rpartition("-")
    return name if name and length.isdigit() else stored


def manifest_record(
    index: int, text: str, answer: list[str], length: int, answer_prefix: str
) -> dict[str, Any]:
    """A record as the word and variable scripts write it: the prompt cut at
    the last place the answer prefix's first 10 characters start (the
    prefix after it), the length with the base template's 0 extra tokens."""
    cut = text.rfind(answer_prefix[:10])
    return {
        "index": index,
        "input": text[:cut],
        "outputs": answer,
        "length": length,
        "length_w_model_temp": length,
        "answer_prefix": text[cut:],
    }

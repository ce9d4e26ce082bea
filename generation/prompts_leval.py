"""L-Eval's prompts, as its authors' baseline scripts send them to each model
(OpenLMLab/LEval at cd34b05, `Baselines/<family>-test.py` with
`Baselines/LEval_config.py`'s system prompts), byte for byte: chat messages for
turbo16k (gpt-3.5-turbo-16k-0613: a system and a user message), one prompt
string for the others (claude: the whole "\\n\\nHuman: ... \\n\\nAssistant:"
completion prompt; chatglm2: the query given to ChatGLM2's `model.chat`, which
adds its own round template; the rest: the text given to the tokenizer).

Rules the scripts follow, kept here:

- a task is recognised by words in its file name ("gsm", "codeU" ("code" for
  claude and mpt), "topic", "coursera", "sci_fi"), tested here on the task name
  (Concord's slug "codeu" counts as "codeU"); `closed` is `--metric exam_eval`,
  otherwise `ngram_eval`; `llm_metric` is `llm_turbo_eval`, `llm_gpt4_eval` or
  `human_eval`, where the scripts read one file per model, so the task plays no
  part and only mpt changes (it has no length instruction then);
- the length instruction (open-ended only, and for mpt only under ngram_eval)
  asks for N words, N = `len(reference.split())` of that question's reference;
- gsm100 and codeU get the document, a blank line and the question right after
  the system prompt ("Document is as follows." is not said); topic retrieval
  too for llama2-chat, longchat, vicuna, xgen and mpt (turbo16k, claude and
  chatglm2 treat it as any other closed task);
- every script but turbo16k's builds its message and then calls
  `message.format(document=..., inst=...)`, keeping the message as it is when
  that raises: where the document and the question are already in the message
  (gsm100, codeU, topic retrieval) their braces are read as fields, so
  "{{x}}" becomes "{x}" when nothing else fails, "{inst}" is replaced, and any
  other field ("{'a': 1}") leaves the whole message unformatted;
- sci_fi asks a second question, the same one "based on the real-world
  knowledge and facts up until your last training": alone (turbo16k: a further
  user message after the first two, without the model's first answer), and the
  prediction is `"<first answer> [fact: <second answer>]"` (`sci_fi_prediction`).

No truncation here: the runner truncates the document before building. The
scripts do it per document with the model's tokenizer (tiktoken's
gpt-3.5-turbo encoding for turbo16k) and `max_length = k_to_number(--max_length)
- 512` (16k turbo16k and longchat, 8k chatglm2 and xgen, 4k llama2-chat, 2k
vicuna; claude none; mpt a fixed 7,500 tokens): while the document has more
tokens than that, `cnt` starting at 0, `document = " ".join(document.split("
")[:max_length - cnt])` (for codeU, "code" in the file name, the end is kept:
`[cnt - max_length:]`; not for mpt), then `cnt += 250`.

Generation: 512 new tokens (`MAX_NEW_TOKENS`); turbo16k temperature 0.0001,
claude `max_tokens_to_sample=512` alone, the local models greedy.
"""

from __future__ import annotations

from dataclasses import dataclass

FAMILIES = ("turbo16k", "claude", "llama2-chat", "chatglm2", "xgen", "longchat", "vicuna", "mpt")
# LEval_config.py
CLOSED_ENDED_TASKS = (
    "coursera",
    "quality",
    "topic_retrieval_longchat",
    "tpo",
    "gsm100",
    "codeU",
    "sci_fi",
)
OPEN_ENDED_TASKS = (
    "financial_qa",
    "gov_report_summ",
    "legal_contract_qa",
    "meeting_summ",
    "multidoc_qa",
    "narrative_qa",
    "natural_question",
    "news_summ",
    "paper_assistant",
    "patent_summ",
    "review_summ",
    "scientific_qa",
    "tv_show_summ",
)
MAX_NEW_TOKENS = 512

# "sinlge" and "additonal" are the authors' spelling
SYSTEM_PROMPTS = {
    "gsm": (
        "Given several question answer pairs, you need to follow a similar format to answer the "
        "last question. Make sure the response is end with The answer is _ . "
    ),
    "topic": (
        "Below is a record of our previous conversation on many different topics. You are the "
        "ASSISTANT, and I am the USER. At the beginning of each topic, the USER will say 'I would "
        "like to discuss the topic of <TOPIC>'. Memorize each <TOPIC>. At the end of the record, "
        "I will ask you to retrieve the first/second/third topic names. Now the record start. "
    ),
    "coursera": (
        "Now you are given a very long document. Please follow the instruction based on this "
        "document. For multi-choice questions, there could be a sinlge correct option or multiple "
        "correct options. Please only provide the letter corresponding to the answer (like A or "
        "AB) when answering. "
    ),
    "codeU": (
        "Now you are given a code base consisting of a large amount of functions and the "
        "corresponding comments. In the end, I will call some functions defined in the code "
        "base. Please carefully read these codes and comments and answer the question."
    ),
    "sci_fi": (
        "Now you are given a scientific fiction. I will ask you some questions and the answer "
        'should be "True" or "False". Notice that you should answer the question based on the '
        "evidence in the document instead of your background knowledge."
    ),
    "exam": (
        "Now you are given a very long document. Please follow the instruction based on this "
        "document. For multi-choice questions, there is only a sinlge correct option. Please only "
        "provide the letter corresponding to the answer (like A or B) when answering. For other "
        "questions, please directly give the concise and accurate answer. "
    ),
    "open": (
        "Now you are given a very long document. Please follow the instruction after this "
        "document. These instructions may include summarizing a document, answering questions "
        "based on the document, or writing a required paragraph. "
    ),
}
# which families ask "The suggested output length is around N words."; the
# others "Answer this question with N words."
SUGGESTED_LENGTH = frozenset({"turbo16k", "longchat", "vicuna", "mpt"})

HUMAN, ASSISTANT = "\n\nHuman:", "\n\nAssistant:"  # anthropic's HUMAN_PROMPT, AI_PROMPT
HUMAN_HEADER = (  # chatglm2, xgen
    "A chat between a curious human and an artificial intelligence assistant. The assistant "
    "gives helpful, detailed, and polite answers to the human's questions.\n\n"
)
USER_HEADER = (  # longchat, vicuna (no space after the first sentence)
    "A chat between a curious user and an artificial intelligence assistant.The assistant "
    "gives helpful, detailed, and polite answers to the user's questions."
)
WORLD = "based on the world described in the document."
REAL_WORLD = "based on the real-world knowledge and facts up until your last training"


@dataclass(frozen=True)
class LevalPrompt:
    """One request: chat `messages` (turbo16k) or a prompt `text` (the others)."""

    messages: list[dict[str, str]] | None = None
    text: str | None = None


def _family(family: str) -> str:
    if family not in FAMILIES:
        raise ValueError(f"L-Eval model family {family!r}: choose from {', '.join(FAMILIES)}.")
    return family


def authors_task(task: str) -> str:
    """A task as L-Eval's authors write it (Concord's slug codeu: codeU)."""
    return "codeU" if task.lower() == "codeu" else task


def _name(task: str, llm_metric: bool) -> str:
    """What the scripts test the task's words on: its file name, "" under the
    LLM/human metrics (one file per model)."""
    if llm_metric:
        return ""
    return authors_task(task)


def _closed_or_llm(closed: bool, llm_metric: bool) -> None:
    if closed and llm_metric:
        raise ValueError("closed (exam_eval) and llm_metric exclude each other.")


def system_prompt(task: str, closed: bool, *, llm_metric: bool = False) -> str:
    """`get_sys_prompt`: the first of gsm, topic, coursera, codeU, sci_fi
    found in the task name, else the closed-ended or the open-ended prompt."""
    _closed_or_llm(closed, llm_metric)
    name = _name(task, llm_metric)
    for word in ("gsm", "topic", "coursera", "codeU", "sci_fi"):
        if word in name:
            return SYSTEM_PROMPTS[word]
    return SYSTEM_PROMPTS["exam" if closed else "open"]


def length_instruction(family: str, reference: str) -> str:
    """The family's request for the reference's length in words, as one
    sentence (the prompts put it after the question with the family's own
    spacing: "\\n" before it for the "Answer this question" families, " Output: "
    after it for turbo16k, " " after it for longchat, vicuna and mpt)."""
    words = len(reference.split())
    if _family(family) in SUGGESTED_LENGTH:
        return f"The suggested output length is around {words} words."
    return f"Answer this question with {words} words."


def _formatted(message: str, document: str, instruction: str) -> str:
    # the scripts' `message.format(document=..., inst=...)` under a bare except
    try:
        return message.format(document=document, inst=instruction)
    except Exception:
        return message


def leval_prompt(
    family: str,
    task: str,
    document: str,
    instruction: str,
    reference: str,
    *,
    closed: bool,
    llm_metric: bool = False,
) -> LevalPrompt:
    """The first (for sci_fi, the only in-document) request for one question
    of a document; `document` already truncated as the runner wants it."""
    family = _family(family)
    system = system_prompt(task, closed, llm_metric=llm_metric)
    name = _name(task, llm_metric)
    gsm, topic, coursera = "gsm" in name, "topic" in name, "coursera" in name
    code = ("code" if family in ("claude", "mpt") else "codeU") in name
    inline = document + "\n\n" + instruction  # gsm100, codeU, topic: no "Document is as follows."
    length = length_instruction(family, reference)
    with_question = "Document is as follows. {document} \nQuestion: {inst} "

    if family == "turbo16k":  # the document and the question go in by positional format
        if gsm or code:
            user = inline
        elif closed:
            user = (
                f"Document is as follows. {document} Question: {instruction} \nPlease directly "
                "give answer without any additional output or explanation\n Answer: "
            )
        else:
            user = (
                f"Document is as follows. {document} Instruction: {instruction} {length} Output: "
            )
        return LevalPrompt(
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}]
        )

    if family == "claude":
        if gsm or code:
            message = system + inline
        elif closed:
            message = (
                system + "Document is as follows. {document} \nQuestion: {inst}  \nPlease directly "
                "give answer without any additonal output or explanation \nAnswer:"
            )
        else:
            message = system + "Document is as follows. {document} Instruction: {inst} \n" + length
        text = _formatted(message, document, instruction)
        return LevalPrompt(text=f"{HUMAN} {text} {ASSISTANT}")

    if family == "llama2-chat":
        head = "[INST]<<SYS>>\n" + system + "\n<</SYS>>\n\n"
        if gsm or code:
            message = head + inline  # no [/INST]
        elif topic:
            message = head + inline + "[/INST]"
        elif closed:
            message = (
                head + "Document is as follows. {document} \nQuestion: {inst}.  Please directly "
                "give the answer without any additional output or explanation [/INST]\nAnswer:"
            )
        else:
            message = head + "Document is as follows. {document} Instruction: {inst} \n"
            message += length + "[/INST]"
    elif family == "chatglm2":
        if gsm or code:
            message = HUMAN_HEADER + system + inline
        elif closed:
            message = HUMAN_HEADER + system + with_question + " \nAnswer:"
        else:
            message = HUMAN_HEADER + system + "Document is as follows. {document} Instruction: "
            message += "{inst} \n" + length
    elif family == "xgen":
        human = HUMAN_HEADER + " ### Human: " + system
        if gsm or code:
            message = system + inline
        elif topic:
            message = human + inline + " \n### Assistant:"
        elif closed:
            message = human + with_question + "\nAnswer:"
        else:
            message = human + "Document is as follows. {document} Instruction: {inst} \n"
            message += length + " \n### Assistant:"
    elif family in ("longchat", "vicuna"):
        user = USER_HEADER + " USER: " + system
        if gsm or code:
            message = system + inline
        elif topic:
            message = user + inline + " \nASSISTANT: "
        elif closed:
            message = user + with_question + " \nAnswer:"
        elif coursera:  # only outside exam_eval
            message = user + "Document is as follows. {document} Question: {inst} "
            message += "\n Please only give the correct options (e.g., A). \nASSISTANT: "
        else:
            message = user + "Document is as follows. {document} \nInstruction: {inst} "
            message += length + "  \nASSISTANT: "
            if family == "vicuna":
                message += "My english answer is:"
    else:  # mpt
        if gsm or topic or code:
            message = system + inline
        elif not closed and not llm_metric:  # ngram_eval
            message = system + with_question + length + " "
        else:
            message = system + with_question
        return LevalPrompt(text=_formatted(message, document, instruction) + "\nThe answer is: ")
    return LevalPrompt(text=_formatted(message, document, instruction))


def fact_question(family: str, instruction: str) -> str:
    """sci_fi's second question: about the real world, no document."""
    question = instruction.replace(WORLD, REAL_WORLD)
    if _family(family) == "turbo16k":
        return (
            question + "\nPlease directly give answer without any additional output or "
            "explanation \nAnswer:"
        )
    if family == "llama2-chat":
        return (
            question
            + "Please directly answer without any additional output or explanation. \nAnswer:"
        )
    return question + "\nAnswer:"


def leval_calls(
    family: str,
    task: str,
    document: str,
    instruction: str,
    reference: str,
    *,
    closed: bool,
    llm_metric: bool = False,
) -> list[LevalPrompt]:
    """Every request the script makes for one question, in order: the one of
    `leval_prompt`, and for sci_fi the fact question (turbo16k: the first
    call's messages, not its answer, then the question as a user message;
    claude: in its Human/Assistant frame; the others: the bare text). No
    request depends on an earlier answer."""
    first = leval_prompt(
        family, task, document, instruction, reference, closed=closed, llm_metric=llm_metric
    )
    if "sci_fi" not in _name(task, llm_metric):
        return [first]
    question = fact_question(family, instruction)
    if first.messages is not None:
        history = [dict(message) for message in first.messages]
        fact = LevalPrompt(messages=[*history, {"role": "user", "content": question}])
    elif family == "claude":
        fact = LevalPrompt(text=f"{HUMAN} {question} {ASSISTANT}")
    else:
        fact = LevalPrompt(text=question)
    return [first, fact]


def sci_fi_prediction(answer: str, fact_answer: str) -> str:
    """The prediction the scripts save for a sci_fi question (what L-Eval's
    sci_fi scoring splits at "[fact:"); each answer as the family's script
    cleaned it."""
    return f"{answer} [fact: {fact_answer}]"

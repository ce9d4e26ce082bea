"""The paper's crowd-study texts (ELITR-Bench, Appendix C and Fig. 3), used as
the defaults of a new study."""

RUBRIC_TITLE = "How well does the answer (A) to a question (Q) align with the correct answer (CA)?"

RUBRIC = """Does the answer to evaluate (A) correctly address the given question (Q) based on the elements provided by the correct answer (CA)? The answer to evaluate should include the elements of the correct answer and should also avoid adding unnecessary elements or being too verbose.

Score 1: The response to evaluate is incorrect and misses all the elements of the reference answer.
Score 2: The response to evaluate indicates insufficient knowledge to answer the question even though the reference answer states otherwise.
Score 3-4: The response to evaluate contains some elements vaguely related to the reference answer.
Score 5-6: The response to evaluate is partially correct and/or covers only a part of the reference answer.
Score 7-8: The response to evaluate contains most of the reference answer but delivers it in an indirect and/or overly verbose way.
Score 9: The response to evaluate includes the reference answer but it is more verbose and adds unnecessary elements.
Score 10: The response to evaluate is essentially equivalent to the reference answer."""  # noqa: E501

GUIDELINES = """You will read questions about a work meeting, each with its correct answer (CA) and an answer (A) written by an AI assistant that read the meeting transcript. For each, rate from 1 to 10 how well the answer (A) matches the correct answer (CA), following the scoring rubric.

Judge only against the correct answer: you do not need the meeting itself, and details that the correct answer does not mention are no advantage. Names look like [PERSON4] because the meeting was de-identified.

Use the keys 1-9 and 0 (for 10) to rate, Enter or the arrow to go on; the Back button revisits an item. Every rating is saved as soon as you give it: you can reload the page or come back later from the same Prolific link and continue where you were."""  # noqa: E501

EXAMPLE = {
    "question": "What is the problem with the scientific committee?",
    "correct_answer": "Organizers do not have so many connections with experts in summarization.",
    "answer": "Based on the conversation, it appears that the main problem with the scientific "
    "committee is that they have difficulty finding qualified individuals to be a part of it. "
    "Specifically, they have reached out to several prominent professors in the summarization "
    "field, but they have declined due to being busy.",
    "note": "This answer contains most of the correct answer (too few connections with experts) "
    "but delivers it indirectly and with extra details: a 7 or an 8.",
}

SCALE_LOW = "Does not correspond at all"
SCALE_HIGH = "Perfect match"

# Attention checks: the answer is obviously right or obviously wrong, worded like
# the meeting questions so that they look like any other item. Expected ranges are
# on the common 1-10 scale (a 1-5 rating is mapped onto it first).
ATTENTION_CHECKS = (
    {
        "question": "Who offered to send the summary of the meeting to everyone?",
        "correct_answer": "[PERSON2] offered to send the summary.",
        "answer": "[PERSON2] offered to send the summary of the meeting to everyone.",
        "expected_min": 9,
        "expected_max": 10,
    },
    {
        "question": "When is the next meeting planned?",
        "correct_answer": "Next Tuesday at 10 am.",
        "answer": "The participants talked about the weather and did not mention any "
        "meeting or any date.",
        "expected_min": 1,
        "expected_max": 2,
    },
)

# An example qualification round (Study.practice_items): rated before the real
# items, with the expected range (on the study's scale) and feedback shown after.
PRACTICE_ITEMS = [
    {
        "question": "What is the problem with the scientific committee?",
        "correct_answer": "Organizers do not have so many connections with experts in "
        "summarization.",
        "answer": EXAMPLE["answer"],
        "expected_min": 6,
        "expected_max": 9,
        "feedback": EXAMPLE["note"],
    },
    {
        "question": "How many people will review each paper?",
        "correct_answer": "Three reviewers per paper.",
        "answer": "Each paper will be reviewed by three people.",
        "expected_min": 9,
        "expected_max": 10,
        "feedback": "The answer says exactly what the correct answer says: a 10 (or a 9).",
    },
    {
        "question": "Who will prepare the budget?",
        "correct_answer": "[PERSON5] will prepare the budget.",
        "answer": "I cannot find this information in the meeting.",
        "expected_min": 1,
        "expected_max": 2,
        "feedback": "The answer claims not to know although the correct answer gives a name: "
        "a 2 (rubric: insufficient knowledge).",
    },
]

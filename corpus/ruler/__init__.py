"""RULER (Hsieh et al., 2024; NVIDIA/RULER, Apache 2.0): synthetic long-context
tasks made at the lengths a researcher chooses, as its authors' scripts make
them. Ported from `scripts/data/` at c3f5e3b so that, given the same seed and
tokenizer, the records are byte-equal to the authors' (tests/corpus/
test_ruler_generator.py runs a copy of their scripts beside these).

- `constants`: the task templates (`synthetic/constants.py`) and the tasks'
  settings (`synthetic.yaml`), for the tasks made here;
- `niah`, `variable_tracking`, `freq_words`: the three task scripts;
- `tokens`: the tokenizers RULER counts with (a Hugging Face folder, a
  tiktoken encoding);
- `prepare`: `prepare.py`: a task at a length, and the data folder
  `<length>/data/<task>/validation.jsonl` that run.sh writes and the `ruler`
  format plug-in (corpus.importers.formats.ruler) reads.

Made here: the tasks that need no download (niah_single_1, niah_multikey_2,
niah_multikey_3, vt, fwe). The essay haystacks (Paul Graham's essays, split
by NLTK's Punkt model), the common-words list and the QA tasks' SQuAD and
HotpotQA need the authors' downloads; files the authors' scripts made with
them import all the same.
"""

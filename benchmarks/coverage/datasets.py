"""The coverage harness's library of datasets: the populations every interval
and decision Concord reports is replayed on.

A dataset is a finite pool of rated items, taken as the population:

- `system[i]`, `cluster[i]`: item i's system and cluster (a meeting, an
  article, a question), as codes into `systems` and `clusters`;
- `judge[i]`: the judge's score (the one PPI and the adaptive study lean on),
  `second[i]`: a second judge's (the disagreement that selection weighs);
- `raters[i, r]`: rater r's score of item i (NaN where r did not rate it):
  a human label is one rater's score, drawn at random among the item's
  raters; `expected[i]` is their mean (the truth for studies that draw
  raters);
- `gold[i]`: the reference's fixed score (the truth for studies that read
  one fixed label per item: the paper's gold annotator, a mean of experts);
- `scale`: the scores' bounds;
- `question[i]`: the question item i answers, where several systems answer
  the same questions (the rankings compare systems on one question): given
  for the real data, else the item's place among its system's items in its
  cluster (the simulations' k-th item of every system in a cluster answers
  one question).

Real data: the paper's test2 single-turn responses (`../shared`, always
there), and, when the folder of `nitaytech/AltTest` is given (it has no
licence: fetched, never committed), SummEval's four aspects and MT-bench.
Simulated populations vary what breaks intervals: noisy crowds, 10-30%
spammers, biased and constant judges, skewed, heavy-tailed and discrete
scores, few clusters.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
PAPER_DATA = REPO.parent / "shared" / "datasets" / "elitr-bench"
PAPER_SYSTEMS = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")


@dataclass
class Dataset:
    name: str
    description: str
    systems: list[str]
    clusters: list[str]
    system: np.ndarray
    cluster: np.ndarray
    judge: np.ndarray
    second: np.ndarray
    gold: np.ndarray
    raters: np.ndarray
    scale: tuple[float, float]
    real: bool
    # what it is made to test, in a few words (the table's column)
    stresses: str = ""
    extra: dict = field(default_factory=dict)
    question: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.system)
        if self.question is None:
            place = np.zeros(n, int)
            for key in {(s, c) for s, c in zip(self.system, self.cluster, strict=True)}:
                rows = np.flatnonzero((self.system == key[0]) & (self.cluster == key[1]))
                place[rows] = np.arange(len(rows))
            self.question = self.cluster * (place.max() + 1) + place
        for name in ("cluster", "judge", "second", "gold"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{self.name}: {name} has {len(getattr(self, name))} of {n}")
        if self.raters.shape[0] != n or not (np.isfinite(self.raters).sum(axis=1) >= 1).all():
            raise ValueError(f"{self.name}: every item needs one rater's score or more")
        self.expected = np.nanmean(self.raters, axis=1)
        self._rated = [np.flatnonzero(np.isfinite(row)) for row in self.raters]

    @property
    def size(self) -> int:
        return len(self.system)

    def items_of(self, s: int) -> np.ndarray:
        return np.flatnonzero(self.system == s)

    def label(self, items: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One human label per item: the score of one of its raters, at random."""
        items = np.asarray(items)
        counts = np.isfinite(self.raters[items]).sum(axis=1)
        pick = (rng.random(len(items)) * counts).astype(int)
        # the pick-th finite entry of each row
        order = np.argsort(~np.isfinite(self.raters[items]), axis=1, kind="stable")
        return self.raters[items, order[np.arange(len(items)), pick]]

    def truth(self, values: np.ndarray | None = None) -> np.ndarray:
        """Per system, the pool's mean of `values` (default: the expected label)."""
        values = self.expected if values is None else values
        return np.array([values[self.system == s].mean() for s in range(len(self.systems))])


# --- real data ------------------------------------------------------------------------------


def paper(data: Path = PAPER_DATA, crowd: bool = False) -> Dataset:
    """The paper's 390 test2 single-turn responses: gold-human-eval, GPT-4 as
    the judge, Prometheus as the second. With `crowd`, a human label is the
    gold score plus one of the 390 real silver-minus-gold differences (a crowd
    rater as the benchmark of the adaptive study simulates one), on 1-10."""
    from corpus.importers.elitr_bench import parse_elitr_bench

    bundle = parse_elitr_bench(data, versions=["qa"], languages=["en"], with_responses=True)
    rows = [
        r
        for r in bundle.responses
        if r.split == "test2" and r.mode == "st" and r.system in PAPER_SYSTEMS
    ]
    if len(rows) != 390:
        raise ValueError(f"expected the paper's 390 test2 responses, found {len(rows)}")
    score = {
        name: np.array([r.scores[name] for r in rows], float)
        for name in ("gold-human-eval", "silver-human-eval", "gpt-4-eval", "prometheus-eval")
    }
    meetings = sorted({r.meeting_id for r in rows})
    gold = score["gold-human-eval"]
    if crowd:
        residuals = score["silver-human-eval"] - gold
        raters = np.clip(gold[:, None] + residuals[None, :], 1, 10)
    else:
        raters = gold[:, None].copy()
    return Dataset(
        name="paper-crowd" if crowd else "paper-gold",
        description="ELITR-Bench test2 st, 3 systems x 130, 8 meetings; judge gpt-4-eval, "
        "second prometheus-eval; "
        + ("crowd: gold + a silver-minus-gold difference" if crowd else "labels: the gold"),
        systems=list(PAPER_SYSTEMS),
        clusters=meetings,
        system=np.array([PAPER_SYSTEMS.index(r.system) for r in rows]),
        cluster=np.array([meetings.index(r.meeting_id) for r in rows]),
        judge=score["gpt-4-eval"],
        second=score["prometheus-eval"],
        gold=gold,
        raters=raters,
        scale=(1.0, 10.0),
        real=True,
        stresses="the paper's data" + (", crowd noise" if crowd else ""),
        # each answer's length in characters, for the length-controlled rankings
        extra=({"gold_as": "paper-gold"} if crowd else {})
        | {"length": np.array([len(r.text) for r in rows], float)},
        question=np.unique([f"{r.meeting_id}/{r.question_id}" for r in rows], return_inverse=True)[
            1
        ],
    )


SUMMEVAL_ASPECTS = ("coherence", "consistency", "fluency", "relevance")


def summeval(folder: Path, aspect: str, judge: str = "gpt-4o", second: str = "llama-31") -> Dataset:
    """SummEval as AltTest publishes it (data/summeval): 1,600 summaries of 100
    articles by 16 systems, three experts, 1-5; gold is the experts' mean."""
    humans = json.loads((folder / "summeval" / "human_annotations.json").read_text())
    llms = json.loads((folder / "summeval" / "llm_annotations.json").read_text())
    suffix = f"__{aspect}"
    keys = sorted(k[: -len(suffix)] for k in humans["e0"] if k.endswith(suffix))
    experts = sorted(humans)
    raters = np.array([[humans[e].get(k + suffix, np.nan) for e in experts] for k in keys], float)
    articles = sorted({k.split("__")[0] for k in keys})
    models = sorted({k.split("__")[1] for k in keys})
    return Dataset(
        name=f"summeval-{aspect}",
        description=f"SummEval {aspect} (AltTest): 16 systems x 100 articles, 3 experts, 1-5; "
        f"judge {judge}, second {second}",
        systems=models,
        clusters=articles,
        system=np.array([models.index(k.split("__")[1]) for k in keys]),
        cluster=np.array([articles.index(k.split("__")[0]) for k in keys]),
        judge=np.array([llms[judge][k + suffix] for k in keys], float),
        second=np.array([llms[second][k + suffix] for k in keys], float),
        gold=np.nanmean(raters, axis=1),
        raters=raters,
        scale=(1.0, 5.0),
        real=True,
        stresses="judges sharing errors, 16 systems",
        question=np.array([articles.index(k.split("__")[0]) for k in keys]),
    )


def mtbench(folder: Path, judge: str = "gpt-4o", second: str = "llama-31") -> Dataset:
    """MT-bench's pairwise verdicts as AltTest publishes them (data/mtbench),
    read per system: each verdict gives each of its two answers a score, 1 for
    a win, 0.5 a tie, 0 a loss (a system's mean is its win rate). Items are
    the pairs the humans judged; clusters are questions."""
    humans = json.loads((folder / "mtbench" / "human_annotations.json").read_text())
    llms = json.loads((folder / "mtbench" / "llm_annotations.json").read_text())
    pairs = sorted(set().union(*(set(v) for v in humans.values())) & set(llms[judge]))
    win = {"model_a": (1.0, 0.0), "model_b": (0.0, 1.0), "tie": (0.5, 0.5)}
    names = sorted(humans)
    rows: list[tuple[str, str, int]] = []  # (pair, model, side)
    for pair in pairs:
        _, a, b, _ = pair.split("__")
        rows += [(pair, a, 0), (pair, b, 1)]
    models = sorted({m for _, m, _ in rows})
    questions = sorted({p.split("__")[0] for p, _, _ in rows})

    def score(verdict: str | None, side: int) -> float:
        return np.nan if verdict not in win else win[verdict][side]

    raters = np.array([[score(humans[h].get(p), s) for h in names] for p, _, s in rows], float)
    return Dataset(
        name="mtbench",
        description=f"MT-bench pairwise (AltTest): {len(pairs)} pairs of 6 systems, "
        f"{len(names)} humans, win = 1, tie = 0.5; judge {judge}, second {second}",
        systems=models,
        clusters=questions,
        system=np.array([models.index(m) for _, m, _ in rows]),
        cluster=np.array([questions.index(p.split("__")[0]) for p, _, _ in rows]),
        judge=np.array([score(llms[judge][p], s) for p, _, s in rows], float),
        second=np.array([score(llms[second][p], s) for p, _, s in rows], float),
        gold=np.nanmean(raters, axis=1),
        raters=raters,
        scale=(0.0, 1.0),
        real=True,
        stresses="three-valued scores, few items per system",
        question=np.array([pairs.index(p) for p, _, _ in rows]),
    )


# --- simulated populations --------------------------------------------------------------------


@dataclass(frozen=True)
class Simulation:
    """A population: latent quality q = system mean + cluster effect + item
    noise; raters score q plus their bias and noise (spammers: uniformly at
    random); the judge a + b q plus noise, part of it shared with the second
    judge; scores rounded when `discrete`, always on the scale."""

    name: str
    stresses: str
    system_means: tuple[float, ...] = (4.5, 5.5, 6.0, 7.0)
    clusters: int = 20
    per_cluster: int = 6  # items per system and cluster
    cluster_sd: float = 0.7
    item_sd: float = 1.8
    raters: int = 12
    rater_sd: float = 1.2
    rater_bias_sd: float = 0.4
    spammers: float = 0.0
    judge_bias: float = 0.0
    judge_slope: float = 1.0
    judge_sd: float = 1.0
    shared_sd: float = 0.0  # error the two judges share
    constant_judge: float | None = None
    heavy_tails: bool = False  # Student-t (2 df) noise instead of normal
    skew: bool = False  # quality piled up near the top of the scale
    discrete: bool = True
    scale: tuple[float, float] = (1.0, 10.0)
    seed: int = 0

    def build(self) -> Dataset:
        rng = np.random.default_rng(self.seed)
        lo, hi = self.scale
        systems = len(self.system_means)
        per_system = self.clusters * self.per_cluster
        system = np.repeat(np.arange(systems), per_system)
        cluster = np.tile(np.repeat(np.arange(self.clusters), self.per_cluster), systems)
        n = len(system)

        def noise(sd: float, shape: tuple[int, ...] | int) -> np.ndarray:
            if self.heavy_tails:
                return sd * rng.standard_t(2, shape) / np.sqrt(2)  # t2: infinite variance
            return rng.normal(0, sd, shape)

        effect = rng.normal(0, self.cluster_sd, self.clusters)
        quality = np.array(self.system_means)[system] + effect[cluster] + noise(self.item_sd, n)
        if self.skew:
            # most answers near the top, a long tail of failures: the distance from
            # the top is lognormal, its median growing with the system's number
            median = 1.0 + 0.3 * np.arange(systems)
            quality = hi - median[system] * np.exp(effect[cluster] / 2 + noise(1.0, n))

        def finish(values: np.ndarray) -> np.ndarray:
            values = np.clip(values, lo, hi)
            return np.round(values) if self.discrete else values

        bias = rng.normal(0, self.rater_bias_sd, self.raters)
        raters = finish(quality[:, None] + bias[None, :] + noise(self.rater_sd, (n, self.raters)))
        # a spammer is a rater: the same raters score every item at random
        spammer = np.arange(self.raters) < round(self.spammers * self.raters)
        spam = np.broadcast_to(spammer[None, :], (n, self.raters))
        uniform = rng.uniform(lo, hi, (n, self.raters))
        raters = np.where(spam, finish(uniform), raters)
        shared = noise(self.shared_sd, n) if self.shared_sd else np.zeros(n)
        if self.constant_judge is not None:
            judge = np.full(n, float(self.constant_judge))
        else:
            judge = finish(
                self.judge_bias + self.judge_slope * quality + shared + noise(self.judge_sd, n)
            )
        second = finish(quality + shared + noise(self.judge_sd * 1.2, n))
        # gold: one careful rater (no spam, half the noise)
        gold = finish(quality + noise(self.rater_sd / 2, n))
        return Dataset(
            name=self.name,
            description=self.stresses,
            systems=[f"S{s}" for s in range(systems)],
            clusters=[f"C{c}" for c in range(self.clusters)],
            system=system,
            cluster=cluster,
            judge=judge,
            second=second,
            gold=gold,
            raters=raters,
            scale=self.scale,
            real=False,
            stresses=self.stresses,
        )


SIMULATIONS = (
    Simulation("sim-noisy-crowd", "crowd noise 2.5 points, a judge of noise 1", rater_sd=2.5),
    Simulation("sim-spammers-10", "10% spammers among 20 raters", spammers=0.1, raters=20),
    Simulation("sim-spammers-30", "30% spammers among 20 raters", spammers=0.3, raters=20),
    Simulation(
        "sim-biased-judge",
        "a judge 1.5 points too generous, sharing its error with the second",
        judge_bias=1.5,
        judge_slope=0.7,
        shared_sd=1.0,
        judge_sd=0.6,
    ),
    Simulation("sim-constant-judge", "a judge that gives 8 everywhere", constant_judge=8.0),
    Simulation("sim-skewed", "skewed: most scores 9-10, a long tail of failures", skew=True),
    Simulation(
        "sim-heavy-tailed",
        "heavy tails: Student-t (2 df) noise everywhere, continuous scores",
        heavy_tails=True,
        discrete=False,
    ),
    Simulation(
        "sim-few-clusters",
        "4 clusters with strong cluster effects",
        clusters=4,
        per_cluster=30,
        cluster_sd=1.5,
    ),
)


def library(
    alttest: Path | None = None, *, small: bool = False
) -> list[tuple[str, Callable[[], Dataset]]]:
    """The harness's datasets as (name, loader) pairs (each is built when
    used). `small`: the CI mode's subset (the paper and three simulated
    populations)."""
    loaders: list[tuple[str, Callable[[], Dataset]]] = [
        ("paper-gold", paper),
        ("paper-crowd", lambda: paper(crowd=True)),
    ]
    sims = SIMULATIONS
    if small:
        sims = tuple(
            s
            for s in SIMULATIONS
            if s.name in ("sim-spammers-30", "sim-biased-judge", "sim-skewed")
        )
    loaders += [(s.name, s.build) for s in sims]
    if alttest is not None and not small:
        loaders += [(f"summeval-{a}", lambda a=a: summeval(alttest, a)) for a in SUMMEVAL_ASPECTS]
        loaders += [("mtbench", lambda: mtbench(alttest))]
    return loaders

"""A judge panel's rules, by name, in words: the one list the console's
form, the API's check (judging.panels) and the statistics
(analysis.statistics.panels) read. No import here: the web server loads it
at start-up."""

RULES = ("mean", "median", "majority", "learned")
# a panel of pairwise judges: its members' verdicts are categories
PAIRWISE_RULES = ("majority",)
RULE_TEXT = {
    "mean": "the mean of the members' scores",
    "median": "the median of the members' scores",
    "majority": "the score most members gave (rounded to whole points; the median where "
    "no score has the most votes)",
    "learned": "weights learned on the human-labelled responses (least squares, weights "
    "at least 0, cross-fitted by meeting)",
}
PAIRWISE_RULE_TEXT = {
    "majority": "in each presentation order, the verdict most members gave (each member's "
    "own over its seeds first); a tie where no verdict has the most votes",
}

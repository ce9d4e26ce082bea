"""The statistics the reports and the study plans compute with: rater
agreement and correlations (stats, icc), the meeting-clustered bootstrap,
prediction-powered inference (ppi), anytime-valid intervals (anytime), the
alternative annotator test (alt_test), judge diagnostics, score distributions
and pairwise win rates (pairwise, human_pairwise).

Import each module by its path (analysis.statistics.ppi); this package
re-exports nothing, so that importing one statistic loads no other."""

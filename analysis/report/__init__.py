"""The agreement report, from a selection to a file: what it covers
(selection, scope, the builder form), the score table it reads (scores), how
it is built (build, with gold_parts, trust and verdicts) and typed
(report_types), cached (caching), rendered and exported (render, exports,
links); and the other reports: a benchmark's in its authors' shape
(benchmark_report, benchmark_exports) and a sweep's grid (sweeps).

Import each module by its path (analysis.report.build); this package
re-exports nothing, so that reading a selection does not load pandas."""

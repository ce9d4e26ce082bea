"""The report's figures: what each one shows, as plain data (figure_types),
described from a report or a study's raters (plots), and drawn as PNG or SVG
with matplotlib's object API (drawing).

Import each module by its path (analysis.figures.plots); this package
re-exports nothing, so that describing a figure does not load matplotlib."""

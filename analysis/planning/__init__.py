"""Planning the human ratings: how many gold ratings a report's systems need
(planner, the report's budget section), the plan and design of a human study
before anything is spent (study_plan), and picking the responses humans rate
next, as a new study (items_for_humans).

Import each module by its path (analysis.planning.study_plan); this package
re-exports nothing."""

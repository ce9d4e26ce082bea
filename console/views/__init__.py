"""The researcher console: pages that read, and thin POST views that call the
same services as the admin and the API (judging.judging_runs, generation.runner,
annotator.actions) and answer with the new state.

A POST from htmx (the `HX-Request` header) answers the fragment it replaces,
with what the action did; a plain POST (no JavaScript) redirects back to the
page with the same words as a message.

One module per part of the console: `home` (the start page and the
console's home), `runs` (run pages, starting runs, the workers that run
them), `studies` (study monitors and their actions on participants),
`documents` (the transcripts with their questions); `common` holds the
access check they share.
"""

"""The pages: what the book shows, drawn from the study's data (:mod:`ftcl_core.study`) and the library's run
folders.  Figures take records and titles as arguments: one run's course (:mod:`.run_figures`), results across runs
(:mod:`.result_figures`), the method's diagrams (:mod:`.diagrams`), all held to the column by :mod:`.legibility`;
chapter 7's HTML tables (:mod:`.tables`),
the findings' phase diagram (:mod:`.findings`).  Importing them never loads the training loop."""

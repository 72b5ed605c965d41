"""The pages: what the book shows, drawn from the study's data (:mod:`ftcl_core.study`) and the library's run
folders.  Figures take records and titles as arguments (:mod:`.plotting`), chapter 7's HTML tables (:mod:`.tables`),
the findings' phase diagram (:mod:`.findings`).  Importing them never loads the training loop."""

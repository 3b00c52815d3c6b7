"""Running and recording: results folders (:mod:`.results`, the one reader and writer), the experiments of
the command line (:mod:`.experiments`), the staged pipeline (:mod:`.pipeline`) and its stages
(:mod:`.stages`, ``python -m attention_paths reproduce``), and the claim records of the chapters
(:mod:`.claims`)."""

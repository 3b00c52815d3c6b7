"""Running and recording: results folders (:mod:`.results`, the one reader and writer), the experiments and
commands of the command line, each one declared record (:mod:`.registry`), run and read back by
:mod:`.experiments`, one writer per folder (:mod:`.lock`), the staged pipeline (:mod:`.pipeline`) and its
stages (:mod:`.stages`, ``python -m attention_paths reproduce``), and the claim records of the chapters
(:mod:`.claims`)."""

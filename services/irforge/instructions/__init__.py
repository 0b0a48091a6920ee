"""Instruction-following evaluation (InfoSearch, FollowIR, InstructIR): collections read in their
own layouts, every mode of a query retrieved over the full corpus, and the metrics that read a
gold document's ranks and scores across the modes (p-MRR, WISE, SICR, Robustness@k).

- `collection.py`: the layouts, told apart by their files; `open_instruction_collections`.
- `metrics.py`: the metrics, per query, on irforge's one tie rule.
- `scifact_build.py`: a real collection built from BEIR SciFact without an LLM (files written by
  `scifact_writer.py`; command `irforge build-instructions`).
"""

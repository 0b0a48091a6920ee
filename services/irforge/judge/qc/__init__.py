"""AIR-Bench quality control (`irforge qc`): recall, re-rank, pre-label by majority vote, ask the
judge about labelled positives, generated hard negatives and unlabelled pre-labelled positives,
and write the corrected BEIR dataset with one audit record per decision.

prelabel.py (votes), decisions.py (cases and actions), hard_negatives.py (the input file),
rerankers.py (the scorers behind --reranker), writer.py (the staged output), job.py (the job).
"""

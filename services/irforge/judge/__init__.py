"""The judge service: graded relevance labels for (query, document) pairs, stored with provenance.

base.py holds the contract every part shares; backends/ the LLM and embedded judges; store.py the
SQLite judgement store; core.py the transport-free service; holes.py, calibration.py and qc.py
the commands built on it.
"""

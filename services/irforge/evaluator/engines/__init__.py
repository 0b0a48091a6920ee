"""Engines compute measures; evaluator/measures.py only declares them."""

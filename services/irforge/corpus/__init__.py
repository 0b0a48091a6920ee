"""Corpus service: lexical (BM25) indexes of BEIR corpora behind one backend interface."""

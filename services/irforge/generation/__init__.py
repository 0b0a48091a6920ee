"""`irforge generate`: test collections written by an LLM (AIR-Bench QA and Long-Doc, InfoSearch
instruction sets). engine.py sends every call (one chat caller, irforge.llm.chat), cache.py keeps
every answer, recipes/ say what to ask, output.py writes the collection with its manifest."""

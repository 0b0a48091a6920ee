"""Team endpoints: embeddings, search and rerank APIs that irforge calls and evaluates."""

"""irforge-client: call irforge's services, or serve your own retriever for irforge to evaluate.

    from irforge_client import EvaluatorClient, CorpusClient, OrchestratorClient, serve_retriever
"""

from irforge_client._channel import Tls, request_id
from irforge_client.corpus import CorpusClient, Hit
from irforge_client.evaluator import Evaluation, EvaluatorClient
from irforge_client.orchestrator import Job, JobError, JobEvent, OrchestratorClient
from irforge_client.retriever import RetrieverServer, serve_retriever

__version__ = "0.1.0"
__all__ = ["CorpusClient", "Evaluation", "EvaluatorClient", "Hit", "Job", "JobError", "JobEvent", "OrchestratorClient",
           "RetrieverServer", "Tls", "request_id", "serve_retriever"]

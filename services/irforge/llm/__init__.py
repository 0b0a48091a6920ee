"""The one way irforge talks to an OpenAI-compatible chat LLM (chat.ChatEndpoint): the judge and
generation both call through it."""

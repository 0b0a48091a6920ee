"""Service logs: one JSON object per line (for log collectors) or readable text (for a terminal),
each line carrying the service, the request id and the job id it was written for.

    configure_logging("json", service="corpus")   # what `irforge service corpus --log-format json` does

JSON keys: time (UTC, ISO 8601), level, logger, message, service, request_id, job_id, any `extra=`
fields of the call, and exc_info (the formatted traceback) when there is one.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import datetime, timezone

from irforge.common import request_context
from irforge.common.redact import redact_text

LOG_FORMATS = ("json", "text")

# Attributes every LogRecord has; anything else on a record came from `extra=` and is logged.
_RECORD_ATTRIBUTES = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}
_CONTEXT_FIELDS = ("service", "request_id", "job_id")
# Defence in depth: irforge never passes secrets to a logger, but an `extra=` field with a
# secret-sounding name is masked rather than trusted.
_SECRET_KEY = re.compile(r"authorization|api[_-]?key|password|passwd|secret|cookie|bearer|(^|_)token$", re.IGNORECASE)
REDACTED = "[redacted]"
# Client libraries that log every HTTP request at INFO (URLs, per-request noise): warnings only.
_CHATTY_LOGGERS = ("httpx", "httpcore", "elastic_transport", "urllib3")


class ContextFilter(logging.Filter):
    """Stamps service, request_id and job_id on every record passing the handler."""

    def __init__(self, service: str | None = None):
        super().__init__()
        self.service = service

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "service", None) is None:
            record.service = self.service
        if getattr(record, "request_id", None) is None:
            record.request_id = request_context.current_request_id()
        if getattr(record, "job_id", None) is None:
            record.job_id = request_context.current_job_id()
        return True


class RedactFilter(logging.Filter):
    """Masks credentials in every URL of a record's message and traceback (a library's error may
    quote the URL it called, user:password and ?api_key= included). Rewrites the record, so
    every handler after this one sees it redacted too."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "://" in message:
            record.msg, record.args = redact_text(message), None
        for key, value in vars(record).items():   # `extra=` fields: JSON logs write them out
            if key not in _RECORD_ATTRIBUTES and isinstance(value, str) and "://" in value:
                setattr(record, key, redact_text(value))
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in _CONTEXT_FIELDS:
            entry[field] = getattr(record, field, None)
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and key not in entry:
                entry[key] = REDACTED if _SECRET_KEY.search(key) else value
        if record.exc_info:
            entry["exc_info"] = record.exc_text or self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(service)s request=%(request_id)s job=%(job_id)s] %(message)s"


def default_log_format(stream=None) -> str:
    """text on a terminal (a person reads it), json otherwise (a container's log collector does)."""
    stream = stream if stream is not None else sys.stderr
    return "text" if getattr(stream, "isatty", lambda: False)() else "json"


def make_handler(log_format: str, service: str | None = None, stream=None) -> logging.Handler:
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, got {log_format!r}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.addFilter(ContextFilter(service))
    handler.addFilter(RedactFilter())
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    return handler


def configure_logging(log_format: str | None = None, service: str | None = None, level: int = logging.INFO,
                      stream=None) -> logging.Handler:
    """Send the root logger's records (level and above) to stderr in `log_format` (None: the
    default for the stream). Replaces handlers an earlier call installed; returns the handler."""
    handler = make_handler(log_format or default_log_format(stream), service, stream)
    handler._irforge = True  # marks handlers this function owns, so a second call replaces them
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_irforge", False)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in _CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    return handler

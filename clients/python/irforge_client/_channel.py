"""Channel settings shared with the servers (large messages travel in chunks below this cap)."""

from __future__ import annotations

import grpc

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
OPTIONS = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES), ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]


def channel(address: str) -> grpc.Channel:
    return grpc.insecure_channel(address, options=OPTIONS)

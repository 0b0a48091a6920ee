"""Pieces every service shares: gRPC server setup, atomic files, versions, settings."""

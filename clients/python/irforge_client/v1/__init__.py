"""Generated from protos/irforge/v1 by tools/gen_protos.py. Do not edit."""

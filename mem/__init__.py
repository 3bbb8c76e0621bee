"""mem: keep an AI coding agent's long-term memory in plain files."""

__version__ = "0.1.0"

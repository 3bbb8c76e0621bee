"""The model backends, one small module each, and their names.

``anthropic``, ``openai``, ``claude_code``; ``bedrock`` and ``vertex`` (the anthropic one with
the SDK's Bedrock and Vertex clients); the configuration readers ``claude_settings`` (Claude
Code's) and ``qwen`` (qwen-code's). The interface every backend speaks and the types it shares
with the jobs (ModelConfig, ModelError, a reply's blocks) are in ``protocol``: this package's
own module stays light, because the recall hook loads it on every prompt to learn whether a
model is configured (jobs/credentials.py) and must not pay for the types then.

uses: core.paths lazily (find_claude walks PATH with paths.which)
"""

from __future__ import annotations

from collections.abc import Mapping

#: The backends by name, as --backend and MEM_BACKEND name them (detection tries them in ``credentials.DETECTION``'s order).
NAMES = ("bedrock", "vertex", "anthropic", "claude-settings", "openai", "claude-code")


def find_claude(env: Mapping[str, str]) -> str | None:
    """The ``claude`` executable on ``env``'s PATH, or None (the claude-code backend's one requirement;
    paths.which: a walk of PATH rather than shutil.which, which the recall hook would pay for on every prompt)."""
    from mem.core import paths

    return paths.which("claude", env)

"""What the tests keep out of every mem they run: the developer's own settings.

Example: clean = {k: v for k, v in os.environ.items() if not k.startswith(LEAKY_PREFIXES)}
"""

#: Variables from the developer's shell that would change how mem resolves or behaves.
LEAKY_PREFIXES = ("CLAUDE_", "ANTHROPIC_", "OPENAI_", "MEM_", "QWEN_", "CODEX_", "TEAM_MEMORY_", "GIT_", "AWS_",
                  "CLOUD_ML_", "GCE_", "GOOGLE_")

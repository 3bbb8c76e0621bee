"""The message model every transcript reader produces: a Message of Blocks, whichever client wrote it.

uses: core.record (mem/core/transcripts.py and mem/clients/* build these).
"""

from __future__ import annotations

from mem.core.record import Record


class Block(Record):
    type: str  # text | tool_use | tool_result | thinking | image | other
    text: str = ""
    name: str = ""  # tool name (tool_use, and tool_result when the client records it)
    input: dict = {}  # tool_use input (shared when empty: never mutated)
    id: str = ""  # tool_use id, or the id a tool_result answers
    is_error: bool = False


_NO_INPUT: dict = Block._field_defaults["input"]  # the shared empty input


class Message(Record):
    uuid: str | None
    role: str  # user | assistant | system
    blocks: list[Block]
    kind: str = "message"  # message | tool_result | command | compact_boundary | compact_summary | meta
    timestamp: str | None = None
    session_id: str | None = None
    message_id: str | None = None  # the API message id; Claude splits one across several lines
    usage: dict | None = None  # the API usage an assistant line carries
    line: int = 0  # 1-based line number in the file

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks if b.type == "text" and b.text)

    @property
    def is_human(self) -> bool:
        """A prompt a person typed (not a tool result, not meta, not a summary)."""
        return self.role == "user" and self.kind == "message" and any(b.type == "text" for b in self.blocks)

    def tool_uses(self) -> list[Block]:
        return [b for b in self.blocks if b.type == "tool_use"]


#: The keys of a tool call's input that name the file it reads or writes, in the one order every
#: reader asks them: ``file_path`` (Claude Code's Read, Write, Edit, MultiEdit; qwen-code's and
#: Gemini CLI's read_file, write_file, edit, replace), ``notebook_path`` (Claude Code's NotebookEdit),
#: ``absolute_path`` (read_file of earlier qwen-code and Gemini CLI releases), ``path`` (Codex's
#: view_image; the directory of a glob, grep or ls). Codex edits files through its shell tool,
#: whose command names none of them.
FILE_KEYS = ("file_path", "notebook_path", "absolute_path", "path")


def tool_file(tool_input: object) -> str | None:
    """The file a tool call names, as it names it (Gemini CLI's may be relative), else None."""
    if isinstance(tool_input, dict):
        for key in FILE_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def prompt_text(message: Message) -> str:
    """The prompt a person typed, from its message: the first text part (qwen-code appends hook
    context to the prompt as further parts)."""
    return next((b.text.strip() for b in message.blocks if b.type == "text"), "")

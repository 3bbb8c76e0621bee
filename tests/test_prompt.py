"""`mem prompt`: the instructions say what they must; the renderings; the SessionStart hook."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import FIXTURES, write_memory
from mem.core.memdir.store import MemoryDir
from mem import clients
from mem.core import prompt
from mem.core.jscompat import len16

ROOT = Path(__file__).resolve().parent.parent
HOOKS = FIXTURES / "hooks"


# --- what the instructions say -----------------------------------------------------


@pytest.fixture
def text(tmp_path):
    d = tmp_path / "memory"
    d.mkdir()
    return prompt.instructions(MemoryDir(str(d))), str(d) + "/"


def _section(text: str, title: str) -> str:
    m = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#+ |\Z)", text, re.S | re.M)
    assert m, f"no section {title!r}"
    return m.group(1)


def test_it_says_where_the_memory_is(text):
    t, d = text
    assert f"`{d}`" in t
    assert "already exists" in t
    assert f"`{d}MEMORY.md`" in t


def test_the_four_types_and_when_to_save_each(text):
    t, _ = text
    s = _section(t, "What to save")
    for kind in ("user", "feedback", "project", "reference"):
        assert f"- **{kind}** — " in s
    user = s.split("- **user**")[1].split("- **feedback**")[0]
    assert "role" in user and "Save it when" in user
    feedback = s.split("- **feedback**")[1].split("- **project**")[0]
    assert "corrections" in feedback and "confirmations" in feedback and "Save it when" in feedback
    assert "**Why:**" in feedback and "**How to apply:**" in feedback
    project = s.split("- **project**")[1].split("- **reference**")[0]
    assert "absolute dates" in project and "deadlines" in project and "**Why:**" in project
    reference = s.split("- **reference**")[1]
    assert "dashboards" in reference and "outside the repository" in reference


def test_what_not_to_save_even_when_asked(text):
    t, _ = text
    s = _section(t, "What not to save, even when asked")
    assert "repository already tells" in s and "git history" in s
    assert "bug was fixed" in s
    assert "current task" in s
    assert "CLAUDE.md" in s and "AGENTS.md" in s
    assert "Secrets" in s and "API keys" in s and "decline" in s
    assert "say briefly why" in s


def test_how_to_save_one_file_then_one_index_line(text):
    t, d = text
    s = _section(t, "How to save")
    assert "one memory per file" in s
    fm = re.search(r"^\s*---\n\s*name: .+\n\s*description: .+\n\s*type: user, feedback, project or reference\n\s*---$", s, re.M)
    assert fm, s
    assert "`- [Title](file.md) — one-line hook`" in s
    assert "150 characters" in s and "200" in s and "no frontmatter" in s and "never" in s
    assert "update it instead of adding a duplicate" in s
    assert s.index("1. Write") < s.index("2. Add one line")
    # the file-naming convention extract and remember use too
    from mem.core.jobs import guidance

    assert "lower-case kebab case (for example `feedback-testing.md`)" in s
    assert "name: the-file-name-without-.md" in s and "name: the-file-name-without-.md" in guidance.FILE_FORMAT
    assert "lower-case kebab case" in guidance.FILE_FORMAT and "feedback-testing.md" in guidance.FILE_FORMAT


def test_when_to_consult_and_that_memories_are_data(text):
    t, _ = text
    s = _section(t, "When to consult memory")
    assert "earlier work" in s and "recall or" in s
    assert "`Memory (saved today): PATH:`" in s
    assert "not" in s and "instructions from the user" in s and "permission" in s


def test_verify_before_recommending(text):
    t, _ = text
    s = _section(t, "Memories can be out of date")
    assert "file, function, flag" in s and "still exists" in s
    assert "trust what you see now" in s and "update or delete the memory" in s


def test_ignore_memory(text):
    t, _ = text
    s = _section(t, "When the user says to ignore memory")
    assert "as if the memory directory were empty" in s
    assert "do not read memory files" in s and "mention" in s
    assert "does not mean deleting" in s


def test_instructions_leave_room_for_the_index_under_the_hook_limit(text):
    t, _ = text
    assert 3000 < len16(t) < 5500


def test_team_memory_is_explained_only_when_there_is_one(tmp_path):
    d = tmp_path / "m"
    (d / "team").mkdir(parents=True)
    t = prompt.build(MemoryDir(d), "full").text
    assert f"`{d}/team/`" in t and "never one about the user personally" in t
    assert "shared with the whole team" not in prompt.build(MemoryDir(tmp_path / "none"), "full").text


# --- renderings -------------------------------------------------------------------


def test_full_is_the_instructions_then_memory_md_as_index_print_gives_it(memdir, run_mem):
    (memdir / "MEMORY.md").write_text("---\nx: y\n---\n<!-- a comment -->\n- [Tabs](tabs.md) — tabs\n\n\n")
    write_memory(memdir, "tabs.md", name="tabs", description="tabs")
    p = run_mem("prompt")
    assert p.returncode == 0, p.stderr
    index = run_mem("index", "--print").stdout
    assert p.stdout == prompt.instructions(MemoryDir(str(memdir) + "/")) + "\n\n## MEMORY.md\n\n" + index
    assert index == "- [Tabs](tabs.md) — tabs\n"


def test_an_empty_or_missing_index(tmp_path, run_mem):
    p = run_mem("prompt", "--dir", str(tmp_path / "none"))
    assert p.returncode == 0
    assert p.stdout.rstrip().endswith("Your MEMORY.md is empty. Memories you save will be listed here.")
    assert "Create the directory when you save the first memory" in p.stdout
    assert "no memory directory" in p.stderr


def test_team_index_follows(memdir, run_mem):
    (memdir / "MEMORY.md").write_text("- [Mine](mine.md) — mine\n")
    (memdir / "team").mkdir()
    (memdir / "team" / "MEMORY.md").write_text("- [Shared](shared.md) — for everyone\n")
    out = run_mem("prompt").stdout
    assert out.endswith("## MEMORY.md\n\n- [Mine](mine.md) — mine\n\n"
                        "## team/MEMORY.md (shared with your team)\n\n<team-memory-content source=\"shared\">\n"
                        "- [Shared](shared.md) — for everyone\n</team-memory-content>\n")


def test_agents_md_block(memdir, run_mem):
    (memdir / "MEMORY.md").write_text("- [Mine](mine.md) — a pointer that would go stale\n")
    out = run_mem("prompt", "--format", "agents-md").stdout
    lines = out.rstrip("\n").split("\n")
    assert lines[0] == "<!-- mem:begin -->" and lines[-1] == "<!-- mem:end -->"
    assert "## Memory" in lines and "### How to save" in lines and not any(ln.startswith("# ") for ln in lines)
    assert f"At the start of each conversation, read `{memdir}/MEMORY.md`" in out
    assert "mem recall" in out
    assert "would go stale" not in out  # no copy of the index
    assert run_mem("prompt", "--format", "agents-md", "--mode", "supplement").returncode == 2


def test_supplement_and_json(memdir, run_mem):
    (memdir / "MEMORY.md").write_text("- [Mine](mine.md) — mine\n")
    p = run_mem("prompt", "--mode", "supplement", "--json")
    data = json.loads(p.stdout)
    assert set(data) == {"mode", "memory_dir", "text", "chars", "index", "team_index", "shortened"}
    assert data["mode"] == "supplement" and data["team_index"] is None and data["shortened"] is False
    assert data["index"] == {"path": str(memdir / "MEMORY.md"), "present": True, "truncated": False,
                             "line_count": 1, "size_utf16": 24}
    assert "mem recall" in data["text"] and "What to save" not in data["text"]
    assert "- [Mine](mine.md)" not in data["text"]  # the client has it already
    assert data["chars"] == len16(data["text"])


def test_json_fields_are_documented():
    roff = (ROOT / "man" / "mem-prompt.1").read_text(encoding="utf-8")
    for field in ("mode", "memory_dir", "text", "chars", "index", "team_index", "shortened"):
        assert f"\\fB{field}\\fR (" in roff, field


def test_max_chars_cuts_the_index_at_a_line_and_says_where_the_rest_is(memdir, run_mem):
    lines = [f"- [Memory {i}](m{i}.md) — " + "a pointer with a fairly long hook " * 3 for i in range(190)]
    (memdir / "MEMORY.md").write_text("\n".join(lines) + "\n")
    data = json.loads(run_mem("prompt", "--json", "--max-chars", "8000").stdout)
    t = data["text"]
    assert data["shortened"] and len16(t) <= 8000
    assert t.startswith(prompt.instructions(MemoryDir(str(memdir) + "/")))
    assert t.endswith(f"\n\n> Only part of this index fits here. Read {memdir}/MEMORY.md for the rest.")
    kept = [ln for ln in t.split("\n") if ln.startswith("- [Memory ")]
    assert 10 < len(kept) < 190 and kept == lines[: len(kept)]


# --- the SessionStart hook ---------------------------------------------------------------


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.delenv("MEM_DIR", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    mem = Path(clients.resolve(project=str(repo)).memory_dir)
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("- [Tabs](tabs.md) — tabs not spaces\n")
    return repo, mem


def _start(repo: Path, name: str = "claude-code/SessionStart-startup.json", **changes) -> str:
    data = json.loads((HOOKS / name).read_text())
    data["cwd"] = str(repo)
    data.update(changes)
    return json.dumps(data)


def _context(p) -> str:
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    return out["additionalContext"]


def test_claude_with_auto_memory_gets_only_what_it_lacks(project, run_mem):
    repo, mem = project
    ctx = _context(run_mem("prompt", "--hook", input=_start(repo)))
    assert ctx == prompt.supplement_note(MemoryDir(str(mem)))
    assert "What to save" not in ctx and "tabs not spaces" not in ctx
    (mem / "team").mkdir()
    (mem / "team" / "MEMORY.md").write_text("- [Deploys](deploys.md) — how we deploy\n")
    ctx = _context(run_mem("prompt", "--hook", input=_start(repo, "claude-code/SessionStart-compact.json")))
    assert ctx.endswith("## team/MEMORY.md (shared with your team)\n\n<team-memory-content source=\"shared\">\n"
                        "- [Deploys](deploys.md) — how we deploy\n</team-memory-content>")


def test_claude_without_auto_memory_gets_nothing(project, run_mem):
    """Claude Code with its auto memory off loads no memory, recalls and extracts none: nor does mem add it."""
    repo, mem = project
    p = run_mem("prompt", "--hook", input=_start(repo), env={"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"})
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")


def test_a_memory_dir_of_ones_own_gets_everything(project, tmp_path, run_mem):
    repo, _ = project
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "MEMORY.md").write_text("- [Other](o.md) — mine\n")
    ctx = _context(run_mem("prompt", "--hook", input=_start(repo), env={"MEM_DIR": str(other)}))
    assert f"`{other}/`" in ctx and ctx.endswith("- [Other](o.md) — mine")
    ctx = _context(run_mem("prompt", "--hook", "--mode", "supplement", input=_start(repo), env={"MEM_DIR": str(other)}))
    assert "What to save" not in ctx


def test_a_huge_index_still_fits_claudes_hook_limit(project, run_mem):
    repo, mem = project
    (mem / "MEMORY.md").write_text("".join(f"- [M{i}](m{i}.md) — " + "h" * 110 + "\n" for i in range(200)))
    ctx = _context(run_mem("prompt", "--hook", "--mode", "full", input=_start(repo)))
    assert len16(ctx) <= 9500
    assert ctx.startswith("# Memory\n")
    assert ctx.endswith(f"Read {mem}/MEMORY.md for the rest.")


@pytest.mark.parametrize("stdin, args", [
    ("nope", []),
    (None, ["--format", "agents-md"]),
    (None, ["--json"]),
    (None, ["--unknown"]),
    ('{"session_id": "s", "cwd": "/", "hook_event_name": "UserPromptSubmit", "prompt": "a b"}', []),
])
def test_hook_failures_exit_zero_with_one_line(project, run_mem, stdin, args):
    repo, _ = project
    p = run_mem("prompt", "--hook", *args, input=_start(repo) if stdin is None else stdin)
    assert (p.returncode, p.stdout) == (0, "")
    assert p.stderr.startswith("mem: hook: ") and p.stderr.count("\n") == 1


def test_prompt_does_not_import_the_sdk(project):
    import subprocess
    import sys

    repo, _ = project
    probe = (
        "import sys\n"
        "sys.argv = ['mem', 'prompt', '--hook']\n"
        "from mem.cli import cli\n"
        "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('HEAVY=' + ','.join(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'httpx')))\n"
    )
    p = subprocess.run([sys.executable, "-c", probe], input=_start(repo), capture_output=True, text=True)
    assert "hookSpecificOutput" in p.stdout
    assert p.stderr.strip().endswith("HEAVY=")


def test_team_index_is_wrapped_as_shared_even_when_cut(memdir):
    from mem.core import prompt

    (memdir / "MEMORY.md").write_text("- [Mine](mine.md) — private\n")
    (memdir / "team").mkdir()
    (memdir / "team" / "MEMORY.md").write_text("".join(f"- [Team {i}](t{i}.md) — shared fact number {i}\n" for i in range(400)))
    p = prompt.build(MemoryDir(memdir), "full")
    assert '## team/MEMORY.md (shared with your team)\n\n<team-memory-content source="shared">\n- [Team 0](t0.md)' in p.text
    assert p.text.rstrip().endswith("</team-memory-content>")
    cut = prompt.build(MemoryDir(memdir), "full", max_chars=6000)
    assert cut.shortened and len(cut.text) <= 6000
    assert "</team-memory-content>\n\n> Only part of this index fits here." in cut.text


def test_an_index_leading_out_is_not_read_and_the_command_says_so(run_mem, memdir, tmp_path, capsys):
    outside = tmp_path / "elsewhere.md"
    outside.write_text("- [Secret plans](plans.md) — not this directory's\n")
    (memdir / "MEMORY.md").symlink_to(outside)
    built = prompt.build(MemoryDir(str(memdir)), "full")
    assert capsys.readouterr().err == ""  # core writes nothing itself: the warning is in the result
    assert built.warnings == (f"{memdir / 'MEMORY.md'}: not read: {built.index.refused}",) and built.index.refused
    assert "Secret plans" not in built.text
    r = run_mem("prompt")
    assert r.returncode == 0 and "Secret plans" not in r.stdout
    assert r.stderr.startswith(f"mem: warning: {memdir / 'MEMORY.md'}: not read: ")

"""Start-up budget: path, scan and index never load the model SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HEAVY = ("anthropic", "httpx", "pydantic")

PROBE = """
import json, sys, runpy
sys.argv = ["mem"] + sys.argv[1:]
try:
    from mem.entry import main
    main()
except SystemExit:
    pass
finally:
    sys.stdout.flush()
    mods = sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})
    sys.stderr.write("MODULES=" + json.dumps(mods) + "\\n")
"""


def probe(*args: str, heavy: tuple[str, ...] = HEAVY, input: str | None = None) -> tuple[str, list[str]]:
    """(stdout, the modules of ``heavy`` loaded) of one mem command."""
    r = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=set(heavy)), *args],
        capture_output=True, text=True, env=dict(os.environ), input=input,
    )
    line = next(line for line in r.stderr.splitlines() if line.startswith("MODULES="))
    return r.stdout, json.loads(line[len("MODULES="):])


def loaded_heavy(*args: str) -> list[str]:
    return probe(*args)[1]


def test_import_mem_cli_is_light():
    code = "import sys, mem.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in %r))" % (HEAVY,)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


def test_help_and_commands_do_not_import_the_sdk(memdir):
    (memdir / "MEMORY.md").write_text("- [a](a.md)\n")
    for args in (["--help"], ["path", "--json"], ["scan", "--all", "--json"], ["scan", "--check"], ["index"], ["index", "--check"], ["index", "--rebuild", "--dry-run"]):
        assert loaded_heavy(*args) == [], args


def test_sdk_is_installed_so_the_budget_test_means_something():
    import importlib.util

    assert importlib.util.find_spec("anthropic") is not None


def test_recall_on_every_prompt_loads_no_sdk_and_builds_no_dataclass(memdir):
    # The UserPromptSubmit hook runs on every prompt: building a dataclass execs its generated
    # methods (~0.5 ms each), so the recall path keeps to NamedTuples and plain classes.
    from conftest import write_memory

    write_memory(memdir, "deploy.md", name="deploy", description="how we deploy to staging", type="project")
    payload = json.dumps({"session_id": "s1", "transcript_path": None, "cwd": str(memdir),
                          "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy to staging?"})
    heavy = (*HEAVY, "dataclasses")
    out, loaded = probe("recall", "--offline", "how", "do", "we", "deploy", heavy=heavy)
    assert "deploy.md" in out and loaded == []
    out, loaded = probe("recall", "--hook", "--dir", str(memdir), heavy=heavy, input=payload)
    assert "deploy.md" in json.loads(out)["hookSpecificOutput"]["additionalContext"] and loaded == []


def test_recall_on_every_prompt_pays_nothing_for_the_history(memdir):
    # The history (git, subprocess) belongs to the commands that write memory; the recall hook
    # only reads, and must not start a git process or even import the module.
    from conftest import write_memory

    write_memory(memdir, "deploy.md", name="deploy", description="how we deploy to staging", type="project")
    payload = json.dumps({"session_id": "s1", "transcript_path": None, "cwd": str(memdir),
                          "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy to staging?"})
    out, loaded = probe("recall", "--hook", "--dir", str(memdir), heavy=("mem", "subprocess"), input=payload)
    assert "deploy.md" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "mem.core.memdir.store" in loaded  # the probe sees mem's own modules, so the next line means something
    assert "mem.core.memdir.history" not in loaded and "subprocess" not in loaded
    state = os.environ["MEM_STATE_DIR"]
    assert not any("history.git" in dirs for _, dirs, _ in os.walk(state))


def test_recall_notes_what_verify_found_without_git_or_the_verifier(memdir):
    # mem verify leaves one-line notes keyed by content; the hook reads them with no git, no
    # subprocess and without importing the verifier (its regexes and git plumbing).
    from conftest import write_memory

    from mem.core.memdir.store import MemoryDir
    from mem.core.verifynotes import Finding, StaleNotes, content_sha

    path = write_memory(memdir, "deploy.md", name="deploy", description="how we deploy to staging", type="project",
                        body="Deploy with `make ship`.\n")
    stale = Finding("deploy.md", 7, "command", "make ship", "missing", "not a target in Makefile")
    StaleNotes(MemoryDir(memdir).state.verify_notes).update({"deploy.md": (content_sha(path.read_bytes()), [stale])})
    payload = json.dumps({"session_id": "s1", "transcript_path": None, "cwd": str(memdir),
                          "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy to staging?"})
    out, loaded = probe("recall", "--hook", "--dir", str(memdir), heavy=("mem", "subprocess"), input=payload)
    assert "`make ship` is no longer declared (line 7)" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "mem.core.verifynotes" in loaded  # the probe sees the notes module, so the next line means something
    assert "mem.core.verify" not in loaded and "subprocess" not in loaded


def test_the_recall_hook_imports_no_click(memdir):
    # The hook runs before every prompt: its command line is read without click (mem/entry.py).
    from conftest import write_memory

    write_memory(memdir, "deploy.md", name="deploy", description="how we deploy to staging", type="project")
    payload = json.dumps({"session_id": "s1", "transcript_path": None, "cwd": str(memdir),
                          "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy to staging?"})
    out, loaded = probe("recall", "--hook", "--dir", str(memdir), heavy=("click",), input=payload)
    assert "deploy.md" in json.loads(out)["hookSpecificOutput"]["additionalContext"] and loaded == []
    # any other command goes through click, so the probe can see it
    assert probe("scan", "--dir", str(memdir), heavy=("click",))[1] != []


def test_the_tool_hook_imports_no_click_no_sdk_and_no_subprocess(memdir):
    # PreToolUse runs before every tool call: the same lean path as the prompt hook, no model.
    from conftest import write_memory

    write_memory(memdir, "feedback_no_force_push.md", name="no-force-push", description="never force-push",
                 type="feedback", body="Never run `git push --force` on main.\n")
    payload = json.dumps({"session_id": "s1", "transcript_path": None, "cwd": str(memdir),
                          "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "git push --force origin main"}, "tool_use_id": "t1"})
    out, loaded = probe("recall", "--hook", "--dir", str(memdir), heavy=("click", "subprocess") + HEAVY,
                        input=payload)
    assert "feedback_no_force_push.md" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert loaded == []


def test_a_cloud_configuration_loads_no_cloud_sdk_until_a_request(monkeypatch):
    # CLAUDE_CODE_USE_BEDROCK / _VERTEX are read from the environment and settings whenever a job asks
    # whether a model is configured (the recall hook: every prompt); boto3 (~35 MB) and google-auth
    # load only when a request is signed.
    heavy = (*HEAVY, "boto3", "botocore", "google")
    for switch in ({"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1"},
                   {"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5"}):
        for name, value in switch.items():
            monkeypatch.setenv(name, value)
        out, loaded = probe("model", "--json", heavy=heavy)
        assert json.loads(out)[0]["backend"] in ("bedrock", "vertex") and loaded == []
        for name in switch:
            monkeypatch.delenv(name)


#: Modules the keyless prompt hook once loaded and does not use (issue #26): each one here was
#: taken off its path and must not come back. The model factory, the protocol backends and the
#: cloud ones load only when a backend is configured (jobs/credentials.py).
KEYLESS_HOOK_DOES_NOT_LOAD = (
    "mem.core.jobs.llm", "mem.core.jobs.backends.anthropic", "mem.core.jobs.backends.bedrock",
    "mem.core.jobs.backends.vertex",
)


def test_the_keyless_prompt_hook_loads_only_what_it_uses(memdir):
    from conftest import write_memory

    write_memory(memdir, "deploy.md", name="deploy", description="how we deploy to staging", type="project")
    payload = json.dumps({"session_id": "s1", "transcript_path": None, "cwd": str(memdir),
                          "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy to staging?"})
    out, loaded = probe("recall", "--hook", "--dir", str(memdir), heavy=("mem",), input=payload)
    assert "deploy.md" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "mem.core.jobs.credentials" in loaded  # it did ask whether a model is configured
    assert sorted(set(KEYLESS_HOOK_DOES_NOT_LOAD) & set(loaded)) == []
    # nor the types the model backends share (its package is loaded: find_claude, the config readers)
    from mem.core.jobs.llm import ModelConfig, ModelError

    assert ModelError.__module__ not in loaded and ModelConfig.__module__ not in loaded


def test_the_installed_hook_walks_path_for_qwen_without_shutil(tmp_path, monkeypatch):
    # As `mem hooks install` writes it: no --dir, the project's memory found by the clients' rules,
    # which ask for the installed qwen-code's version on every prompt. shutil.which would load
    # shutil, bz2, lzma and fnmatch (~2 ms); paths.which walks PATH. ASCII paths need no unicodedata.
    monkeypatch.delenv("MEM_DIR", raising=False)
    project = tmp_path / "repo"
    project.mkdir()
    payload = json.dumps({"session_id": "s1", "transcript_path": None, "cwd": str(project),
                          "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy to staging?"})
    heavy = ("mem", "shutil", "bz2", "lzma", "unicodedata", "typing")  # not fnmatch: the editable install's finder loads it
    _, loaded = probe("recall", "--hook", heavy=heavy, input=payload)
    assert "mem.clients.qwen" in loaded  # it did ask qwen's rules, so the next line means something
    assert sorted(set(heavy[1:]) & set(loaded)) == []


def test_the_hooks_load_no_typing(memdir):
    # typing (with its warnings) costs the hook ~2 ms and each typing.NamedTuple class three times a
    # collections.namedtuple: the hook's modules build theirs on mem.core.record.Record.
    from conftest import write_memory

    write_memory(memdir, "deploy.md", name="deploy", description="how we deploy to staging", type="project")
    write_memory(memdir, "feedback_no_force_push.md", name="no-force-push", description="never force-push",
                 type="feedback", body="Never run `git push --force` on main.\n")
    # with a transcript, as the clients send one: the hook reads the recent tool calls from it
    transcript = os.path.join(os.path.dirname(__file__), "fixtures", "hooks", "claude-code", "transcript-05.jsonl")
    prompt = json.dumps({"session_id": "s1", "transcript_path": transcript, "cwd": str(memdir),
                         "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy to staging?"})
    tool = json.dumps({"session_id": "s1", "transcript_path": transcript, "cwd": str(memdir), "hook_event_name": "PreToolUse",
                       "tool_name": "Bash", "tool_input": {"command": "git push --force origin main"}, "tool_use_id": "t1"})
    for payload, surfaced in ((prompt, "deploy.md"), (tool, "feedback_no_force_push.md")):
        out, loaded = probe("recall", "--hook", "--dir", str(memdir), heavy=("typing", "mem"), input=payload)
        assert surfaced in json.loads(out)["hookSpecificOutput"]["additionalContext"]
        assert "mem.core.record" in loaded and "typing" not in loaded
        assert payload == tool or "mem.core.transcripts" in loaded  # it did read the transcript

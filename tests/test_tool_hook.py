"""`mem recall --hook` on PreToolUse: the feedback that applies to a tool call, before it runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, write_memory
from mem.core.memdir.store import MemoryDir
from mem import clients
from mem.core import recall, toolmatch

HOOKS = FIXTURES / "hooks"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project and its Claude Code memory dir with two feedback memories and a user one; MEM_DIR unset."""
    monkeypatch.delenv("MEM_DIR", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    mem = Path(clients.resolve(project=str(repo)).memory_dir)
    mem.mkdir(parents=True)
    write_memory(mem, "feedback_no_force_push.md", name="no-force-push", description="never force-push main",
                 type="feedback", body="Never run `git push --force` (or `git push -f`) on main.\n")
    write_memory(mem, "feedback_migrations.md", name="migrations-reversible", description="migrations need a downgrade",
                 type="feedback", body="Every file under `migrations/` implements `downgrade()`.\n")
    write_memory(mem, "user_git.md", name="git-user", description="the user knows git well",
                 body="Uses `git push --force` on their own forks.\n")
    return repo, mem


def payload(name: str, repo: Path, tmp_path: Path, **changes) -> str:
    """A recorded PreToolUse payload, cwd and transcript moved into the test's directories."""
    data = json.loads((HOOKS / name).read_text(encoding="utf-8"))
    data["cwd"] = str(repo)
    data["transcript_path"] = str(tmp_path / "no-transcript.jsonl")
    data.update(changes)
    return json.dumps(data)


def context_of(p) -> str:
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    return out["hookSpecificOutput"]["additionalContext"]


def test_a_force_push_is_reminded_of_the_feedback(project, tmp_path, run_mem):
    repo, mem = project
    p = run_mem("recall", "--hook", input=payload("claude-code/PreToolUse-Bash.json", repo, tmp_path,
                                                   tool_input={"command": "git push --force origin main"}))
    ctx = context_of(p)
    assert ctx.startswith("Saved feedback that applies to this Bash call:\n")
    assert "Never run `git push --force`" in ctx and str(mem / "feedback_no_force_push.md") in ctx
    assert "user_git.md" not in ctx  # only feedback and project memories apply to tool calls
    assert "<system-reminder>" not in ctx  # no transcript, version unknown: plain text, as prompt recall does
    assert p.stderr == ""


def test_most_tool_calls_surface_nothing(project, tmp_path, run_mem):
    repo, _ = project
    for command in ("/home/dev/cc-run/fakemem save x", "git push origin feature/login", "git status", "echo migrations"):
        p = run_mem("recall", "--hook", input=payload("claude-code/PreToolUse-Bash.json", repo, tmp_path,
                                                       tool_input={"command": command}))
        assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), command


def test_once_per_session_per_tool_pattern(project, tmp_path, run_mem):
    repo, mem = project

    def edit(tool: str, rel: str, **changes) -> str:
        p = run_mem("recall", "--hook", input=payload("claude-code/PreToolUse-Write.json", repo, tmp_path,
                                                       tool_name=tool, tool_input={"file_path": str(repo / rel),
                                                                                   "content": "x = 1\n"}, **changes))
        assert p.returncode == 0, p.stderr
        return p.stdout

    assert "feedback_migrations.md" in edit("Write", "migrations/0001_a.py")
    assert edit("Write", "migrations/0002_b.py") == ""  # the same pattern (write:migrations) in the session
    assert "feedback_migrations.md" in edit("Edit", "migrations/0001_a.py")  # another pattern
    assert "feedback_migrations.md" in edit("Write", "migrations/0003_c.py", session_id="another-session")
    state = json.loads(Path(recall.session_file(MemoryDir(mem), json.loads((HOOKS / "claude-code/PreToolUse-Write.json")
                                                                    .read_text())["session_id"])).read_text())
    assert [(s["relpath"], s["tool_pattern"]) for s in state["surfaced"]] == [
        ("feedback_migrations.md", "write:migrations"), ("feedback_migrations.md", "edit:migrations")]


def test_the_session_budget_is_shared_with_prompt_recall(project, tmp_path, run_mem):
    repo, mem = project
    sid = "budget-spent"
    with recall.session(MemoryDir(mem), sid) as state:
        state.surfaced.append({"path": str(mem / "other.md"), "relpath": "other.md", "chars": recall.MAX_SESSION_BYTES})
        recall._save_state(state, MemoryDir(mem))
    p = run_mem("recall", "--hook", input=payload("claude-code/PreToolUse-Bash.json", repo, tmp_path, session_id=sid,
                                                   tool_input={"command": "git push --force origin main"}))
    assert (p.returncode, p.stdout) == (0, "")


def test_qwen_code_write_file_payload(project, tmp_path, run_mem):
    repo, mem = project
    # the recorded payload is qwen-code's own: its memory dir is the qwen layout's
    qmem = Path(clients.resolve(project=str(repo), layout="qwen").memory_dir)
    qmem.mkdir(parents=True)
    write_memory(qmem, "feedback_migrations.md", name="migrations-reversible", description="migrations need a downgrade",
                 type="feedback", body="Every file under `migrations/` implements `downgrade()`.\n")
    p = run_mem("recall", "--hook", input=payload("qwen-code/PreToolUse-write_file.json", repo, tmp_path,
                                                   tool_input={"file_path": str(repo / "migrations/0001.py"),
                                                               "content": "def upgrade(): ...\n"}))
    ctx = context_of(p)
    assert str(qmem / "feedback_migrations.md") in ctx and "<" not in ctx  # qwen-code escapes tags: none sent


def test_a_payload_without_a_tool_input_surfaces_nothing(project, tmp_path, run_mem):
    repo, _ = project
    for changes in ({"tool_input": "git push --force"}, {"tool_name": "WebFetch"}, {"tool_name": None}):
        p = run_mem("recall", "--hook", input=payload("claude-code/PreToolUse-Bash.json", repo, tmp_path, **changes))
        assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), changes


# --- the matcher -------------------------------------------------------------------

def candidates(text: str, kind: str = "feedback"):
    return [("m.md", [list(t) for t in toolmatch.triggers(text)], toolmatch.about_reading(text))]


@pytest.mark.parametrize("command, hit", [
    ("git push --force origin main", True),
    ("git push --force-with-lease origin main", True),  # a kind of --force
    ("git push -f origin main", True),
    ("git push origin main", False),
    ("echo 'git push --force'", True),  # the words, the flag: said in a command, still about it
])
def test_flags_must_be_in_the_call(command, hit):
    text = "Never run `git push --force` (or `git push -f`) on main."
    call = toolmatch.read_call("Bash", {"command": command}, "/repo")
    assert bool(toolmatch.select(call, candidates(text))) is hit


def test_a_command_named_alone_applies_only_where_it_is_the_command():
    text = "The frontend uses pnpm: never `yarn`."
    assert toolmatch.select(toolmatch.read_call("Bash", {"command": "yarn add moment"}, "/r"), candidates(text))
    assert toolmatch.select(toolmatch.read_call("Bash", {"command": "cd web && yarn"}, "/r"), candidates(text))
    assert not toolmatch.select(toolmatch.read_call("Bash", {"command": "grep yarn README.md"}, "/r"), candidates(text))
    assert not toolmatch.select(toolmatch.read_call("Write", {"file_path": "/r/a.md", "content": "yarn"}, "/r"),
                                candidates(text))


def test_paths_match_whole_segments_and_a_directory_said_in_passing_does_not_count():
    text = "Files under `migrations/` need a downgrade. In service code (src/), log."
    def hit(path):
        return bool(toolmatch.select(toolmatch.read_call("Edit", {"file_path": path, "new_string": "x"}, "/r"),
                                     candidates(text)))
    assert hit("/r/migrations/0001.py") and hit("/r/db/migrations/0001.py")
    assert not hit("/r/old_migrations/0001.py") and not hit("/r/src/shop/cart.py")


def test_a_read_surfaces_only_rules_about_reading():
    editing = "Never edit `poetry.lock` by hand."
    reading = "Never print `.env` (cat, Read): it holds credentials."
    assert not toolmatch.select(toolmatch.read_call("Read", {"file_path": "/r/poetry.lock"}, "/r"), candidates(editing))
    assert toolmatch.select(toolmatch.read_call("read_file", {"absolute_path": "/r/.env"}, "/r"), candidates(reading))


def test_the_triggers_are_cached_by_stamp(tmp_path):
    from mem.core.memdir import manifest

    write_memory(tmp_path, "feedback_a.md", name="a", description="a", type="feedback", body="Never `yarn`.\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    first = toolmatch.memory_triggers(manifest.scan(str(tmp_path)), str(cache))
    assert (cache / toolmatch.TRIGGERS_CACHE).exists()
    assert toolmatch.memory_triggers(manifest.scan(str(tmp_path)), str(cache)) == first
    write_memory(tmp_path, "feedback_a.md", name="a", description="a", type="feedback", body="Never `npm`.\n",
                 mtime=1_700_000_000)
    again = toolmatch.memory_triggers(manifest.scan(str(tmp_path)), str(cache))
    assert again != first and tuple(again[0][1][0][0]) == ("npm",)


def hit(tool: str, tool_input: dict, text: str) -> bool:
    return bool(toolmatch.select(toolmatch.read_call(tool, tool_input, "/r"), candidates(text)))


def test_what_to_do_instead_is_no_trigger():
    text = "Never run `sudo pip install`. **How to apply:** `.venv/bin/pip install ...` instead."
    assert hit("Bash", {"command": "sudo pip install requests"}, text)
    assert not hit("Bash", {"command": ".venv/bin/pip install requests"}, text)
    text = "Use `docker compose` (v2). The old `docker-compose` binary is not installed."
    assert hit("Bash", {"command": "docker-compose up -d"}, text)
    assert not hit("Bash", {"command": "docker compose ps"}, text)


def test_a_common_command_alone_is_not_enough():
    text = "Never print `.env` (`cat`): it holds credentials."
    assert not hit("Bash", {"command": "cat README.md"}, text)
    assert hit("Bash", {"command": "cat .env"}, text)


def test_a_flag_alone_counts_in_a_command_the_memory_names():
    text = "Run `pytest -x -q` on the files you touched; never the whole suite with `--cov`."
    assert hit("Bash", {"command": "pytest --cov=src tests/"}, text)
    assert not hit("Bash", {"command": "coverage run --cov"}, text)


def test_a_star_and_a_bare_file_name_are_triggers():
    assert hit("Edit", {"file_path": "/r/q.py", "new_string": "SELECT * FROM orders"}, "No `SELECT *` in queries.")
    assert not hit("Edit", {"file_path": "/r/q.py", "new_string": "SELECT id FROM orders"}, "No `SELECT *` in queries.")
    assert hit("Edit", {"file_path": "/r/CHANGELOG.md", "new_string": "- x"}, "Add CHANGELOG.md entries under Unreleased.")


def shell(command: str, text: str) -> bool:
    return hit("Bash", {"command": command}, text)


def test_a_commands_words_are_matched_as_written_in_one_command_of_the_call():
    text = "Never run `make deploy` by hand: CI deploys."
    assert shell("make deploy", text) and shell("cd api && make deploy", text)
    assert not shell("make lint", text)
    text = "Ask before adding a dependency (`pnpm add`)."
    assert not shell("pnpm install --frozen-lockfile", text)  # "add" is no term of the ranker: still a word here
    text = "Never run `git checkout -- .`: the user has uncommitted work."
    assert shell("git checkout -- src/shop/cart.py", text)  # `.` is any path
    assert not shell("git checkout -b feature/refunds", text)


def test_code_is_matched_as_code():
    text = "In service code, never leave `print()` calls."
    assert hit("Edit", {"file_path": "/r/w.py", "new_string": "    print('charging', order.id)"}, text)
    assert not hit("Edit", {"file_path": "/r/w.py", "new_string": "# print the totals\nlog.info(x)"}, text)
    text = "Store datetimes with tzinfo: `datetime.now(timezone.utc)`, never naive `datetime.now()` or `utcnow()`."
    assert hit("Edit", {"file_path": "/r/d.py", "new_string": "due = datetime.utcnow()"}, text)
    assert not hit("Edit", {"file_path": "/r/d.py", "new_string": "from datetime import date"}, text)
    text = "Do not patch the repository layer (`MagicMock`, `@patch`)."
    assert hit("Edit", {"file_path": "/r/t.py", "new_string": "@mock.patch('shop.repo.Orders')\ndef test(x):"}, text)
    assert not hit("Edit", {"file_path": "/r/t.py", "new_string": "def test_patch_level(): assert v.patch == 2"}, text)


def test_a_placeholder_needs_an_argument_and_adding_a_package_is_one_rule():
    text = "Ask the user before adding a dependency (`pip install <new>`, `pnpm add`)."
    for command in ("pip install requests", "npm install lodash", "yarn add moment", "poetry add httpx",
                    "sudo pip install requests", "go get github.com/pkg/errors", "pnpm add -D @types/node"):
        assert shell(command, text), command
    for command in ("pip install -r requirements.txt", "pnpm install --frozen-lockfile", "pip install -U pip",
                    ".venv/bin/pip install -e .", "npm ci"):
        assert not shell(command, text), command


def test_a_memory_forbidding_two_things_one_command_does_is_about_the_command():
    text = "The frontend uses pnpm. Never run `npm install`, `npm run` or `yarn`."
    assert shell("npm ci", text)
    assert not shell("npx prettier --check src", text) and not shell("pnpm install", text)


def test_a_command_named_with_what_it_does_does_not_meet_a_call_that_only_looks():
    text = "Never `kubectl apply` or `kubectl delete` without asking."
    assert not shell("kubectl get pods", text)
    assert shell("kubectl rollout restart deploy/api", text)
    text = "Use `docker compose` (v2). The old `docker-compose` binary is not installed."
    assert shell("docker-compose ps", text)  # the memory is about the binary, not about what it does


def test_a_shell_call_that_only_reads_surfaces_only_rules_about_reading():
    editing = "Every file under `migrations/` implements `downgrade()`."
    assert not shell("ls migrations/versions", editing) and not shell("cat migrations/0001.py", editing)
    assert not shell("git log --oneline migrations/", editing)
    assert shell("rm migrations/0001.py", editing)
    reading = "Never print `.env` (`cat`, Read): it holds credentials."
    assert shell("head -n 5 .env", reading) and shell("echo 'A=1' >> .env", reading)


def test_an_unquoted_directory_scopes_the_rule_or_excludes_from_it():
    text = "In service code (src/), never leave `print()` calls."
    assert hit("Edit", {"file_path": "/r/src/shop/w.py", "new_string": "print(x)"}, text)
    assert not shell("python -c 'import shop; print(shop.__version__)'", text)
    assert not hit("Edit", {"file_path": "/r/scripts/report.py", "new_string": "print(x)"}, text)
    text = "Do not run `rm -rf` on anything except build output (build/, dist/)."
    assert shell("rm -rf data/fixtures", text) and shell("rm -fr ~/backup", text)
    assert not shell("rm -rf build/ dist/", text)


def test_a_chinese_clause_saying_what_to_do_instead_is_no_trigger():
    text = "不要直接修改 `config/production.yaml`。生产配置必须通过发布流程变更，先改 `config/staging.yaml` 验证。"
    assert hit("Edit", {"file_path": "/r/config/production.yaml", "new_string": "a: 1"}, text)
    assert not hit("Edit", {"file_path": "/r/config/staging.yaml", "new_string": "a: 1"}, text)
    text = "Never print them; new keys go in `.env.example` with a placeholder."
    assert not hit("Write", {"file_path": "/r/.env.example", "content": "KEY=\n"}, text)


def test_refspecs_host_names_and_the_action_alone():
    assert shell("git push origin HEAD:release/2.5", "`release/` ブランチには直接 push しないこと。")
    text = "The staging database is db-staging.internal. Migrations are applied there by CI, never by hand."
    assert shell("psql -h db-staging.internal -f m.sql", text) and not shell("psql -h localhost", text)
    text = "Never run `terraform apply -auto-approve`: apply a reviewed plan."
    assert shell("terraform apply", text) and not shell("terraform fmt -recursive", text)


def test_a_flag_alone_is_of_the_subcommand_the_memory_names():
    text = "Never use `git commit --no-verify` (or `-n`) to skip the hooks."
    assert shell("git commit -n -m 'quick fix'", text)
    assert not shell("git push -n origin main", text)


def test_a_sentence_saying_when_names_the_action_and_a_latin_verb_in_a_cjk_rule_is_the_action():
    text = "Commit messages: imperative subject. **How to apply:** whenever you write a `git commit -m`."
    assert shell("git commit --amend", text) and shell("git commit -m 'Fix totals'", text)
    assert not shell("git push origin main", text) and not shell("git log -n 3", text)
    text = "`release/` ブランチには直接 push しないこと。"
    assert shell("git push origin release/2.4", text)
    assert not shell("git checkout -b fix/vat origin/release/2.4", text)


def test_in_a_files_text_a_span_of_several_words_is_a_phrase():
    text = "Queries list their columns; no `SELECT *`."
    assert hit("Edit", {"file_path": "/r/q.py", "new_string": "cur.execute('select *  from orders')"}, text)
    assert not hit("Edit", {"file_path": "/r/q.py", "new_string": "SELECT count(*) FROM orders"}, text)
    text = "Never run `kubectl apply` against prod."
    assert hit("Write", {"file_path": "/r/deploy.sh", "content": "kubectl apply -f k8s/"}, text)
    assert not hit("Write", {"file_path": "/r/notes.md", "content": "apply the patch; kubectl is installed"}, text)


def test_qwen_codes_read_many_files_names_its_paths():
    reading = "Never print `.env` (`cat`, Read): it holds credentials."
    assert hit("read_many_files", {"paths": ["/r/README.md", "/r/.env"]}, reading)
    assert not hit("read_many_files", {"paths": ["/r/README.md"]}, reading)


def test_a_flag_span_is_of_the_file_its_sentence_names():
    text = "`scripts/seed.py` を本番データベース（`--env production`）に対して実行しないこと。"
    assert shell("python scripts/seed.py --env production", text)
    assert not shell("python scripts/migrate.py --env production", text)


def test_a_memory_is_about_reading_when_a_rule_of_it_names_reading():
    logging = "use the logger, not print, in service code\nIn service code (src/), never leave `print()` calls."
    assert not shell("grep -rn 'print(' src/", logging) and not hit("Read", {"file_path": "/r/src/a.py"}, logging)
    deploy = "Deploys go through `scripts/deploy.sh <env>`; it reads DEPLOY_ENV."  # ("run with" it: what to do)
    assert not shell("cat scripts/deploy.sh", deploy) and shell("scripts/deploy.sh prod", deploy)


def test_wrapped_and_quoted_commands_are_read_as_the_shell_reads_them():
    assert shell("sudo -H pip install black", "Never run `sudo pip install`.")
    assert shell("rm -rf node_modules", "Do not run `rm -rf` except on build output (build/, dist/).")
    assert not shell("rm -rf dist", "Do not run `rm -rf` except on build output (build/, dist/).")
    assert not shell("cd src && grep -n 'print(' shop/*.py", "In service code (src/), never leave `print()` calls.")


def test_a_checker_on_a_guarded_path_does_not_change_it():
    text = "The payments service (`services/payments/`) is frozen: no changes there."
    assert not shell("pytest services/payments/tests -q", text) and not shell("mypy services/payments", text)
    assert shell("ruff check --fix services/payments", text) and shell("sed -i s/5/3/ services/payments/a.py", text)
    assert hit("Edit", {"file_path": "/r/services/payments/a.py", "new_string": "x"}, text)


def test_a_function_passed_as_a_value_is_used_and_via_says_what_to_do_instead():
    text = "Store datetimes with tzinfo: `datetime.now(timezone.utc)`, never naive `datetime.now()` or `utcnow()`."
    assert hit("Edit", {"file_path": "/r/m.py", "new_string": "created = Column(DateTime, default=datetime.utcnow)"}, text)
    assert hit("Edit", {"file_path": "/r/m.py", "new_string": "field(default_factory=datetime.now)"}, text)
    assert not hit("Edit", {"file_path": "/r/m.py", "new_string": "# utcnow is naive, see the memory"}, text)
    text = "Never modify code under `third_party/`: it is vendored. Patch via `patches/` and the vendoring script."
    assert hit("Edit", {"file_path": "/r/third_party/zlib/inflate.c", "new_string": "x"}, text)
    assert not hit("Edit", {"file_path": "/r/patches/zlib.patch", "new_string": "+x"}, text)


def test_a_call_that_does_what_the_memory_prescribes_complies():
    text = "Run `pytest -x -q` on the test files you touched; never run the full suite with `--cov`."
    assert not shell(".venv/bin/pytest -x -q tests/unit/test_coupons.py", text) and shell("pytest --cov=shop", text)
    text = "Never run `terraform apply -auto-approve`. Run `terraform plan -out plan.tfplan`, show the plan."
    assert not shell("cd infra && terraform plan -out plan.tfplan", text) and shell("terraform apply -auto-approve", text)
    text = "Files under `src/generated/` are generated. Never edit them: change the .proto file and run `make proto`."
    assert not shell("make proto && git diff --stat src/generated/", text)
    assert hit("Edit", {"file_path": "/r/src/generated/a_pb2.py", "new_string": "x"}, text)
    text = "In service code (src/), log with `logger = logging.getLogger(__name__)`; never leave `print()` calls."
    assert not hit("Write", {"file_path": "/r/src/a.py", "content": "logger = logging.getLogger(__name__)\n"}, text)
    assert hit("Write", {"file_path": "/r/src/a.py", "content": "logger = logging.getLogger(__name__)\nprint(x)"}, text)
    text = "Add CHANGELOG.md entries under the `## Unreleased` heading; never invent a version heading."
    assert not hit("Edit", {"file_path": "/r/CHANGELOG.md", "new_string": "## Unreleased\n\n- Refunds.\n"}, text)
    assert hit("Edit", {"file_path": "/r/CHANGELOG.md", "new_string": "## 2.5.0\n\n- Refunds.\n"}, text)
    text = "Store datetimes with tzinfo: `datetime.now(timezone.utc)`, never naive `datetime.now()` or `utcnow()`."
    assert not hit("Edit", {"file_path": "/r/d.py", "new_string": "cutoff = datetime.now(timezone.utc) - delta"}, text)


def test_a_prescribed_flag_is_no_kind_of_the_forbidden_one_unless_the_call_names_the_rules_target():
    text = ("Never run `git push --force` (or `git push -f`) on main or any branch someone else pulls. "
            "**How to apply:** on your own feature branch use `--force-with-lease`.")
    assert not shell("git push --force-with-lease origin feat/coupons", text)
    assert shell("git push --force-with-lease origin main", text) and shell("git push -f origin feat/coupons", text)


def test_always_pass_a_flag_to_a_command_is_met_by_a_call_of_the_command_without_it():
    text = "Always pass `--context` explicitly to `kubectl`, and never `kubectl apply` or `kubectl delete` against prod-eu."
    assert shell("kubectl get pods -n shop", text) and shell("kubectl --context prod-eu delete pod x", text)
    assert not shell("kubectl --context staging-eu rollout status deploy/api", text)
    assert not shell("kubectl logs api --context staging", text) and not shell("helm list", text)


def test_a_file_named_with_a_flag_of_it_is_the_flags_rule():
    text = "`scripts/seed.py` を本番データベース（`--env production`）に対して実行しないこと。"
    assert not shell("python scripts/seed.py --env staging", text) and shell("python scripts/seed.py --env=production", text)


def test_pip3_is_pip():
    assert shell("sudo pip3 install --upgrade setuptools", "Never run `sudo pip install`: it breaks the system Python.")


def test_a_file_run_or_fed_to_a_program_is_not_changed_by_it():
    text = "`batch/nightly_report.py` は毎晩 2 時に実行される。変更する場合は運用チームに事前連絡が必要。"
    assert not shell("python batch/nightly_report.py --date 2026-11-26 --dry-run", text)
    assert shell("sed -i s/3/4/ batch/nightly_report.py", text)
    assert hit("Edit", {"file_path": "/r/batch/nightly_report.py", "new_string": "HOUR = 3"}, text)
    text = "Every migration file under `migrations/` must implement `downgrade()`, and an applied one is never edited."
    assert not shell("psql -h db -f migrations/sql/0044_index.sql", text)
    text = "`locales/zh-CN.json` 由翻译团队维护，不要用机器翻译直接覆盖或批量修改。"
    assert shell("python tools/translate.py --to zh-CN --out locales/zh-CN.json", text)  # written, not run
    text = "Never run `scripts/seed.py` against production."
    assert shell("python scripts/seed.py", text)  # a memory about running the file


def test_in_a_scripts_text_a_command_named_alone_is_met_at_the_start_of_a_line():
    text = "The old `docker-compose` binary is not installed: use `docker compose`. In scripts and commands alike."
    assert hit("Edit", {"file_path": "/r/Makefile", "new_string": "db-up:\n\tdocker-compose up -d postgres"}, text)
    assert not hit("Edit", {"file_path": "/r/Makefile", "new_string": "db-up:\n\tdocker compose up -d postgres"}, text)
    assert not hit("Write", {"file_path": "/r/docs/setup.md", "content": "docker-compose up\n"}, text)


def test_a_sentence_saying_when_you_write_is_not_met_by_a_call_that_writes_nothing():
    text = "Commit messages: imperative subject. **How to apply:** whenever you write a `git commit -m`."
    assert not shell("git commit --amend --no-edit", text) and not shell("git commit --fixup=HEAD~2", text)
    assert shell("git commit", text)


def test_what_a_rule_says_must_be_updated_is_what_to_do():
    text = "修改 `src/shop/api/` 下的接口时，必须同步更新 `docs/openapi.yaml`，否则前端生成的客户端会出错。"
    assert not hit("Edit", {"file_path": "/r/docs/openapi.yaml", "new_string": "summary: x"}, text)
    assert hit("Edit", {"file_path": "/r/src/shop/api/v2/orders.py", "new_string": "def list_orders():"}, text)


def test_forbidden_code_on_something_is_met_where_the_text_names_it():
    text = "Do not mock or patch the repository layer (`unittest.mock`, `MagicMock`, `@patch` on repository classes)."
    assert not hit("Edit", {"file_path": "/r/tests/unit/test_mail.py", "new_string": "smtp = MagicMock()"}, text)
    assert hit("Edit", {"file_path": "/r/tests/t.py", "new_string": "@patch('shop.repository.orders.Repo')"}, text)


def test_a_call_that_names_what_the_required_flag_names_manages_it():
    text = "Always pass `--context` explicitly to `kubectl`."
    assert not shell("kubectl config current-context", text) and not shell("kubectl config use-context staging", text)
    assert shell("kubectl get pods", text)


def test_a_rule_against_a_target_is_met_by_a_call_that_names_it():
    text = "Never `kubectl apply` or `kubectl delete` against the prod-eu context without asking."
    assert shell("kubectl --context prod-eu delete pod x", text) and shell("kubectl apply -f a.yaml --context=prod-eu", text)
    assert not shell("kubectl --context staging-eu delete pod x", text)
    assert shell("docker-compose up", "The old `docker-compose` binary is not installed on the CI runners.")


def test_what_a_sentence_says_to_do_things_with_is_no_trigger():
    text = "Do not run `rm -rf` on anything except build output (build/). Move other things to trash with `gio trash`."
    assert hit("Bash", {"command": "rm -rf data/old"}, text)
    assert not hit("Bash", {"command": "gio trash data/old"}, text)


def test_a_call_that_runs_the_prescribed_script_or_uses_its_file_complies():
    text = "---\ndescription: deploys go through scripts/deploy.sh\n---\nDeploys are run with `scripts/deploy.sh <env>`."
    assert not hit("Bash", {"command": "scripts/deploy.sh staging"}, text)
    assert not hit("Bash", {"command": "bash scripts/deploy.sh prod"}, text)
    assert hit("Edit", {"file_path": "/r/scripts/deploy.sh", "new_string": "set -e"}, text)
    text = ("Never run `terraform apply -auto-approve`. Run `terraform plan -out plan.tfplan`, show the plan, and "
            "apply that file after the user agrees.")
    assert not hit("Bash", {"command": "terraform -chdir=infra apply plan.tfplan"}, text)
    assert hit("Bash", {"command": "terraform -chdir=infra apply -target=module.redis"}, text)
    assert hit("Bash", {"command": "terraform apply -auto-approve plan.tfplan"}, text)


def test_a_whole_file_that_defines_what_it_must_complies():
    text = "Every migration file under `migrations/` must implement `downgrade()` as well as `upgrade()`."
    both = "def upgrade():\n    op.add_column('a', c)\n\n\ndef downgrade():\n    op.drop_column('a', 'c')\n"
    assert not hit("Write", {"file_path": "/r/migrations/versions/1_a.py", "content": both}, text)
    stub = "def upgrade():\n    op.add_column('a', c)\n\n\ndef downgrade():\n    pass\n"
    assert hit("Write", {"file_path": "/r/migrations/versions/1_a.py", "content": stub}, text)
    assert hit("Write", {"file_path": "/r/migrations/versions/1_a.py", "content": both.split("\n\n\n")[0]}, text)
    assert hit("Edit", {"file_path": "/r/migrations/versions/1_a.py", "new_string": both}, text)  # an applied one
    assert not hit("Write", {"file_path": "/r/src/a.py", "content": "x = upgrade()\n"}, text)  # no code trigger


def test_a_command_that_only_names_a_path_does_not_act_on_it():
    text = "`.env` holds live credentials. Never print it (`cat`, Read), never write secrets into it."
    assert hit("Bash", {"command": "grep STRIPE .env"}, text)
    assert not hit("Bash", {"command": "git check-ignore -v .env"}, text)
    assert not hit("Bash", {"command": "ls -l .env"}, text)


def test_a_query_that_only_reads_is_a_read():
    text = "The staging database is db-staging.internal. Migrations are applied there by CI, never by hand with psql."
    assert not hit("Bash", {"command": "psql -h db-staging.internal -c \"SELECT count(*) FROM o WHERE t > now()\""},
                   text)
    assert hit("Bash", {"command": "psql -h db-staging.internal -c \"ALTER TABLE o ADD COLUMN n text\""}, text)
    assert hit("Bash", {"command": "psql -h db-staging.internal -c \"SELECT 1\" > out.txt"}, text)


def test_a_manifest_edit_meets_a_rule_about_adding_packages_only_when_it_adds_one():
    text = "Ask the user before adding any new dependency (a new package in package.json, `pnpm add`)."
    assert hit("Edit", {"file_path": "/r/package.json", "new_string": '    "dayjs": "^1.11.0",\n'}, text)
    assert not hit("Edit", {"file_path": "/r/package.json", "new_string": '    "build": "tsc && vite build",\n'}, text)


def test_a_text_already_in_the_style_asked_for_complies():
    text = "`docs/release-notes/` のリリースノートは、です・ます調で書くこと。"
    path = "/r/docs/release-notes/1.md"
    assert not hit("Write", {"file_path": path, "content": "# 1.0\n\n- 返金に対応しました。\n- 表示を改善します\n"}, text)
    assert hit("Write", {"file_path": path, "content": "# 1.0\n\n- 返金に対応しました。\n- 表示の改善\n"}, text)
    assert hit("Edit", {"file_path": path, "new_string": ""}, text)


def test_a_commit_message_with_the_body_asked_for_complies():
    text = ("Commit messages: imperative subject, a blank line, then a body that says why.\n\n"
            "**How to apply:** whenever you write a `git commit -m`.")
    assert hit("Bash", {"command": "git commit -m 'fix stuff'"}, text)
    assert not hit("Bash", {"command": "git commit -m 'Fix totals' -m 'Rounding was per line. SHOP-1'"}, text)
    assert not hit("Bash", {"command": "git commit -m \"Fix totals\n\nRounding was per line.\""}, text)


def test_a_plus_refspec_is_a_forced_push():
    text = "Never run `git push --force` (or `git push -f`) on main."
    assert hit("Bash", {"command": "git push origin +main"}, text)
    assert not hit("Bash", {"command": "git push origin main"}, text)


def test_staging_printing_or_feeding_a_file_is_not_changing_it():
    lock = "Never edit `pnpm-lock.yaml` by hand: regenerate it with the package manager."
    assert hit("Edit", {"file_path": "/r/pnpm-lock.yaml", "new_string": "x"}, lock)
    assert not hit("Bash", {"command": "git add package.json pnpm-lock.yaml"}, lock)
    frozen = "The payments service (`services/payments/`) is frozen: no changes there."
    assert not hit("Bash", {"command": "sed -n 1,40p services/payments/app/refunds.py"}, frozen)
    assert hit("Bash", {"command": "sed -i s/5/6/ services/payments/app/refunds.py"}, frozen)
    translations = "`locales/zh-CN.json` 由翻译团队维护，不要用机器翻译直接覆盖或批量修改。"
    assert not hit("Bash", {"command": "jq '.\"cart.title\"' locales/zh-CN.json"}, translations)
    assert not hit("Bash", {"command": "python -m json.tool locales/zh-CN.json > /dev/null"}, translations)
    assert hit("Bash", {"command": "jq . locales/en.json > locales/zh-CN.json"}, translations)
    env = "`.env` holds live credentials. Never print it (`cat`, Read), never write secrets into it."
    assert not hit("Bash", {"command": "docker compose --env-file .env up -d"}, env)
    assert not hit("Bash", {"command": "source .env && pytest -x -q"}, env)
    assert hit("Bash", {"command": "echo 'KEY=sk_live_1' >> .env"}, env)


def test_a_manifest_edit_of_its_metadata_adds_no_package():
    text = "Ask the user before adding any new dependency (a new package in pyproject.toml or package.json, `pnpm add`)."
    assert not hit("Edit", {"file_path": "/r/package.json", "new_string": '  "version": "2.6.0",\n'}, text)
    assert not hit("Edit", {"file_path": "/r/pyproject.toml", "new_string": 'version = "2.6.0"\n'}, text)
    assert hit("Edit", {"file_path": "/r/pyproject.toml", "new_string": 'requests = "^2.31"\n'}, text)


def test_git_restore_is_git_checkout():
    text = "Never run `git reset --hard`, `git checkout -- .` or `git clean -fd`: the user has uncommitted work."
    assert hit("Bash", {"command": "git restore ."}, text)
    assert not hit("Bash", {"command": "git restore --staged ."}, text)


def test_a_dry_run_does_nothing_and_prose_only_mentions():
    text = "Always pass `--context` to `kubectl`, and never `kubectl apply` against the prod-eu context without asking."
    assert hit("Bash", {"command": "kubectl --context prod-eu apply -f k8s/prod"}, text)
    assert not hit("Bash", {"command": "kubectl --context prod-eu apply -f k8s/prod --dry-run=server"}, text)
    force = "Never run `git push --force` (or `git push -f`) on main."
    assert not hit("Edit", {"file_path": "/r/README.md", "new_string": "Never `git push --force` on main."}, force)
    assert hit("Write", {"file_path": "/r/scripts/sync.sh", "content": "git push --force origin main\n"}, force)


def test_a_text_carrying_the_marker_asked_for_complies():
    text = "`locales/zh-CN.json` 由翻译团队维护，不要用机器翻译直接覆盖或批量修改，只添加新的键并标注待翻译。"
    path = "/r/locales/zh-CN.json"
    assert hit("Edit", {"file_path": path, "new_string": '  "cart.title": "购物车",\n'}, text)
    assert not hit("Edit", {"file_path": path, "new_string": '  "gift.note": "[待翻译] Gift note",\n'}, text)


def test_what_follows_a_cd_is_what_acts_there():
    frozen = "The payments service (`services/payments/`) is frozen: no changes there."
    assert not hit("Bash", {"command": "cd services/payments && pytest -x -q"}, frozen)
    assert hit("Bash", {"command": "cd services/payments && sed -i s/5/6/ app/x.py"}, frozen)
    env = "`.env` holds live credentials. Never print it (`cat`, Read), never write secrets into it."
    assert not hit("Bash", {"command": "chmod 600 .env"}, env)


def test_a_host_is_met_by_a_call_that_connects_to_act_on_it():
    text = "The staging database is db-staging.internal. Migrations are applied there by CI, never by hand with psql."
    assert hit("Bash", {"command": "psql -h db-staging.internal -f migrations/0050.sql"}, text)
    assert hit("Bash", {"command": "DATABASE_URL=postgresql://u@db-staging.internal/shop alembic upgrade head"}, text)
    assert not hit("Bash", {"command": "pg_dump -h db-staging.internal shop > /tmp/s.sql"}, text)
    assert not hit("Bash", {"command": "ping -c 1 db-staging.internal"}, text)
    assert not hit("Edit", {"file_path": "/r/config/staging.yaml", "new_string": "db_host: db-staging.internal"}, text)


def test_help_and_version_do_nothing_and_a_comment_is_not_code():
    assert not hit("Bash", {"command": "docker-compose --version"}, "The old `docker-compose` binary is not installed.")
    assert hit("Bash", {"command": "docker-compose up -d"}, "The old `docker-compose` binary is not installed.")
    text = "In service code (src/), never leave `print()` calls."
    assert not hit("Edit", {"file_path": "/r/src/a.py", "new_string": "# print(x) while debugging\nlog.debug(x)"}, text)
    assert hit("Edit", {"file_path": "/r/src/a.py", "new_string": "print(x)  # debugging"}, text)

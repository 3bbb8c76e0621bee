"""The design's rules (DESIGN.md §5), checked from the source: a lesson is applied when a test fails on it.

Rules that hold are asserted outright. Rules the code does not meet yet are ratchets: the count of
violations may fall, never rise; whoever removes one lowers the number here in the same commit.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "mem"


@cache
def modules() -> dict[str, Path]:
    out = {}
    for f in PKG.rglob("*.py"):
        name = ".".join(f.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = f
    return out


@cache
def tree(name: str) -> ast.Module:
    return ast.parse(modules()[name].read_text(encoding="utf-8"))


@cache
def imports() -> dict[str, frozenset[str]]:
    """module -> the project modules it imports, at any depth of the file (function-level included)."""
    mods = modules()
    graph = {}
    for m, f in mods.items():
        package = m.split(".") if f.name == "__init__.py" else m.split(".")[:-1]
        found = set()
        for node in ast.walk(tree(m)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            else:
                continue
            for n in names:
                while n and n not in mods:
                    n = n.rpartition(".")[0]
                if n and n != m and not m.startswith(n + "."):
                    found.add(n)
        graph[m] = frozenset(found)
    return graph


def cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_cycle_finder_finds_a_cycle():
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles():
    assert cycles(imports()) == []


def test_memdir_imports_only_what_the_design_allows():
    # gitcmd joins DESIGN's list: the history store runs git, and every git mem runs goes through it
    # record (the NamedTuple base without typing) is standard library only
    allowed = ("mem.core.memdir", "mem.core.paths", "mem.core.jscompat", "mem.core.guards", "mem.core.errors",
               "mem.core.gitcmd", "mem.core.record")
    bad = {m: sorted(i for i in deps if not i.startswith(allowed))
           for m, deps in imports().items() if m.startswith("mem.core.memdir")}
    assert {m: v for m, v in bad.items() if v} == {}


#: The job modules, and the modules that are one job's own parts.
JOBS = {
    "mem.core.jobs.extract": (),
    "mem.core.jobs.remember": (),
    "mem.core.jobs.forget": (),
    "mem.core.jobs.session_update": (),
    "mem.core.jobs.dream": ("mem.core.jobs.dream_agent", "mem.core.jobs.dream_checks", "mem.core.jobs.consolidation"),
}


def test_jobs_do_not_import_each_other():
    graph = imports()
    owned = {part: job for job, parts in JOBS.items() for part in parts}
    bad = []
    for job, parts in JOBS.items():
        for m in (job, *parts):
            for dep in graph[m]:
                other = dep if dep in JOBS else owned.get(dep)
                if other is not None and other != job:
                    bad.append(f"{m} imports {dep}")
    assert bad == []


def literal_owners(literal: str) -> list[str]:
    return sorted(m for m in modules()
                  if any(isinstance(n, ast.Constant) and n.value == literal for n in ast.walk(tree(m))))


def test_the_index_name_is_spelled_in_the_layout_module_only():
    assert literal_owners("MEMORY.md") == ["mem.core.memdir.layout"]


def test_the_cli_holds_no_model_sdk_import_at_module_level():
    """mem --help and completion import every command module: none may load an SDK on import."""
    bad = []
    for m in modules():
        if not m.startswith("mem.cli"):
            continue
        for node in tree(m).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                bad += [f"{m}: {n}" for n in names if n.split(".")[0] in ("anthropic", "httpx", "openai")]
    assert bad == []


# -- ratchets: may fall, never rise -------------------------------------------------------------

def _takes_str(annotation: ast.expr | None) -> bool:
    """``str``, or a union that admits one (``str | None``, ``MemoryDir | str``, ``Optional[str]``)."""
    if isinstance(annotation, ast.Name):
        return annotation.id == "str"
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _takes_str(annotation.left) or _takes_str(annotation.right)
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name) \
            and annotation.value.id in ("Optional", "Union"):
        inner = annotation.slice
        return any(_takes_str(e) for e in (inner.elts if isinstance(inner, ast.Tuple) else [inner]))
    return False


def _string_params(m: str) -> list[str]:
    out = []
    for node in ast.walk(tree(m)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
                if arg.arg in ("root", "memory_dir") and _takes_str(arg.annotation):
                    out.append(f"{m}.{node.name}({arg.arg})")
    return out


#: `root: str` / `memory_dir: str` parameters in core: commands and jobs should take a MemoryDir.
#: 100 before recall's sessions and stale notes, status's parts, the dream (its lock, consolidation,
#: checks), eval's run, the jobs' view of existing memories, cost's sums and verify's readers took a
#: MemoryDir (the number here said 117).
#: 66 before: dream.validate, the dream agent, prompt.instructions, eval's cases, doctor's checks, import's
#: helpers, undo's plan, store.record_operation, index.check_headers, scratch_copy, transcripts.memory_writes,
#: routing.team_memories and recall.transcript_facts take the MemoryDir; context._within, prompt._dir_display,
#: relocate.decode_name, store.sweep_temp_files, history._read (its work tree) and verify.Repo (a repository)
#: take any directory, not a memory root.
#: 30 before: portable.carried_files and read_directory (an import's source is another memory directory,
#: only read) take the MemoryDir.
#: 28 before: team.client's Config holds the MemoryDir (make_config takes it; the sync state and lock are its
#: state's), and routing.team_enabled is gone (callers ask MemoryDir.team_enabled).
#: 25 before: events.record takes the MemoryDir.
#: 24 before: memdir.state's state_dir, cache_dir and StateDir take the MemoryDir (MemoryDir.state builds its
#: StateDir; paths.state_key is what turns a directory's path into the state's name).
#: 21 before: RecallResult takes the MemoryDir; recall's offline_index (and select_offline) takes the MemoryDir
#: its headers were scanned from, instead of slicing the root out of a header's path, and reads its indexes.
#: 18 before: layout.team_dir(root) became MemoryDir.team_dir (the team tier asked through the MemoryDir).
#: 24 (from 30) after Claude Code's and qwen-code's rules (six of them) left core/paths for mem/clients/.
#: 17 before: files.within, layout's walkers (walk_entries, walk_files, walk_topic_files, tree_files),
#: manifest.scan and grep's walk and dir_targets take any folder (team/, a scratch copy, qwen-code's
#: .qwen/team-memory, a transcript or projects folder), index.lint and rebuild the folder their index sits in
#: (the memory directory or its team/): none is a memory root. Left: paths, which builds the resolution.
#: Unions count too since (a `memory_dir: str | None` is a string root): context.load_context and
#: events.read_events take a MemoryDir (or None); what is left is MemoryDir.__init__ itself
#: (root: str | os.PathLike, the boundary) and paths, which builds the resolution.
#: 8 before the two merged (the six of paths counted on both sides): MemoryDir.__init__, the boundary, and
#: paths.state_key, which turns a directory's path into the name of its state, are what is left.
STRING_ROOTS = 2


def test_core_signatures_take_a_memory_dir_not_a_string():
    found = [p for m in modules() if m.startswith("mem.core") for p in _string_params(m)]
    assert len(found) <= STRING_ROOTS, f"{len(found)} > {STRING_ROOTS}: new string roots among {found}"


_CLIENT_COMPARE = re.compile(r"""(==|!=)\s*["'](claude|qwen|codex|gemini)["']|["'](claude|qwen|codex|gemini)["']\s*(==|!=)"""
                             r"""|in\s*[(\[{]\s*["'](claude|qwen|codex|gemini)["']""")

def test_client_names_are_compared_in_the_clients_package_only():
    """Per-agent knowledge is a module in mem/clients/ (issue #29): core and CLI ask it, never branch on a name."""
    found = [f"{m}:{i}" for m, f in modules().items() if not m.startswith("mem.clients")
             for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
             if _CLIENT_COMPARE.search(line)]
    assert found == []


#: The switches that turn a client's memory off.
_SWITCHES = frozenset({"CLAUDE_CODE_DISABLE_AUTO_MEMORY", "CLAUDE_CODE_SIMPLE", "autoMemoryEnabled",
                       "enableManagedAutoMemory"})
#: The Claude Code backend turns auto memory off in the Claude Code it runs as a model (no directory
#: is decided).
_READS_SWITCHES = frozenset({"mem.core.jobs.backends.claude_code"})


def test_whether_memory_applies_is_decided_in_the_clients_package_only():
    """One rule (mem.clients.memory_on), asked by recall, prompt, context, extract, path and status alike:
    four versions of it gave four behaviours (issue #29)."""
    found = []
    for m in modules():
        if m.startswith("mem.clients") or m in _READS_SWITCHES:
            continue
        for n in ast.walk(tree(m)):
            if isinstance(n, ast.Attribute) and n.attr in ("auto_memory_enabled", "auto_memory_reason"):
                found.append(f"{m}:{n.lineno} .{n.attr}")
            elif isinstance(n, ast.Name) and n.id == "auto_memory_enabled":
                found.append(f"{m}:{n.lineno} auto_memory_enabled")
            elif isinstance(n, ast.Constant) and n.value in _SWITCHES:
                found.append(f"{m}:{n.lineno} {n.value}")
    assert found == []


#: `global` statements: process-wide mutable state belongs in the environment object.
GLOBALS = 0


def test_no_new_module_level_mutable_state():
    found = [f"{m}:{n.lineno}" for m in modules() for n in ast.walk(tree(m)) if isinstance(n, ast.Global)]
    assert len(found) <= GLOBALS, found


#: Modules outside team/ that import it (to learn whether the team tier is on, or its wording).
TEAM_IMPORTERS = 5  # 7 before: index, extract and remember ask MemoryDir.team_enabled


def test_nothing_new_imports_team_to_learn_the_layout():
    found = sorted(m for m, deps in imports().items()
                   if not m.startswith(("mem.core.team", "mem.cli.team")) and any(d.startswith("mem.core.team") for d in deps))
    assert len(found) <= TEAM_IMPORTERS, found


def _module_state(m: str) -> list[str]:
    """Module-level mutable containers bound to a lowercase name (constants are UPPERCASE; __all__ is no state)."""
    out = []
    for node in tree(m).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        value = node.value
        mutable = isinstance(value, (ast.Dict, ast.List, ast.Set)) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("dict", "list", "set"))
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        out += [f"{m}.{t.id}" for t in targets if mutable and isinstance(t, ast.Name)
                and not t.id.lstrip("_").isupper() and t.id != "__all__"]
    return out


#: Module-level mutable state under a lowercase name (the CLI's run state moved into mem/env.py's Env):
#: render.wrote, the ranker's two caches (layout's warned-once set went: the command prints each Notice once).
MODULE_STATE = 3


def test_no_new_module_level_containers_of_state():
    found = [s for m in modules() for s in _module_state(m)]
    assert len(found) <= MODULE_STATE, found


def _stderr_uses(m: str) -> list[str]:
    return [f"{m}:{n.lineno}" for n in ast.walk(tree(m))
            if isinstance(n, ast.Attribute) and n.attr == "stderr" and isinstance(n.value, ast.Name) and n.value.id == "sys"]


def test_core_does_not_write_to_stderr():
    """Core returns warnings (a ``Notice``) or takes a log (a model call's debug line); the CLI writes them."""
    found = [s for m in modules() if m.startswith("mem.core") for s in _stderr_uses(m)]
    assert found == []


def test_no_bench_or_script_module_shadows_the_standard_library():
    """Tests import bench/ modules; one named like a standard module (bench/secrets.py was) replaced
    `secrets` for every later test in the process (mem team token add failed in-process)."""
    import sys

    clashes = [p.name for d in ("bench", "scripts") for p in (ROOT / d).glob("*.py")
               if p.stem in sys.stdlib_module_names]
    assert clashes == []

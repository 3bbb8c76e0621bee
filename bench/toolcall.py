"""Tool-call reminders: which feedback the PreToolUse hook surfaces; writes its section of bench/RESULTS.md.

    make bench-toolcall                        # quality on the labelled set, into bench/RESULTS.md
    python bench/toolcall.py --quality-only    # printed, RESULTS.md untouched
    python bench/toolcall.py --split tune -v   # each call of the tune split, what it surfaced
    python bench/toolcall.py --quality-only --cv   # and the cross-validated figures, printed

Quality: the labelled set in tests/fixtures/toolcall-bench/ (40 memories in English,
Chinese and Japanese; tool calls of both clients, each with the memories that should
be surfaced before it runs, many with none). The matcher is mem/core/toolmatch.py, as
`mem recall --hook` runs it on a PreToolUse payload (mem/core/hooks/tool.py), without
the session state (each call judged alone). Each call belongs to a split, and the splits'
history is what their figures mean:

* "tune": the matcher's first rules and threshold were chosen on it (8949de2).
* "heldout-1": written with "tune", evaluated blind once (8949de2: precision 0.88, recall
  0.88, false-surface 0.17), then looked at and tuned on (0952dd5).
* "heldout": written after that, evaluated blind twice (8949de2: 0.79 / 0.81 / 0.21;
  0952dd5: 0.86 / 0.88 / 0.18), then looked at: the rules of the matcher that followed were
  chosen looking at all three splits. All of calls.json is tuning data now; its figures
  say the rules do what they say, not how they do on calls nobody has read.
* "heldout-3": a blind set written by someone else after that, in calls-heldout-3.json.
  Evaluated blind once (4d135bd: 0.80 / 0.95 / 0.21), then relabelled under the definition
  below and tuned on: tuning data now, like the three splits of calls.json.
* "heldout-4": the first set written to that definition (148 calls, calls-heldout-4.json),
  evaluated blind once (b1fb97a: 0.86 / 0.96 / 0.17); spent since round 3's third session,
  which tunes on it.
* "heldout-N" (N > 3): the next blind sets, each in calls-heldout-N.json, written by someone
  who read the memories and neither the matcher nor its results. The newest one present that
  is not in SPENT is the goal split, never used to choose anything; every earlier one (and
  every spent one) is tuning data. Without one, the goal line is judged on the newest spent
  split and says it is tuning data.

A memory is relevant to a call (the label definition since heldout-4) when the call is the
kind of action the memory governs and does not already do what the memory asks: a call that
complies (passes the demanded flag, runs the prescribed command, targets the allowed branch)
is labelled with nothing.

``--cv`` estimates the blind figures from the tuning splits alone: for each of them, the
matcher's named rules (toolmatch.RULES, by forward selection), the threshold and the cap per
call are chosen on the others and measured on it; and each rule is turned off alone. The
rules were thought of while reading the errors of all the tuning splits, so even this
estimate is on the kind side.

* precision: of the memories surfaced over all calls, the share that were labelled for their call.
* recall: of the memories labelled over all calls, the share that were surfaced.
* false-surface: the share of calls labelled with nothing that surfaced anything.

The hook's cost is measured by bench/run.py (the start-up table), next to the prompt hook's.

The section sits between ``<!-- toolcall:start -->`` and ``<!-- toolcall:end -->`` (bench/results.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

BENCH = os.path.join(ROOT, "tests", "fixtures", "toolcall-bench")
CWD = "/home/dev/shop"
#: The splits of calls.json (all tuning data now); the blind sets are calls-heldout-N.json, N > 2.
CALLS_SPLITS = ("tune", "heldout-1", "heldout")
BLIND_FILE = re.compile(r"calls-(heldout-(\d+))\.json")
#: Blind splits evaluated blind and then looked at: tuning data, whatever comes after them.
SPENT = frozenset({"heldout-3", "heldout-4"})
GOALS = {"precision": 0.90, "recall": 0.80, "false_surface": 0.05}
SLICES = {"bash": "shell commands", "edit": "edits", "write": "writes", "read": "reads",
          "en": "English memories", "zh": "Chinese", "ja": "Japanese", "claude": "Claude Code names",
          "qwen": "qwen-code names"}


def blind_splits() -> list[str]:
    """The splits of the calls-heldout-N.json files present, oldest (smallest N) first."""
    found = [(int(m.group(2)), m.group(1)) for name in os.listdir(BENCH) if (m := BLIND_FILE.fullmatch(name))]
    return [split for _, split in sorted(found)]


def load_calls() -> list[dict]:
    """calls.json, and each calls-heldout-N.json there (its calls in split heldout-N)."""
    with open(os.path.join(BENCH, "calls.json"), encoding="utf-8") as fh:
        calls = json.load(fh)
    for split in blind_splits():
        with open(os.path.join(BENCH, f"calls-{split}.json"), encoding="utf-8") as fh:
            blind = json.load(fh)
        ids = {c["id"] for c in calls}
        # its ids may repeat earlier ones: each call is looked up by id
        calls += [{**c, "split": split, "id": f"{split}/{c['id']}" if c["id"] in ids else c["id"]} for c in blind]
    return calls


def splits_of(calls: list[dict]) -> list[str]:
    """The splits present, in order: calls.json's, then the blind files' oldest first."""
    present = {c["split"] for c in calls}
    later = sorted(present - set(CALLS_SPLITS), key=lambda s: int(s.rsplit("-", 1)[-1]) if s[-1:].isdigit() else 0)
    return [s for s in CALLS_SPLITS if s in present] + later


def goal_split(calls: list[dict]) -> str:
    """The newest blind split not yet spent; else the newest split (tuning data, and said so)."""
    splits = splits_of(calls)
    fresh = [s for s in splits if s not in CALLS_SPLITS and s not in SPENT]
    return fresh[-1] if fresh else splits[-1]


def is_blind(split: str) -> bool:
    return split not in CALLS_SPLITS and split not in SPENT


def tuning_splits(calls: list[dict]) -> list[str]:
    """Every split but the blind goal split: what --cv chooses and measures on."""
    goal = goal_split(calls)
    return [s for s in splits_of(calls) if not (s == goal and is_blind(s))]


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def meets(f: dict) -> bool:
    return all(f[k] is not None and (f[k] <= goal if k == "false_surface" else f[k] >= goal)
               for k, goal in GOALS.items())


def surfaced_for(calls: list[dict], **select) -> dict[str, list[str]]:
    """call id -> the relpaths the matcher surfaces, over a scan of the bench's memories
    (``select``: toolmatch.select's min_weight and limit, else its defaults)."""
    from mem.core import toolmatch
    from mem.core.memdir import manifest

    headers = manifest.scan(os.path.join(BENCH, "memories"))
    candidates = toolmatch.memory_triggers(headers)
    out = {}
    for c in calls:
        call = toolmatch.read_call(c["tool_name"], c["tool_input"], CWD)
        out[c["id"]] = [] if call is None else [k for k, _ in toolmatch.select(call, candidates, **select)]
    return out


#: What --cv chooses from: the threshold and the cap of memories per call ...
GRID = [(w, n) for w in (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0) for n in (1, 2, 3)]


def scored_for(calls: list[dict], rules: frozenset) -> dict[str, list[tuple[str, float]]]:
    """call id -> (relpath, score) of every memory that scores, best first, with only ``rules`` on."""
    from mem.core import toolmatch

    saved = toolmatch.RULES
    toolmatch.RULES = rules
    try:
        return {k: v for k, v in _scored(calls).items()}
    finally:
        toolmatch.RULES = saved


def _scored(calls: list[dict]) -> dict[str, list[tuple[str, float]]]:
    from mem.core import toolmatch
    from mem.core.memdir import manifest

    candidates = toolmatch.memory_triggers(manifest.scan(os.path.join(BENCH, "memories")))
    out = {}
    for c in calls:
        call = toolmatch.read_call(c["tool_name"], c["tool_input"], CWD)
        out[c["id"]] = [] if call is None else toolmatch.select(call, candidates, min_weight=0.01, limit=len(candidates))
    return out


def _cut(scored: dict, params: tuple) -> dict[str, list[str]]:
    return {k: [rel for rel, s in v if s >= params[0]][:params[1]] for k, v in scored.items()}


def _shortfall(f: dict) -> tuple:
    """How far figures are from the goals (0 when met), then how good they are: smaller is better."""
    p, r, fs = (f["precision"] or 0.0), (f["recall"] or 0.0), (f["false_surface"] or 0.0)
    miss = max(0.0, GOALS["precision"] - p) + max(0.0, GOALS["recall"] - r) + max(0.0, fs - GOALS["false_surface"])
    return (round(miss, 6), round(-(p + r - fs), 6))


def _row(label: str, f: dict) -> str:
    return (f"{label} | {fmt(f['precision'])} | {fmt(f['recall'])} | {fmt(f['false_surface'])} (of "
            f"{f['no_feedback_calls']}) | {f['surfaced']} / {f['labelled']} |")


def cross_validate(calls: list[dict]) -> tuple[str, dict]:
    """Each tuning split measured with the rules, threshold and cap chosen on the others (never the blind
    goal split).

    The rules (toolmatch.RULES) are chosen by forward selection from none: the rule that most
    improves the other splits (with its best threshold and cap there) joins while one does. Returns
    the tables and the pooled figures of the measured splits."""
    from mem.core import toolmatch

    tuning_names = tuning_splits(calls)
    tuning = [c for c in calls if c["split"] in tuning_names]
    everything = frozenset(toolmatch.RULES)
    default = (toolmatch.MIN_WEIGHT, toolmatch.MAX_PER_CALL)
    memo: dict[frozenset, dict] = {}

    def scored(rules: frozenset) -> dict:
        if rules not in memo:
            memo[rules] = scored_for(tuning, rules)
        return memo[rules]

    def best(rules: frozenset, train: list[dict]) -> tuple[tuple, tuple]:
        sc = scored(rules)
        params = min(GRID, key=lambda p: (_shortfall(figures(train, _cut(sc, p))), p != default))
        return _shortfall(figures(train, _cut(sc, params))), params

    rows = ["| measured on | chosen on | rules chosen | threshold, cap | precision | recall | false-surface | "
            "surfaced / labelled |", "|---|---|---|---|---:|---:|---:|---:|"]
    pooled: dict[str, list[str]] = {}
    fixed: dict[str, list[str]] = {}
    for held in tuning_names:
        train = [c for c in tuning if c["split"] != held]
        test = [c for c in tuning if c["split"] == held]
        chosen: frozenset = frozenset()
        now, params = best(chosen, train)
        while True:
            trials = [(best(chosen | {r}, train), r) for r in sorted(everything - chosen)]
            if not trials:
                break
            (score, p), rule = min(trials)
            if score >= now:
                break
            chosen, now, params = chosen | {rule}, score, p
        got = _cut(scored(chosen), params)
        pooled.update({c["id"]: got[c["id"]] for c in test})
        _, fixed_params = best(everything, train)
        fixed_got = _cut(scored(everything), fixed_params)
        fixed.update({c["id"]: fixed_got[c["id"]] for c in test})
        names = ", ".join(sorted(chosen)) if chosen != everything else "all"
        rows.append(_row(f"| {held} | the other {len(tuning_names) - 1} | {names or 'none'} | "
                         f"{params[0]:g}, {params[1]}", figures(test, got)))
    f = figures(tuning, pooled)
    rows.append(_row("| **pooled** | | | ", f))
    rows.append(_row("| pooled, all rules on (threshold chosen per split) | | all | ", figures(tuning, fixed)))
    rows += ["", "Each rule turned off alone (the present threshold and cap), and none of them (the first "
             "version's triggers):", "",
             "| rules | " + " | ".join(f"{s}: precision / recall / false-surface" for s in tuning_names) + " |",
             "|---|" + "---:|" * len(tuning_names)]
    unsupported = []
    full = _cut(scored(everything), default)
    for label, rules in [("all", everything), *((f"all but {r}", everything - {r}) for r in sorted(everything)),
                         ("none", frozenset())]:
        got = _cut(scored(rules), default)
        if len(rules) == len(everything) - 1 and got == full:
            unsupported += everything - rules
        cells = []
        for split in tuning_names:
            g = figures([c for c in tuning if c["split"] == split], got)
            cells.append(f"{fmt(g['precision'])} / {fmt(g['recall'])} / {fmt(g['false_surface'])}")
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows), {**f, "unsupported": sorted(unsupported)}


def figures(calls: list[dict], got: dict[str, list[str]]) -> dict:
    surfaced = right = labelled = found = empty = false = 0
    for c in calls:
        want, have = set(c["relevant"]), set(got[c["id"]])
        surfaced += len(have)
        right += len(have & want)
        labelled += len(want)
        found += len(want & have)
        if not want:
            empty += 1
            false += bool(have)
    return {"calls": len(calls), "precision": right / surfaced if surfaced else None,
            "recall": found / labelled if labelled else None, "false_surface": false / empty if empty else None,
            "surfaced": surfaced, "labelled": labelled, "no_feedback_calls": empty}


def in_slice(c: dict, name: str) -> bool:
    return name in (c.get("kind"), c.get("lang"), c.get("client"))


def fmt(x) -> str:
    return "–" if x is None else f"{x:.2f}"


def table(calls: list[dict], got: dict) -> tuple[str, dict]:
    rows = ["| split | slice | calls | precision | recall | false-surface | surfaced / labelled |",
            "|---|---|---:|---:|---:|---:|---:|"]
    overall = {}
    for split in splits_of(calls):
        half = [c for c in calls if c["split"] == split]
        if not half:
            continue
        for name in ("all", *SLICES):
            part = half if name == "all" else [c for c in half if in_slice(c, name)]
            if not part:
                continue
            f = figures(part, got)
            if name == "all":
                overall[split] = f
            label = "**all**" if name == "all" else f"{name} ({SLICES[name]})"
            rows.append(f"| {split} | {label} | {f['calls']} | {fmt(f['precision'])} | {fmt(f['recall'])} | "
                        f"{fmt(f['false_surface'])} (of {f['no_feedback_calls']}) | {f['surfaced']} / {f['labelled']} |")
    return "\n".join(rows), overall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quality-only", action="store_true", help="print; leave RESULTS.md as it is")
    ap.add_argument("--split", help="only this split (tune, heldout-1, heldout, heldout-N; with -v: per call)")
    ap.add_argument("--cv", action="store_true", help="also cross-validate the rules and threshold over the tuning splits")
    ap.add_argument("-v", "--verbose", action="store_true", help="each call, what it surfaced and should have")
    args = ap.parse_args()
    calls = load_calls()
    goal = goal_split(calls)
    if args.split:
        calls = [c for c in calls if c["split"] == args.split]
    got = surfaced_for(calls)
    if args.verbose:
        for c in calls:
            want, have = set(c["relevant"]), set(got[c["id"]])
            mark = "ok " if want == have else "BAD"
            text = c["tool_input"].get("command") or c["tool_input"].get("file_path") or c["tool_input"].get(
                "absolute_path") or ""
            print(f"{mark} {c['id']} {c['tool_name']:<17} {text[:60]:<60} want={sorted(want)} got={sorted(have)}")
    text, overall = table(calls, got)
    print(text)
    cv_text, cv = "", {}
    if args.cv or (not args.quality_only and not args.split):
        cv_text, cv = cross_validate(calls)
        print()
        print(cv_text)
    held = overall.get(goal)
    met = held is not None and meets(held)
    if not args.quality_only and not args.split:
        from results import write_section

        blind = is_blind(goal)
        n_goal = sum(c["split"] == goal for c in calls)
        tuned = [x for x in splits_of(calls) if not (x == goal and blind)]
        body = ["## Tool-call reminders (PreToolUse)", "",
                "`python bench/toolcall.py` (make bench-toolcall) over tests/fixtures/toolcall-bench: "
                f"{len(calls)} tool calls against 40 memories. Goals (precision ≥ {GOALS['precision']}, recall ≥ "
                f"{GOALS['recall']}, false-surface ≤ {GOALS['false_surface']}) are judged on a blind split: "
                + (f"{goal} (calls-{goal}.json, {n_goal} calls), never used to choose anything. " if blind else
                   "the newest calls-heldout-N.json not yet spent; none is here, so the goal line below is judged on "
                   f"{goal}, which is tuning data. ")
                + "A memory is relevant to a call when the call is the kind of action the memory governs and does "
                "not already do what it asks: a call that complies (passes the demanded flag, runs the prescribed "
                "command, targets the allowed branch) is labelled with nothing (tune, heldout-1, heldout and heldout-3 "
                "were relabelled under that definition in ed5768e, 14 labels, each with its reason in the commit "
                "message; later splits are written with it). The splits " + ", ".join(tuned) + " are tuning data: "
                "the first rules were chosen on tune, and every other one was evaluated blind once or twice and then "
                "tuned on. The present rules were written with all of them in view, so their figures below show the "
                "rules do what they say, not how they do on calls nobody has read. Slices: by tool kind, by the "
                "memories' language, by client's tool names.",
                "", text, "",
                (f"Goals on {goal} (blind) {'met' if met else 'NOT met'}." if blind else
                 f"No blind split yet: on {goal} (tuning data now) the goals are {'met' if met else 'NOT met'}, which "
                 "says nothing about calls nobody has read."), "",
                "Cross-validated over the tuning splits (`python bench/toolcall.py --cv`): for each, the rules "
                "(toolmatch.RULES, by forward selection from none: the one that most improves the other splits joins "
                "while one does), the threshold and the cap per call are chosen on the other splits and measured on "
                "it. A rule the other splits do not support is left out, so a split's own errors cannot choose its "
                "rules; but every rule was thought of while reading errors of all of them, so the estimate is still "
                "on the kind side. \"none\" is the present triggers with every named rule off: close to, not the "
                "same as, the matcher of 0952dd5 (combined short flags in any order, `--` and `.` as pieces, `sudo` as "
                "a word, bare paths ending in / or an extension are always on). Forward selection takes one rule at a "
                "time, so it leaves out rules that help only together (on the heldout-3 fold, code alone raises recall "
                "on the other three splits from 0.95 to 1.00 but their false-surface from 0.052 to 0.065; with scope, "
                "which keeps `print(` to src/, it is back to 0.052 with recall 1.00), and a rule only one split's "
                "calls turn on is never chosen when that split is measured: its pooled row is the stricter estimate, the row with all rules on the kinder one.", "",
                cv_text, "",
                "Blind evaluations so far (all calls, precision / recall / false-surface, each under the labels of "
                "its day): the first matcher (8949de2) on heldout-1 0.88 / 0.88 / 0.17 (0.93 / 0.93 / 0.00 on tune, "
                "where it was chosen); the same matcher on heldout 0.79 / 0.81 / 0.21; the matcher of 0952dd5 "
                "(tuned on tune and heldout-1) on heldout 0.86 / 0.88 / 0.18; the matcher of 4d135bd (tuned on all "
                "of calls.json, cross-validated there at 0.95 / 0.93 / 0.06) on heldout-3 0.80 / 0.95 / 0.21, "
                "written by a writer who read the memories but neither the matcher nor its results; the matcher of "
                "b1fb97a (tuned on the four splits before it, cross-validated at 0.91 / 0.93 / 0.10) on heldout-4 "
                "0.86 / 0.96 / 0.17. Each "
                "cross-validated figure was kinder than the blind one that followed. The heldout errors of 0952dd5 "
                "led to the rules as-written, clauses, looks, argument, adds-package, two-things, refspec, hosts, "
                "code, scope and when-action (`pnpm add` no longer meets `pnpm install`, 先改 `config/staging.yaml` "
                "says what to do instead, `kubectl apply` named does not meet `kubectl get pods` ...). Of heldout-3's "
                "12 false surfaces, 5 were calls that already complied with the memory (`git push --force-with-lease` "
                "on one's own branch, `kubectl --context staging-eu ...`, `pytest -x -q` when the memory asks for it, "
                "`make proto` when it says to run it), which calls.json had labelled relevant; the others were near "
                "misses (`terraform plan` against the apply rule, a unit-test edit against the real-database rule, "
                "`git commit --fixup` against the message rule). After that evaluation the labels of all four splits "
                "were brought to the definition above and heldout-3 became tuning data; its errors then led to the "
                "rules prescriptions (what a memory says to do is no trigger, and a call that does it complies), "
                "requirements (\"always pass `--context` to `kubectl`\" is met by a kubectl call without it), "
                "conditions (a file named with a flag of it is the flag's rule), versioned-names (pip3 is pip), runs (a file "
                "a call runs or feeds to a program is not changed by it), scripts (a command named alone in a "
                "Makefile's recipe), writes-nothing (`git commit --no-edit` writes no message), must-do (必须同步更新 "
                "`docs/openapi.yaml` says what to do), objects (`@patch` on repository classes needs them in the text) "
                "and managed (`kubectl config current-context` needs no `--context`); targets (a rule against "
                "prod-eu is met by a call naming it) came from the principle, no labelled call turns it on. "
                "Of heldout-4's 13 wrong reminders (on 12 of its 71 calls with no applicable feedback, and one "
                "beside a right one), all came on calls that already did what the memory asks or did not act on "
                "what it governs. They led to one new rule and widened ones, each stated as a principle and then "
                "probed with compliant calls written from the memories (not labelled, not in the bench): "
                "asked-text (a text that already has what a rule asks of it complies: a new migration defining "
                "`upgrade()` and `downgrade()` beyond `pass`, release notes whose sentences all end in です・ます, "
                "a key marked 待翻译 as asked, a commit message with the body asked for), prescriptions (a call "
                "that runs the prescribed script, `scripts/deploy.sh staging`, or uses the prescribed command's "
                "file, `terraform apply plan.tfplan`, complies), via (what a sentence says to do things *with*, "
                "`gio trash`, is what to do), checks (`ls`, `chmod`, `git check-ignore`, `git add` name a path "
                "without changing it; after `cd` what follows acts), shell-reads (`psql -c \"SELECT ...\"`, "
                "`sed -n`, `jq` only read; `> /dev/null` writes nothing), runs (`source .env`, `--env-file .env` "
                "feed a file to a program), adds-package (a manifest edit that declares no package adds none), "
                "looks (`--dry-run`, `--help`, `--version` do nothing), code (a comment line is not code), scripts (prose such as README.md mentions a command, runs "
                "nothing), hosts (db-staging.internal is met by a client that connects to act, not by a config naming it, `ping` or `pg_dump`), refspec (`git push origin +main` forces) and versioned-names (`git restore .` is "
                "`git checkout -- .`). "
                "So heldout-3's figures above are not blind"
                + (f"; {goal}'s are the blind figure of the present matcher (its writer read the memories and the "
                   "label definition, neither the matcher nor any result; evaluated once). Every blind evaluation so "
                   "far, precision / recall / false-surface: 0.88 / 0.88 / 0.17, 0.79 / 0.81 / 0.21, 0.86 / 0.88 / 0.18, "
                   "0.80 / 0.95 / 0.21, 0.86 / 0.96 / 0.17, and on "
                   f"{goal} {_f(held['precision'])} / {_f(held['recall'])} / {_f(held['false_surface'])}. "
                   "Every set uses the same 40 memories, whose wording the rules were written against: these "
                   "figures say how the matcher does on calls nobody had read, not on memories nobody had read." if blind else
                   ", and no blind figure of the present matcher exists until a new blind split is evaluated.")
                + " Rules no tuning call supports (turning one off changes nothing "
                "surfaced), thought of from their principle or on calls written to probe the rules (not labelled data, "
                "not in the bench) and "
                f"kept for the principles they state: {', '.join(cv['unsupported']) or 'none'}."]
        write_section("toolcall", "\n".join(body))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())

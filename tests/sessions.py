"""Long Claude Code sessions with planted facts, for extraction coverage (tests and bench/).

    facts = write_session(path, target_bytes=5_000_000, fact_every=10)
    ... run mem extract on path ...
    reached = [f for f in facts if any(f in text for text in request_texts)]

The shape is Claude Code's JSONL: one line per content block, ``user`` lines for prompts and tool
results (the result duplicated in ``toolUseResult``, as the client writes it), ``assistant``
lines sharing their API ``message.id``, uuids chained by ``parentUuid``, ISO timestamps. Turns
read a large file (16 KB), and every fourth turn fans out into 45 tool calls with small results;
every ``fact_every``-th prompt states a fact the user wants kept (half of them in fan-out turns),
with a unique code so its presence in a request can be checked exactly.
"""

from __future__ import annotations

import datetime
import json
import random
import uuid as uuidlib

SESSION = "5e55104a-0000-4000-8000-00000000b0d9"
START = datetime.datetime(2026, 3, 10, 9, 0, tzinfo=datetime.timezone.utc)


def fact_text(n: int) -> str:
    return f"the staging database for service {n} is fact-{n:04d}-heron, and it resets every Monday"


def _source_file(rng: random.Random, size: int) -> str:
    lines = []
    while sum(len(line) + 1 for line in lines) < size:
        i = len(lines)
        lines.append(rng.choice([
            f"def handler_{i}(event, context):",
            f"    return {{'status': {200 + i % 5}, 'body': json.dumps(rows[{i}:{i + 10}])}}",
            f"# TODO(ops-{i}): retry with backoff when the queue is saturated",
            f"    cfg = load_config('/etc/app/{i % 7}.yaml')  # see runbook",
        ]))
    return "\n".join(lines)[:size]


class _Writer:
    def __init__(self, fh):
        self.fh = fh
        self.parent: str | None = None
        self.clock = START
        self.bytes = 0

    def line(self, kind: str, message: dict, **extra) -> None:
        uid = str(uuidlib.UUID(int=random.getrandbits(128), version=4))
        self.clock += datetime.timedelta(seconds=7)
        obj = {"parentUuid": self.parent, "isSidechain": False, "type": kind, "message": message, "uuid": uid,
               "timestamp": self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
               "userType": "external", "cwd": "/home/dev/app", "sessionId": SESSION, "version": "2.1.197",
               "gitBranch": "main", **extra}
        data = json.dumps(obj, ensure_ascii=False) + "\n"
        self.fh.write(data)
        self.bytes += len(data.encode("utf-8"))
        self.parent = uid

    def prompt(self, text: str) -> None:
        self.line("user", {"role": "user", "content": text}, promptSource="user")

    def assistant(self, block: dict, msg_id: str) -> None:
        self.line("assistant", {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
                                "content": [block], "usage": {"input_tokens": 1200, "output_tokens": 80}})

    def tool_round(self, calls: list[tuple[str, dict, str]], msg_id: str) -> None:
        ids = []
        for name, args, _ in calls:
            ids.append(f"toolu_{uuidlib.UUID(int=random.getrandbits(128)).hex[:24]}")
            self.assistant({"type": "tool_use", "id": ids[-1], "name": name, "input": args}, msg_id)
        for tid, (_, args, result) in zip(ids, calls):
            self.line("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                            "content": result}]},
                      toolUseResult={"type": "text", "file": {"filePath": args.get("file_path", ""), "content": result}})


def write_session(path: str, *, target_bytes: int, fact_every: int = 5, seed: int = 13) -> list[str]:
    """Write a session of about ``target_bytes`` to ``path``; the facts planted, in order."""
    rng = random.Random(seed)
    random.seed(seed)
    facts: list[str] = []
    big = [_source_file(rng, 16_000) for _ in range(4)]
    with open(path, "w", encoding="utf-8") as fh:
        w = _Writer(fh)
        turn = 0
        while w.bytes < target_bytes:
            turn += 1
            if turn % fact_every == 0:
                facts.append(fact_text(len(facts) + 1))
                w.prompt(f"Before you go on: please remember that {facts[-1]}. Now continue with step {turn}.")
            else:
                w.prompt(f"Continue with step {turn}: look at the handlers and tidy what you find.")
            msg = f"msg_{turn:06d}"
            w.assistant({"type": "text", "text": f"Looking at the code for step {turn}."}, msg)
            if turn % 4 == 0:  # a fan-out of 45 calls, each with a small result
                calls = [("Grep", {"pattern": f"handler_{k}", "path": "src/"}, big[k % 4][k * 200:k * 200 + 600])
                         for k in range(45)]
            else:
                calls = [("Read", {"file_path": f"/home/dev/app/src/module_{turn}.py"}, big[turn % 4])]
            w.tool_round(calls, msg)
            w.assistant({"type": "text", "text": f"Step {turn} is done; the handlers are tidier now."}, f"{msg}_end")
            w.clock += datetime.timedelta(hours=1)
    return facts

"""Everything a hook does: payloads in and output out (payload.py), and the decisions of each flow.

A client runs a hook command with one JSON payload on stdin and reads JSON from its stdout; the
CLI reads the payload, calls one flow, and prints what it returns.
"""

from mem.core.hooks.payload import (  # noqa: F401 - the package's interface
    OUTPUT_LIMIT,
    CONTEXT_LIMIT,
    VERSION_TAIL_BYTES,
    MAX_PAYLOAD_BYTES,
    BASE_FIELDS,
    EVENTS,
    RECALL_EVENTS,
    HookPayload,
    parse_payload,
    read_payload,
    subcommand,
    mark_fired,
    hook_where,
    hook_resolution,
    render_output,
    parse_version,
    client_version,
    version_in_lines,
    NOT_READ,
    escapes_context,
)

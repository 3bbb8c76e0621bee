#!/usr/bin/env bash
# The model tests against the oldest anthropic SDK pyproject.toml admits.
#
#   scripts/ci-sdk-floor.sh             # the floor named by "anthropic>=X" in pyproject.toml
#   scripts/ci-sdk-floor.sh 0.76.0      # any other version (how the floor was found)
#
# Builds a throwaway venv under build/ with that SDK and mem (editable, so the
# subprocess tests run this checkout), then runs the tests that call a model
# through the local fake Messages-API server (and its Bedrock and Vertex fronts, with the SDK's extras): about 3 minutes on 2 cores, the venv build included.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
FLOOR="$(sed -n 's/^ *"anthropic>=\([0-9.]*\),.*/\1/p' pyproject.toml)"
VERSION="${1:-$FLOOR}"
[ -n "$VERSION" ] || { echo "ci-sdk-floor: no anthropic>= floor in pyproject.toml" >&2; exit 2; }
VENV="build/sdk-$VERSION"

if [ ! -x "$VENV/bin/mem" ] || ! "$VENV/bin/python" -c 'import xdist, boto3, google.auth' 2>/dev/null; then
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    # anthropic pinned in the same resolve as mem, so pip cannot pick a newer one.
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "anthropic[bedrock,vertex]==$VERSION" -e . pytest pytest-xdist "hypothesis>=6.100"
fi
echo "ci-sdk-floor: anthropic $("$VENV/bin/python" -c 'import anthropic; print(anthropic.__version__)')" >&2
# The default model is newer than the floor's list of known models, and needs not be in it.
# Two workers per core, as make test: the model tests mostly wait on their local servers.
workers=$((2 * $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)))
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider -n "$workers" --dist loadfile \
    --deselect tests/test_llm.py::test_default_model_is_known_and_not_deprecated \
    tests/test_llm.py tests/test_recall_model.py tests/test_agent.py tests/test_agent_loop.py \
    tests/test_extract.py tests/test_extract_cli.py tests/test_remember.py tests/test_forget.py \
    tests/test_session_update.py tests/test_dream_agent.py tests/test_cloud_backends.py

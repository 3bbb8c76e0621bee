"""Build dist/mem-pyX.Y.pyz with shiv for one Python: compiled on first run, byte-for-byte reproducible.

    python3 scripts/build_zipapp.py [--python PYTHON] [OUTPUT]

The archive carries compiled modules (pydantic-core, jiter, PyYAML's) for one
Python minor version: PYTHON's (default: the one running this script), whose
pip stages them. Its name says which (mem-py3.11.pyz); its shebang starts any python3, and
its launcher refuses any other than the one built for with one line naming it (exit 3).

Two builds of the same tree, from any two paths, give the same sha256: the
staged site-packages drop pip's direct_url.json (it records the source path)
and shiv --reproducible fixes every timestamp.

The archive is shiv's, entry for entry, but for its __main__.py, which becomes
scripts/zipapp_main.py: a launcher that checks the Python version, starts
straight from shiv's extraction cache and hands every other case to shiv's own
bootstrap (saying, on the first run, that it unpacks).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCHER = os.path.join(ROOT, "scripts", "zipapp_main.py")


def python_version(python: str) -> tuple[int, int]:
    out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         check=True, capture_output=True, text=True).stdout
    major, minor = out.strip().split(".")
    return int(major), int(minor)


def default_output(version: tuple[int, int]) -> str:
    return os.path.join(ROOT, "dist", "mem-py%d.%d.pyz" % version)


def launcher(version: tuple[int, int]) -> bytes:
    with open(LAUNCHER, encoding="utf-8") as fh:
        text = fh.read()
    text, n = re.subn(r"(?m)^BUILT_FOR = \(\d+, \d+\)", "BUILT_FOR = (%d, %d)" % version, text)
    assert n == 1, "scripts/zipapp_main.py has no BUILT_FOR line"
    return text.encode("utf-8")


def stage(site: str, python: str) -> None:
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-compile", "--target", site, ROOT],
        check=True,
    )
    for name in os.listdir(site):
        if not name.endswith(".dist-info"):
            continue
        info = os.path.join(site, name)
        direct = os.path.join(info, "direct_url.json")
        if os.path.exists(direct):
            os.unlink(direct)
            record = os.path.join(info, "RECORD")
            with open(record, encoding="utf-8") as fh:
                lines = [line for line in fh if not line.startswith(f"{name}/direct_url.json,")]
            with open(record, "w", encoding="utf-8") as fh:
                fh.writelines(lines)
    # pip leaves bin/ scripts with this interpreter's path in their shebang, and share/ holds the
    # man pages and completions (`make install` puts those where man and the shells look).
    shutil.rmtree(os.path.join(site, "bin"), ignore_errors=True)
    shutil.rmtree(os.path.join(site, "share"), ignore_errors=True)


def replace_main(archive: str, main_py: bytes) -> None:
    """Rewrite ARCHIVE with MAIN_PY as its __main__.py; every other entry, its order,
    timestamps, modes and compression, and the shebang stay as they are."""
    with open(archive, "rb") as fh:
        data = fh.read()
    prefix = data[: data.index(b"\n") + 1]
    tmp = archive + ".tmp"
    with zipfile.ZipFile(archive) as src, open(tmp, "wb") as fh:
        fh.write(prefix)
        with zipfile.ZipFile(fh, "w") as dst:
            for info in src.infolist():
                body = main_py if info.filename == "__main__.py" else src.read(info)
                dst.writestr(info, body, compress_type=info.compress_type)
    os.chmod(tmp, os.stat(archive).st_mode)
    os.replace(tmp, archive)


#: Any python3: the launcher checks the version and names the one needed in one line, exit 3
#: (a shebang naming python3.11 failed with env's "No such file or directory", exit 127, where
#: only another python3 was installed).
SHEBANG = "/usr/bin/env -S python3 -sE"


def build(output: str | None = None, python: str = sys.executable) -> str:
    version = python_version(python)
    output = os.path.abspath(output or default_output(version))
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mem-zipapp-") as tmp:
        site = os.path.join(tmp, "site-packages")
        stage(site, python)
        env = dict(os.environ, SOURCE_DATE_EPOCH=os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
        shiv = os.path.join(os.path.dirname(sys.executable), "shiv")
        subprocess.run(
            [shiv, "--site-packages", site, "--reproducible", "--compile-pyc",
             "-e", "mem.__main__:main", "-p", SHEBANG, "-o", output],
            check=True, env=env,
        )
    replace_main(output, launcher(version))
    return output


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", help="the archive to write (default: dist/mem-pyX.Y.pyz)")
    parser.add_argument("--python", default=sys.executable,
                        help="the Python to build for, whose pip stages the packages (default: this one)")
    args = parser.parse_args()
    print(build(args.output, args.python))

"""Build dist/mem.pyz with shiv: compiled on first run, byte-for-byte reproducible.

    python scripts/build_zipapp.py [OUTPUT]

Two builds of the same tree, from any two paths, give the same sha256: the
staged site-packages drop pip's direct_url.json (it records the source path)
and shiv --reproducible fixes every timestamp.

The archive is shiv's, entry for entry, but for its __main__.py, which becomes
scripts/zipapp_main.py: a launcher that starts straight from shiv's extraction
cache and hands every other case to shiv's own bootstrap.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHEBANG = "/usr/bin/env -S python3 -sE"
LAUNCHER = os.path.join(ROOT, "scripts", "zipapp_main.py")


def stage(site: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
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


def build(output: str) -> str:
    output = os.path.abspath(output)
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mem-zipapp-") as tmp:
        site = os.path.join(tmp, "site-packages")
        stage(site)
        env = dict(os.environ, SOURCE_DATE_EPOCH=os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
        shiv = os.path.join(os.path.dirname(sys.executable), "shiv")
        subprocess.run(
            [shiv, "--site-packages", site, "--reproducible", "--compile-pyc",
             "-e", "mem.__main__:main", "-p", SHEBANG, "-o", output],
            check=True, env=env,
        )
    with open(LAUNCHER, "rb") as fh:
        replace_main(output, fh.read())
    return output


if __name__ == "__main__":
    out = build(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "dist", "mem.pyz"))
    print(out)

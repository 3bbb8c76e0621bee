# mem zipapp launcher, written by scripts/build_zipapp.py as the archive's __main__.py.
#
# shiv's runtime (_bootstrap) opens this archive a second time with zipfile to read
# environment.json, and imports compileall, subprocess, shutil, pathlib and more on every
# run. Once shiv has extracted site-packages into its cache, none of that is needed: the
# archive's directory is already parsed by the zipimporter that loaded this file, so the
# cache path is found from it and mem starts at once. Anything else (the first run, a
# missing or half-removed cache, or any SHIV_* setting but SHIV_ROOT) goes to shiv's own
# bootstrap unchanged.
import os
import sys


def _cached_site_packages():
    if any(key.startswith("SHIV_") and key != "SHIV_ROOT" for key in os.environ):
        return None
    import json

    try:
        env = json.loads(__loader__.get_data("environment.json"))
    except (AttributeError, OSError, ValueError):
        return None  # not run from the archive: shiv's bootstrap knows what to do
    if env.get("build_id") is None or ":" not in (env.get("entry_point") or ""):
        return None
    settings = ("script", "preamble", "no_modify", "extend_pythonpath", "prepend_pythonpath", "always_write_cache")
    if any(env.get(key) for key in settings):
        return None
    root = os.environ.get("SHIV_ROOT", env.get("root"))
    if root:
        if root.startswith("$"):
            root = os.environ.get(root[1:], root[1:])
        root = os.path.expanduser(root) or "."  # shiv's Path("") is the current directory
    else:
        root = os.path.expanduser("~/.shiv")
    name = os.path.basename(os.path.realpath(sys.argv[0]))
    site_packages = os.path.join(root, f"{name}_{env['build_id']}", "site-packages")
    if not os.path.isdir(site_packages):
        return None
    return site_packages, env["entry_point"]


def _run(site_packages, entry_point):
    import site

    def is_site_dir(part):
        return os.path.splitext(os.path.basename(part.rstrip(os.sep)))[0] in ("site-packages", "dist-packages")

    # As shiv does: our site-packages (and what its .pth files add) go before the first
    # site-packages already on sys.path (one at index 0 counts as none, as in shiv).
    length = len(sys.path)
    index = next((i for i, part in enumerate(sys.path) if is_site_dir(part)), length) or length
    site.addsitedir(site_packages)
    sys.path = sys.path[:index] + sys.path[length:] + sys.path[index:length]
    module, _, func = entry_point.partition(":")
    __import__(module)
    target = sys.modules[module]
    for part in func.split("."):
        target = getattr(target, part)
    sys.exit(target())


_found = _cached_site_packages()
if _found:
    _run(*_found)
else:
    import _bootstrap

    _bootstrap.bootstrap()

# mem zipapp launcher, written by scripts/build_zipapp.py as the archive's __main__.py.
#
# shiv's runtime (_bootstrap) opens this archive a second time with zipfile to read
# environment.json, and imports compileall, subprocess, shutil, pathlib and more on every
# run. Once shiv has extracted site-packages into its cache, none of that is needed: the
# archive's directory is already parsed by the zipimporter that loaded this file, so the
# cache path is found from it and mem starts at once. Anything else (the first run, a
# missing or half-removed cache, or any SHIV_* setting but SHIV_ROOT) goes to shiv's own
# bootstrap unchanged.
#
# Before any of that, the Python version is checked: the archive carries compiled modules
# (pydantic-core, jiter) for one Python minor version only, named in its file name and here.
import os
import sys

BUILT_FOR = (3, 11)  # rewritten by scripts/build_zipapp.py for the Python it builds for

if sys.version_info[:2] != BUILT_FOR:
    sys.stderr.write(
        "mem: %s is built for Python %d.%d, not %d.%d; run it with python%d.%d, "
        "or use the mem zipapp built for this Python (make zipapp)\n"
        % ((os.path.basename(sys.argv[0]),) + BUILT_FOR + tuple(sys.version_info[:2]) + BUILT_FOR)
    )
    sys.exit(3)  # mem's exit code for a configuration problem (mem.core.errors.ExitCode.CONFIG)


def _cached_site_packages():
    """(site-packages of this build in shiv's cache, whether or not unpacked yet, entry point), or
    None when shiv's bootstrap must decide."""
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
    return os.path.join(root, f"{name}_{env['build_id']}", "site-packages"), env["entry_point"]


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
if _found and os.path.isdir(_found[0]):
    _run(*_found)
else:
    if _found:
        # The first run of this build: shiv unpacks some 60 MB, which takes seconds. Say so, once.
        sys.stderr.write("mem: first run of %s: unpacking into %s (once)\n"
                         % (os.path.basename(sys.argv[0]), os.path.dirname(_found[0])))
    import _bootstrap

    _bootstrap.bootstrap()

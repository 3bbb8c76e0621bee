"""mem team sync --git connects where and how the user says, never as a repository's own config says.

A repository's .git/config (or a file it includes) can rewrite the remote's URL (url.<base>.insteadOf,
pushInsteadOf: the push goes to another host), set a proxy, TLS trust, extra headers or a cookie
file. The sync refuses such a repository before it fetches (exit 4, the keys named, never their
values); the same settings in the user's ~/.gitconfig are followed. Real repositories: a second
bare repository the rewriting points at, and a smart-HTTP remote on 127.0.0.1 (git http-backend)
that records every request's headers, with a recording proxy next to it.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import git
from test_team_git import TEAM, _memory, _tip, team  # noqa: F401 - fixture


def _elsewhere(remote: Path, tmp_path: Path) -> Path:
    """A second bare repository holding what the team's remote holds: a push there would succeed."""
    other = tmp_path / "elsewhere.git"
    git("clone", "-q", "--bare", str(remote), str(other), cwd=tmp_path)
    return other


def _user_config(text: str) -> None:
    with open(Path(os.environ["HOME"]) / ".gitconfig", "a") as f:
        f.write(text)


@pytest.mark.parametrize("where", ["config", "included"])
@pytest.mark.parametrize("rewrite", ["pushInsteadOf", "insteadOf"])
def test_the_repositorys_url_rewriting_is_refused_and_nothing_goes_elsewhere(team, run_mem, tmp_path, rewrite, where):
    remote, mine, _ = team
    other = _elsewhere(remote, tmp_path)
    tips = _tip(remote), _tip(other)
    setting = f"[url \"{other}\"]\n\t{rewrite} = {remote}\n"
    if where == "included":
        (tmp_path / "included.gitconfig").write_text(setting)
        setting = f"[include]\n\tpath = {tmp_path / 'included.gitconfig'}\n"
    with open(mine / ".git" / "config", "a") as config:
        config.write(setting)
    before = git("rev-parse", "HEAD", cwd=mine)
    _memory(mine, "dashboards", "Latency dashboard is grafana/d/latency")
    r = run_mem("team", "sync", "--git", "--json", cwd=str(mine))
    assert (_tip(remote), _tip(other)) == tips  # before: the sync commit landed in elsewhere.git (exit 0)
    assert r.returncode == 4, r.stderr
    assert f"url.{other}.{rewrite.lower()}" in r.stderr and "Nothing was fetched or pushed" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and json.loads(r.stdout)["error"]["kind"] == "refused"
    assert git("rev-parse", "HEAD", cwd=mine) == before
    assert git("status", "--porcelain", cwd=mine) == f"?? {TEAM}/dashboards.md"  # nothing rebuilt, nothing staged


def test_the_users_own_url_rewriting_is_followed(team, run_mem, tmp_path):
    """The user wrote ~/.gitconfig: its pushInsteadOf is theirs to use."""
    remote, mine, _ = team
    other = _elsewhere(remote, tmp_path)
    tip = _tip(remote)
    _user_config(f"[url \"{other}\"]\n\tpushInsteadOf = {remote}\n")
    _memory(mine, "dashboards", "Latency dashboard is grafana/d/latency")
    r = run_mem("team", "sync", "--git", "--json", cwd=str(mine))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pushed"] is True and _tip(other) == json.loads(r.stdout)["committed"]
    assert _tip(remote) == tip


def test_harmless_http_knobs_in_the_repository_are_left_alone(team, run_mem):
    _, mine, _ = team
    git("config", "http.postBuffer", "524288000", cwd=mine)  # common advice, given without --global
    _memory(mine, "dashboards", "Latency dashboard is grafana/d/latency")
    r = run_mem("team", "sync", "--git", cwd=str(mine))
    assert r.returncode == 0, r.stderr


# --- over smart HTTP ------------------------------------------------------------------------------


class _Recorder(http.server.ThreadingHTTPServer):
    def __init__(self, handler, root: Path | None = None):
        super().__init__(("127.0.0.1", 0), handler)
        self.root = root
        self.seen: list[tuple[str, str, dict]] = []  # (method, path, headers)
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _SmartHttp(http.server.BaseHTTPRequestHandler):
    """git http-backend as CGI, every request's headers recorded."""

    def _backend(self):
        self.server.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        path, _, query = self.path.partition("?")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        env = {**os.environ, "GIT_PROJECT_ROOT": str(self.server.root), "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": self.command,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
               "REMOTE_ADDR": "127.0.0.1", "REMOTE_USER": "teammate"}
        for header, variable in (("Content-Encoding", "HTTP_CONTENT_ENCODING"), ("Git-Protocol", "GIT_PROTOCOL")):
            if self.headers.get(header):
                env[variable] = self.headers[header]
        out = subprocess.run([shutil.which("git"), "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _backend

    def log_message(self, *args):
        pass


class _Proxy(http.server.BaseHTTPRequestHandler):
    """A proxy that records what it was asked for and forwards nothing."""

    def do_GET(self):
        self.server.seen.append((self.command, self.path, dict(self.headers)))
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_CONNECT = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def over_http(team, tmp_path):
    """(served bare repository, mine with origin at http://127.0.0.1:<port>/team.git, server, proxy)."""
    remote, mine, _ = team
    served = tmp_path / "served"
    served.mkdir()
    git("clone", "-q", "--bare", str(remote), str(served / "team.git"), cwd=tmp_path)
    git("config", "http.receivepack", "true", cwd=served / "team.git")
    server, proxy = _Recorder(_SmartHttp, served), _Recorder(_Proxy)
    git("remote", "set-url", "origin", f"{server.url}/team.git", cwd=mine)
    yield served / "team.git", mine, server, proxy
    server.stop()
    proxy.stop()


def test_over_smart_http_the_sync_goes_through_with_the_users_own_header(over_http, run_mem):
    served, mine, server, _ = over_http
    _user_config("[http]\n\textraHeader = X-Team: from-the-user\n")
    _memory(mine, "dashboards", "Latency dashboard is grafana/d/latency")
    r = run_mem("team", "sync", "--git", "--json", cwd=str(mine))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["pushed"] is True and _tip(served) == out["committed"]
    assert server.seen and all(h.get("x-team") == "from-the-user" for _, _, h in server.seen)
    assert any(m == "POST" and p.endswith("/git-receive-pack") for m, p, _ in server.seen)


def _cookies(tmp_path: Path) -> Path:
    """A file of the user's that a cookie engine reads (Netscape format), for the host the remote is on."""
    path = tmp_path / "browser-cookies.txt"
    path.write_text("127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tleaked-from-the-user\n")
    return path


REPOSITORY_SETTINGS = {
    "extraHeader": lambda url, proxy, tmp: "[http]\n\textraHeader = X-Repo: planted\n",
    "url extraHeader": lambda url, proxy, tmp: f"[http \"{url}\"]\n\textraHeader = X-Repo: planted\n",
    "cookieFile": lambda url, proxy, tmp: f"[http]\n\tcookieFile = {_cookies(tmp)}\n",
    "proxy": lambda url, proxy, tmp: f"[http]\n\tproxy = {proxy}\n",
    "remote proxy": lambda url, proxy, tmp: f"[remote \"origin\"]\n\tproxy = {proxy}\n",
    "sslVerify": lambda url, proxy, tmp: "[http]\n\tsslVerify = false\n",
    # the URL in an http.<url>.* key may carry a password: the message leaves it out
    "sslCAInfo": lambda url, proxy, tmp: (f"[http \"{url.replace('http://', 'http://user:s3cret-token@')}\"]\n"
                                          f"\tsslCAInfo = {tmp / 'their-ca.pem'}\n"),
}


@pytest.mark.parametrize("setting", sorted(REPOSITORY_SETTINGS))
def test_over_http_the_repositorys_transport_settings_are_refused(over_http, run_mem, tmp_path, setting):
    served, mine, server, proxy = over_http
    tip = _tip(served)
    with open(mine / ".git" / "config", "a") as config:
        config.write(REPOSITORY_SETTINGS[setting](server.url, proxy.url, tmp_path))
    _memory(mine, "dashboards", "Latency dashboard is grafana/d/latency")
    r = run_mem("team", "sync", "--git", cwd=str(mine))
    sent = [h for _, _, h in server.seen]
    assert not any("x-repo" in h or "leaked-from-the-user" in h.get("cookie", "") for h in sent), sent
    assert proxy.seen == []
    assert r.returncode == 4, r.stderr  # before: exit 0, pushed (sslVerify, sslCAInfo: nothing to see over http)
    assert server.seen == [] and _tip(served) == tip
    assert "the repository's own git configuration sets" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "s3cret-token" not in r.stderr and "planted" not in r.stderr and "leaked" not in r.stderr


@pytest.mark.parametrize("key", ["fetch.bundleURI", "bundle.mode"])
def test_a_bundle_the_repository_names_is_refused(team, run_mem, key):
    """git 2.40 and later download a repository-configured bundle (fetch.bundleURI, a bundle list's
    bundle.*) from any host before the fetch: the sync refuses it as it refuses a proxy. (git here is
    2.39, which does not read the key, so this shows the refusal, not a download.)"""
    remote, mine, _ = team
    git("config", key, "https://bundles.example.invalid/team.bundle" if key == "fetch.bundleURI" else "all", cwd=mine)
    tip = _tip(remote)
    _memory(mine, "dashboards", "Latency dashboard is grafana/d/latency")
    r = run_mem("team", "sync", "--git", cwd=str(mine))
    assert r.returncode == 4 and key.lower() in r.stderr and _tip(remote) == tip

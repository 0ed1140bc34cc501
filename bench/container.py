"""Build the service image from the Dockerfile and check it: runs on a machine without a Docker engine.

Needs root (or password-less sudo), Debian's ``podman``, ``runc`` and ``debootstrap`` (installed with
apt-get when missing), Debian's package mirror and PyPI; no container registry. Steps:

1. a Debian bookworm base image made with ``debootstrap --variant=minbase`` (cached: the podman image
   ``localhost/langclass-base:bookworm`` and its tarball in the cache folder);
2. torch's CPU wheel for CPython 3.11 (bookworm's python3), version pinned by ``constraints.txt``,
   fetched once with the host's ``pip download`` (its find-links / indexes) into the cache folder,
   and refused unless it is a ``+cpu`` build;
3. ``podman build`` of the Dockerfile on that base with the wheel folder mounted for the build only
   (``PIP_FIND_LINKS``; no torch index), the host's CA bundle for pip (a proxy that re-signs TLS),
   host networking, podman's layer cache;
4. checks on the running image: ``/healthz`` and ``/readyz``, the image's HEALTHCHECK, that every
   process runs as the non-root user (uid 10001) with ``/app`` read-only to it, a classification
   and a stored language, a replacement container on the same SQLite volume that still has it —
   started in the README's form, ``run -p 127.0.0.1:PORT:8000 -v VOLUME:/data`` on podman's bridge
   network (``iptables`` is installed when missing: netavark needs it for the port) — then
   the same service against the PostgreSQL server on the host (host networking; a throw-away schema
   through ``search_path``, dropped afterwards).

Each step prints one line; the exit status is 1 at the first failure (containers, volume and schema
are removed in every case; the images stay as the cache). Podman runs with ``--runtime runc`` and a
containers.conf whose ``default_ulimits`` is empty (the default's nofile limit cannot be set in this
kind of VM: ``error setting rlimit type 7: operation not permitted``).

Usage::

    make container-check                       # = python3 bench/container.py
    python3 bench/container.py --cold          # rebuild the base, fetch the wheel again, no layer cache
    python3 bench/container.py --postgres-url postgresql+psycopg://postgres@127.0.0.1:5432/test
    python3 bench/container.py --no-postgres   # skip the PostgreSQL part (says so)
    .venv/bin/python bench/container.py --write-constraints   # regenerate constraints-image.txt

The image installs with ``constraints-image.txt`` (every package pinned; torch as constraints.txt).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import traceback
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
BASE_IMAGE = "localhost/langclass-base:bookworm"
DEFAULT_IMAGE = "localhost/langclass:check"
DEFAULT_CACHE = Path(os.environ.get("LANGCLASS_CONTAINER_CACHE", "/var/tmp/langclass-container"))


def host_mirrors() -> tuple[str | None, str | None]:
    """The Debian mirror and security mirror this host's apt uses (deb822 ``URIs:`` or one-line ``deb``
    entries), so the base image reaches the same package sources as the host; ``None`` when unknown."""
    uris: list[str] = []
    for f in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("URIs:"):
                uris += line.split()[1:]
            elif line.startswith("deb ") and not line.startswith("deb-src"):
                parts = [p for p in line.split()[1:] if not p.startswith("[")]
                uris += parts[:1]
    main = next((u for u in uris if not u.rstrip("/").endswith("-security")), None)
    security = next((u for u in uris if u.rstrip("/").endswith("-security")), None)
    return main, security


DEFAULT_MIRROR, SECURITY_MIRROR = host_mirrors()
DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
SERVICE_UID = 10001  # the Dockerfile's `useradd --uid`
APT_PACKAGES = ["podman", "runc", "debootstrap", "debian-archive-keyring", "netavark", "aardvark-dns", "uidmap", "slirp4netns", "iptables"]
"""Installed when a tool is missing. ``iptables``: podman's bridge network (netavark) sets up a
published port (``run -p``, the README's form) with it, and fails without it."""
TOOLS = ("podman", "runc", "debootstrap", "iptables")
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
CONTAINERS_CONF = "[containers]\n# the default nofile ulimit cannot be set here (runc: error setting rlimit type 7)\ndefault_ulimits = []\n"


class CheckFailed(Exception):
    """A step did not hold; the message says what was expected and what came."""


class Runner:
    """Runs the privileged commands (podman, debootstrap, tar), through sudo when not root."""

    def __init__(self, cache: Path) -> None:
        self.prefix: list[str] = []
        if os.geteuid() != 0:
            if shutil.which("sudo") is None:
                raise CheckFailed("needs root or sudo (debootstrap and rootful podman)")
            self.prefix = ["sudo", "-n"]
        self.conf = cache / "containers.conf"
        self.created: list[tuple[str, str]] = []  # (kind, name) to remove at the end

    def run(self, args: list[str], *, timeout: float = 600, check: bool = True, log: Path | None = None) -> subprocess.CompletedProcess[str]:
        cmd = self.prefix + args
        try:
            if log is not None:
                with log.open("w") as out:
                    proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
                proc.stdout = log.read_text(errors="replace")
            else:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise CheckFailed(f"`{' '.join(args[:3])} …` ran past {timeout:.0f} s") from exc
        if check and proc.returncode != 0:
            tail = "\n".join(((proc.stdout or "") + (proc.stderr or "")).strip().splitlines()[-25:])
            raise CheckFailed(f"`{' '.join(args[:4])} …` exited with {proc.returncode}:\n{tail}")
        return proc

    def podman(self, *args: str, timeout: float = 600, check: bool = True, log: Path | None = None) -> subprocess.CompletedProcess[str]:
        return self.run(["env", f"CONTAINERS_CONF={self.conf}", "podman", "--runtime", "runc", *args], timeout=timeout, check=check, log=log)

    def cleanup(self) -> list[str]:
        left = []
        for kind, name in reversed(self.created):
            if kind == "container":
                proc = self.podman("rm", "--force", "--volumes", "--time", "10", name, check=False, timeout=120)
            else:
                proc = self.podman("volume", "rm", "--force", name, check=False, timeout=60)
            if proc.returncode != 0 and "no such" not in (proc.stderr or "").lower():
                left.append(f"{kind} {name}: {(proc.stderr or '').strip()}")
        self.created.clear()
        return left


class Report:
    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.passed = 0

    def step(self, name: str, fn: Callable[[], str]) -> None:
        t = time.monotonic()
        try:
            detail = fn()
        except CheckFailed as exc:
            print(f"FAIL  {name}  ({time.monotonic() - t:.1f} s)\n      {str(exc).replace(chr(10), chr(10) + '      ')}", flush=True)
            exc.reported = True  # type: ignore[attr-defined]
            raise
        self.passed += 1
        print(f"ok    {name}: {detail}  ({time.monotonic() - t:.1f} s)", flush=True)


# --------------------------------------------------------------------------------------------- HTTP


def request(method: str, url: str, body: Any = None, timeout: float = 120) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
        raise CheckFailed(f"{method} {url}: {exc}") from exc
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")


def expect(status: int, body: Any, want: int, what: str) -> Any:
    if status != want:
        raise CheckFailed(f"{what}: HTTP {status}, expected {want}: {str(body)[:400]}")
    return body


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ----------------------------------------------------------------------------------------- the steps


def ensure_tools(runner: Runner) -> str:
    missing = [tool for tool in TOOLS if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists()]
    installed = ""
    if missing:
        if shutil.which("apt-get") is None:
            raise CheckFailed(f"missing {', '.join(missing)} and no apt-get to install them")
        env = ["env", "DEBIAN_FRONTEND=noninteractive"]
        runner.run(env + ["apt-get", "update"], timeout=900)
        runner.run(env + ["apt-get", "install", "-y", "--no-install-recommends", *APT_PACKAGES], timeout=1800)
        installed = f"installed {' '.join(APT_PACKAGES)} with apt-get; "
    runner.conf.parent.mkdir(parents=True, exist_ok=True)
    runner.conf.write_text(CONTAINERS_CONF)
    version = runner.podman("version", "--format", "{{.Client.Version}}").stdout.strip()
    return f"{installed}podman {version}, runtime runc, containers.conf {runner.conf}"


def ensure_base(runner: Runner, cache: Path, mirror: str, rebuild: bool, project_image: str) -> str:
    tarball = cache / "base-bookworm-minbase.tar"
    if rebuild:
        for image in (project_image, BASE_IMAGE):
            runner.podman("rmi", "--force", image, check=False)
        runner.podman("image", "prune", "--force", check=False)  # the layers built on the old base
        tarball.unlink(missing_ok=True)
    if runner.podman("image", "exists", BASE_IMAGE, check=False).returncode == 0:
        return f"{BASE_IMAGE} (cached image)"
    how = f"cached tarball {tarball}"
    if not tarball.exists():
        rootfs = cache / "rootfs"
        if rootfs.exists():
            runner.run(["rm", "-rf", "--one-file-system", str(rootfs)])
        if not mirror:
            raise RuntimeError("no Debian mirror found in this host's apt sources: pass --mirror URL")
        runner.run(["nice", "-n", "10", "debootstrap", "--variant=minbase", "bookworm", str(rootfs), mirror], timeout=1800, log=cache / "debootstrap.log")
        sources = (
            f"deb {mirror} bookworm main\n"
            f"deb {mirror} bookworm-updates main\n"
        ) + (f"deb {SECURITY_MIRROR} bookworm-security main\n" if SECURITY_MIRROR else "")
        runner.run(["sh", "-c", f"printf '%s' '{sources}' > '{rootfs}/etc/apt/sources.list'"])
        runner.run(["sh", "-c", f"rm -rf '{rootfs}'/var/cache/apt/archives/*.deb '{rootfs}'/var/lib/apt/lists/* '{rootfs}'/var/log/*.log"])
        partial = tarball.with_suffix(".tar.partial")
        runner.run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(partial), "."], timeout=900)
        runner.run(["mv", str(partial), str(tarball)])
        runner.run(["rm", "-rf", "--one-file-system", str(rootfs)])
        how = f"debootstrap --variant=minbase bookworm from {mirror}, tarball {tarball}"
    runner.podman("import", "--change", 'CMD ["/bin/bash"]', str(tarball), BASE_IMAGE, timeout=900)
    size = runner.podman("image", "inspect", "--format", "{{.Size}}", BASE_IMAGE).stdout.strip()
    return f"{BASE_IMAGE} ({how}; {int(size) / 1e6:.0f} MB)"


def torch_pin() -> str:
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        m = re.match(r"\s*torch\s*==\s*([^\s;#]+)", line)
        if m:
            return m.group(1)
    raise CheckFailed("constraints.txt pins no torch version (torch==X)")


def ensure_torch_wheel(cache: Path, refetch: bool) -> tuple[Path, str]:
    pin = torch_pin()
    wheels = cache / "wheels"
    if refetch and wheels.exists():
        shutil.rmtree(wheels)
    wheels.mkdir(parents=True, exist_ok=True)
    pattern = f"torch-{pin}+cpu-cp311-cp311-*x86_64.whl"
    found = sorted(wheels.glob(pattern))
    how = "cached"
    if not found:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.11",
               "--implementation", "cp", "--abi", "cp311", "--platform", "manylinux_2_28_x86_64", "--platform", "linux_x86_64",
               "--dest", str(wheels), f"torch=={pin}+cpu"]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
        found = sorted(wheels.glob(pattern))
        if proc.returncode != 0 or not found:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
            raise CheckFailed(
                f"no CPU wheel of torch {pin} for CPython 3.11 reachable by pip (`{' '.join(cmd[1:4])} … torch=={pin}+cpu`):\n{tail}\n"
                f"put one in {wheels}, or set PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu"
            )
        how = "pip download (host pip configuration)"
    wheel = found[-1]
    return wheel, f"{wheel.name} ({wheel.stat().st_size / 1e6:.0f} MB, {how}) in {wheels}"


def code_version() -> str:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    return f"{version}+g{sha}" if sha else version


def build_image(runner: Runner, cache: Path, image: str, wheel: Path, version: str, no_cache: bool) -> str:
    args = ["build", "--network", "host", "--format", "docker", "--layers", "--file", str(ROOT / "Dockerfile"),
            "--volume", f"{wheel.parent}:/wheels:ro",
            "--build-arg", f"BASE_IMAGE={BASE_IMAGE}", "--build-arg", "TORCH_INDEX=", "--build-arg", "PIP_FIND_LINKS=/wheels",
            "--build-arg", f"CODE_VERSION={version}", "--tag", image]  # fmt: skip
    if HOST_CA.exists():
        args += ["--volume", f"{HOST_CA}:/run/host-ca.crt:ro", "--build-arg", "PIP_CERT=/run/host-ca.crt"]
    if no_cache:
        args.append("--no-cache")
    log = cache / "build.log"
    runner.run(["nice", "-n", "10", "env", f"CONTAINERS_CONF={runner.conf}", "podman", "--runtime", "runc", *args, str(ROOT)], timeout=3600, log=log)
    text = log.read_text(errors="replace")
    steps = len(re.findall(r"^STEP \d+/", text, re.M))
    cached = len(re.findall(r"^--> Using cache ", text, re.M))
    size = int(runner.podman("image", "inspect", "--format", "{{.Size}}", image).stdout.strip())
    return f"{image}, {steps} steps ({cached} from the layer cache), {size / 1e9:.2f} GB, code_version {version}; log {log}"


def check_image(runner: Runner, image: str) -> str:
    user = runner.podman("image", "inspect", "--format", "{{.Config.User}}", image).stdout.strip()
    if user in ("", "root", "0"):
        raise CheckFailed(f"the image's USER is {user or '(unset)'}; expected the non-root user langclass")
    probe = (
        "import importlib.metadata as m, json, platform, torch; "
        "print(json.dumps({'python': platform.python_version(), 'torch': torch.__version__, 'cuda': torch.version.cuda, "
        "'nvidia': sorted(d.metadata['Name'] for d in m.distributions() if d.metadata['Name'].lower().startswith('nvidia'))}))"
    )
    out = runner.podman("run", "--rm", "--network", "none", "--entrypoint", "python", image, "-c", probe, timeout=300).stdout
    info = json.loads(out.strip().splitlines()[-1])
    if not info["torch"].endswith("+cpu") or info["cuda"] is not None or info["nvidia"]:
        raise CheckFailed(f"torch in the image is not the CPU build: {info}")
    if not info["python"].startswith("3.11."):
        raise CheckFailed(f"the image's Python is {info['python']}; bookworm's python3 is 3.11")
    return f"USER {user}, Python {info['python']}, torch {info['torch']} (no CUDA, no nvidia-* packages), started with --network none"


class Service:
    """One container of the image serving at 127.0.0.1:<port>: on the host's network, or with
    ``published`` in the README's form — podman's bridge network and ``-p 127.0.0.1:<port>:8000``
    (the service on the image's default 0.0.0.0:8000)."""

    def __init__(self, runner: Runner, image: str, name: str, port: int, env: dict[str, str], volume: str | None, command: tuple[str, ...] = (),
                 *, published: bool = False) -> None:
        self.runner, self.image, self.name, self.port, self.env, self.volume = runner, image, name, port, env, volume
        self.command = command
        self.published = published
        self.url = f"http://127.0.0.1:{port}"
        self.stored_id = ""
        self.started_s = 0.0

    def run_args(self) -> list[str]:
        """The ``podman run`` arguments that start this container."""
        if self.published:  # the README's `run -p 127.0.0.1:8000:8000 -v langclass-data:/data langclass`
            args = ["run", "--detach", "--name", self.name, "--publish", f"127.0.0.1:{self.port}:8000", "--health-interval", "disable"]
        else:
            args = ["run", "--detach", "--name", self.name, "--network", "host", "--health-interval", "disable"]
        if self.port and not self.published:
            args += ["--env", "LANGCLASS_HOST=127.0.0.1", "--env", f"LANGCLASS_PORT={self.port}"]
        for key, value in self.env.items():
            args += ["--env", f"{key}={value}"]
        if self.volume:
            args += ["--volume", f"{self.volume}:/data"]
        return [*args, self.image, *self.command]

    def start(self, timeout: float) -> str:
        self.runner.created.append(("container", self.name))
        t0 = time.monotonic()
        self.runner.podman(*self.run_args())
        while True:
            if self.command == ("worker",):
                logs = self.logs()
                if "langclass worker:" in logs:
                    return f"{self.name} (`langclass worker`): {logs.splitlines()[-1][:160]}"
                time.sleep(0.5)
                state = self.runner.podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", self.name).stdout.strip()
                if not state.startswith("running"):
                    raise CheckFailed(f"worker container {self.name} stopped ({state}):\n{logs}")
                if time.monotonic() - t0 > timeout:
                    raise CheckFailed(f"worker container {self.name} printed no start line within {timeout:.0f} s:\n{logs}")
                continue
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2) as resp:
                    if resp.status == 200:
                        self.started_s = time.monotonic() - t0
                        how = f"published -p 127.0.0.1:{self.port}:8000" if self.published else f"on 127.0.0.1:{self.port}"
                        return f"{self.name} {how} answered /healthz after {self.started_s:.1f} s"
            except (urllib.error.URLError, http.client.HTTPException, OSError):
                pass
            state = self.runner.podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", self.name).stdout.strip()
            if not state.startswith("running"):
                raise CheckFailed(f"container {self.name} stopped ({state}) before answering /healthz:\n{self.logs()}")
            if time.monotonic() - t0 > timeout:
                raise CheckFailed(f"no answer from {self.url}/healthz within {timeout:.0f} s:\n{self.logs()}")
            time.sleep(0.5)

    def logs(self, lines: int = 25) -> str:
        proc = self.runner.podman("logs", "--tail", str(lines), self.name, check=False)
        return (proc.stdout + proc.stderr).strip()

    def stop(self) -> str:
        t0 = time.monotonic()
        self.runner.podman("stop", "--time", "30", self.name, timeout=90)
        code = self.runner.podman("inspect", "--format", "{{.State.ExitCode}}", self.name).stdout.strip()
        if code != "0":
            raise CheckFailed(f"container {self.name} exited with {code} on SIGTERM (expected 0):\n{self.logs()}")
        self.runner.podman("rm", "--volumes", self.name)
        self.runner.created.remove(("container", self.name))
        return f"exit 0 {time.monotonic() - t0:.1f} s after SIGTERM"


def check_health(svc: Service, dialect: str) -> str:
    body = expect(*request("GET", svc.url + "/healthz"), 200, "/healthz")
    if body != {"status": "ok"}:
        raise CheckFailed(f"/healthz answered {body}")
    ready = expect(*request("GET", svc.url + "/readyz"), 200, "/readyz")
    if ready.get("status") != "ready" or ready.get("database") != dialect or ready.get("schema_revision") != ready.get("schema_head"):
        raise CheckFailed(f"/readyz answered {ready}; expected ready on {dialect} at the head revision")
    return f"/healthz {body}; /readyz ready on {dialect}, schema at head {ready['schema_head']}"


def check_healthcheck(svc: Service) -> str:
    proc = svc.runner.podman("healthcheck", "run", svc.name, check=False, timeout=60)
    if proc.returncode != 0:
        raise CheckFailed(f"`podman healthcheck run` exited with {proc.returncode}: {(proc.stdout + proc.stderr).strip()}")
    return f"the image's HEALTHCHECK passes on LANGCLASS_PORT={svc.port} ({(proc.stdout.strip() or 'healthy')})"


def check_non_root(svc: Service) -> str:
    pid = svc.runner.podman("inspect", "--format", "{{.State.Pid}}", svc.name).stdout.strip()
    status = Path(f"/proc/{pid}/status").read_text()
    uids = re.search(r"^Uid:\s+(.*)$", status, re.M)
    if uids is None or {int(u) for u in uids.group(1).split()} != {SERVICE_UID}:
        raise CheckFailed(f"PID 1 of the container (host pid {pid}) has Uid {uids.group(1) if uids else '?'}; expected {SERVICE_UID} throughout")
    top = svc.runner.podman("top", svc.name, "user,pid,args").stdout.strip().splitlines()[1:]
    users = {line.split()[0] for line in top if line.strip()}
    if users != {"langclass"}:
        raise CheckFailed(f"processes of users {sorted(users)} in the container; expected only langclass:\n" + "\n".join(top))
    write = svc.runner.podman("exec", svc.name, "sh", "-c", "touch /app/.w 2>/dev/null && echo app-writable; touch /data/.w && rm /data/.w && echo data-writable", check=False)
    if "app-writable" in write.stdout or "data-writable" not in write.stdout:
        raise CheckFailed(f"expected /app read-only and /data writable for the service user, got {write.stdout.split()} {write.stderr.strip()}")
    return f"{len(top)} processes, all user langclass (host pid {pid}: uid {SERVICE_UID}); /app read-only to it, /data writable"


def check_classify(svc: Service, version: str) -> str:
    body = expect(*request("POST", svc.url + "/v1/classify", {"regex": "(ab)*", "alphabet": ["a", "b"]}), 200, "POST /v1/classify (ab)*")
    klass = body["classes"]
    got = (klass["ltl_p_mod"]["member"], klass["ltl_p_mod"].get("period"), klass["ltl_p"]["member"], body["encodings"]["soft"]["encoding"])
    if got != (True, 2, False, "rope_periodic"):
        raise CheckFailed(f"(ab)* classified as (LTL[P,MOD], period, LTL[P], soft encoding) = {got}; expected (True, 2, False, 'rope_periodic')")
    if body.get("code_version") != version:
        raise CheckFailed(f"code_version {body.get('code_version')!r}; expected the build's {version!r}")
    return f"(ab)*: LTL[P,MOD] member, period 2, not LTL[P], soft encoding rope_periodic, code_version {version}"


LANGUAGE = {"regex": "(ab)*", "alphabet": ["a", "b"], "name": "container-check (ab)*", "tags": ["periodic"]}


def check_store(svc: Service) -> str:
    body = expect(*request("POST", svc.url + "/v1/languages", LANGUAGE), 201, "POST /v1/languages")
    svc.stored_id = body["id"]
    return f"201, id {body['id'][:16]}…"


def check_kept(svc: Service, stored_id: str) -> str:
    body = expect(*request("GET", f"{svc.url}/v1/languages/{stored_id}"), 200, f"GET /v1/languages/{stored_id[:16]}… after the restart")
    if body.get("name") != LANGUAGE["name"] or body.get("tags") != LANGUAGE["tags"]:
        raise CheckFailed(f"the stored record came back as name={body.get('name')!r} tags={body.get('tags')!r}")
    again = expect(*request("POST", svc.url + "/v1/languages", LANGUAGE), 200, "POST /v1/languages again")
    if again.get("already_stored") is not True:
        raise CheckFailed(f"the second POST answered already_stored={again.get('already_stored')!r}")
    return f"GET {stored_id[:16]}… 200 (name and tags kept), POST again 200 already_stored"


def check_job(api: Service, worker: Service, language_id: str, version: str, timeout: float) -> str:
    job = expect(*request("POST", f"{api.url}/v1/languages/{language_id}/experiments", {"kind": "construct"}), 202, "POST …/experiments construct")
    t0 = time.monotonic()
    while job["status"] in ("queued", "running"):
        if time.monotonic() - t0 > timeout:
            raise CheckFailed(f"job {job['id']} still {job['status']} after {timeout:.0f} s (the API has no job slots; worker log):\n{worker.logs()}")
        time.sleep(1)
        job = expect(*request("GET", f"{api.url}/v1/jobs/{job['id']}"), 200, "GET /v1/jobs/{id}")
    if job["status"] != "succeeded":
        raise CheckFailed(f"job {job['id']} ended {job['status']}: {job.get('error')}\nworker log:\n{worker.logs()}")
    result = job.get("result") or {}
    if result.get("exact") is not True:
        raise CheckFailed(f"the construct job's transformer is not exact: {str(result)[:400]}")
    if result.get("code_version") != version:
        raise CheckFailed(f"job result code_version {result.get('code_version')!r}; expected {version!r}")
    return (f"job {job['id'][:12]}… succeeded in {time.monotonic() - t0:.1f} s on the worker container: {result.get('encoding')} "
            f"transformer exact on {result.get('words_checked')} words up to length {result.get('all_words_up_to')}, code_version {version}")


# ------------------------------------------------------------------------------------------ PostgreSQL


def pg_exec(runner: Runner, image: str, url: str, sql: str) -> str:
    """Runs SQL with the image's own SQLAlchemy/psycopg (the host needs no PostgreSQL client)."""
    code = (
        "import os, sqlalchemy as sa\n"
        "engine = sa.create_engine(os.environ['URL'])\n"
        "with engine.begin() as conn:\n"
        "    result = conn.execute(sa.text(os.environ['SQL']))\n"
        "    print(result.scalar() if result.returns_rows else 'done')\n"
    )
    proc = runner.podman("run", "--rm", "--network", "host", "--env", f"URL={url}", "--env", f"SQL={sql}", "--entrypoint", "python", image, "-c", code, timeout=120)
    return proc.stdout.strip().splitlines()[-1]


def pg_reachable(url: str) -> tuple[str, int]:
    parsed = urllib.parse.urlsplit(url.replace("postgresql+psycopg://", "postgresql://", 1))
    host, port = parsed.hostname or "127.0.0.1", parsed.port or 5432
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        raise CheckFailed(f"PostgreSQL not reachable at {host}:{port} ({exc}); start it, or pass --no-postgres") from exc
    return host, port


def with_search_path(url: str, schema: str) -> str:
    return url + ("&" if "?" in url else "?") + "options=" + urllib.parse.quote(f"-csearch_path={schema}", safe="")


# ---------------------------------------------------------------------------------------------- main


def image_pins() -> list[str]:
    """``name==version`` of every distribution the image installs — ``langclass``'s dependencies with
    the ``ray`` extra (the Dockerfile's ``EXTRAS``), followed through their own requirements and
    extras, with the versions installed in the running interpreter's environment (CPython 3.11 on
    Linux, as the image); torch as constraints.txt pins it (without the local ``+cpu`` tag)."""
    import importlib.metadata as md

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, tuple[str, set[str]]] = {}

    def walk(name: str, extras: set[str]) -> None:
        key = canonicalize_name(name)
        if key in found and extras <= found[key][1]:
            return
        dist = md.distribution(name)  # PackageNotFoundError: the environment lacks a dependency
        found[key] = (dist.version, found.get(key, ("", set()))[1] | extras)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None:
                wanted = True
            elif "extra" in str(req.marker):  # a requirement of one of the extras asked for
                wanted = any(req.marker.evaluate({"extra": e}) for e in extras)
            else:
                wanted = req.marker.evaluate()
            if wanted:
                walk(req.name, set(req.extras))

    walk("langclass", {"ray"})
    found.pop("langclass", None)
    pins = [f"{k}=={v}" for k, (v, _) in sorted(found.items())]
    return [f"torch=={torch_pin()}" if p.startswith("torch==") else p for p in pins]


CONSTRAINTS_HEADER = """# Every Python package of the service image pinned (the base dependencies and the ray extra, with
# everything they pull in), so two builds of one commit install the same versions. The Dockerfile's
# install uses this file (`make install CONSTRAINTS=constraints-image.txt`); a development install
# keeps constraints.txt (torch only). torch's pin must equal constraints.txt's (a test checks it).
# Regenerate from an environment installed with `make install EXTRAS=ray` (CPython 3.11, Linux):
#   .venv/bin/python bench/container.py --write-constraints
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help="base tarball, torch wheel, logs (default %(default)s; env LANGCLASS_CONTAINER_CACHE)")
    ap.add_argument("--image", default=DEFAULT_IMAGE, help="tag of the built image (default %(default)s)")
    ap.add_argument("--mirror", default=DEFAULT_MIRROR, help="Debian mirror for debootstrap (default: the one this host's apt uses)")
    ap.add_argument("--cold", action="store_true", help="remove the cached images (and podman's dangling layers), rebuild the base with debootstrap, fetch the wheel again, build without the layer cache")
    ap.add_argument("--postgres-url", default=os.environ.get("LANGCLASS_TEST_POSTGRES_URL", DEFAULT_PG), help="server for the PostgreSQL checks (default %(default)s)")
    ap.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL checks")
    ap.add_argument("--job-timeout", type=float, default=600, help="seconds the construct job may take on the worker container (default %(default)s)")
    ap.add_argument("--start-timeout", type=float, default=180, help="seconds a container may take to answer /healthz (default %(default)s)")
    ap.add_argument("--write-constraints", action="store_true",
                    help="write constraints-image.txt from this interpreter's environment (no container; no root) and exit")
    args = ap.parse_args(argv)
    if args.write_constraints:
        (ROOT / "constraints-image.txt").write_text(CONSTRAINTS_HEADER + "\n".join(image_pins()) + "\n")
        print(f"wrote {ROOT / 'constraints-image.txt'}")
        return 0
    if args.start_timeout <= 0 or args.job_timeout <= 0:
        ap.error("--start-timeout and --job-timeout must be positive")
    if not (ROOT / "Dockerfile").is_file():
        ap.error(f"no Dockerfile in {ROOT}")

    cache: Path = args.cache_dir.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    version = code_version()
    print(f"container check of {ROOT} (code_version {version}), cache {cache}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}", flush=True)
    report = Report()
    runner: Runner | None = None
    tag = f"{os.getpid()}-{secrets.token_hex(2)}"
    schema: str | None = None
    status = 1
    try:
        runner = Runner(cache)
        r = runner
        report.step("tools", lambda: ensure_tools(r))
        report.step("base image", lambda: ensure_base(r, cache, args.mirror, args.cold, args.image))
        wheel_box: list[Path] = []

        def wheel_step() -> str:
            wheel, detail = ensure_torch_wheel(cache, args.cold)
            wheel_box.append(wheel)
            return detail

        report.step("torch CPU wheel", wheel_step)
        report.step("build", lambda: build_image(r, cache, args.image, wheel_box[0], version, args.cold))
        report.step("image", lambda: check_image(r, args.image))

        # SQLite in a named volume; a second container on the same volume must still have the record
        volume = f"langclass-check-{tag}"
        r.podman("volume", "create", volume)
        r.created.append(("volume", volume))
        port = free_port()
        svc = Service(r, args.image, f"langclass-check-sqlite-{tag}", port, {}, volume)
        report.step("sqlite: start", lambda: svc.start(args.start_timeout))
        report.step("sqlite: health", lambda: check_health(svc, "sqlite"))
        report.step("sqlite: HEALTHCHECK", lambda: check_healthcheck(svc))
        report.step("sqlite: non-root", lambda: check_non_root(svc))
        report.step("sqlite: classify", lambda: check_classify(svc, version))
        report.step("sqlite: store", lambda: check_store(svc))
        stored_id = svc.stored_id
        report.step("sqlite: stop", svc.stop)

        def restart() -> str:
            mount = r.podman("volume", "inspect", "--format", "{{.Mountpoint}}", volume).stdout.strip()
            db = Path(mount) / "langclass.db"
            st = r.run(["stat", "--format", "%F %u %s", str(db)], check=False)
            kind_uid_size = st.stdout.split()[-3:] if st.returncode == 0 else []
            if kind_uid_size[:2] != ["file", str(SERVICE_UID)]:
                raise CheckFailed(f"{db} missing or not a file of uid {SERVICE_UID} after the container was removed: {(st.stdout + st.stderr).strip()}")
            # the replacement in the README's form: bridge network, published port (needs iptables)
            svc2 = Service(r, args.image, f"langclass-check-sqlite2-{tag}", free_port(), {}, volume, published=True)
            started = svc2.start(args.start_timeout)
            detail = check_kept(svc2, stored_id)
            svc2.stop()
            return (f"container removed, a new one on volume {volume} ({int(kind_uid_size[2]) // 1024} KiB langclass.db) "
                    f"in the README's form ({started}): {detail}")

        report.step("sqlite: restart keeps the volume", restart)

        if args.no_postgres:
            print("skip  postgresql: --no-postgres given", flush=True)
        else:
            new_schema = f"langclass_container_{tag.replace('-', '_')}"
            url = with_search_path(args.postgres_url, new_schema)
            env = {"LANGCLASS_DATABASE_URL": url}
            pg = Service(r, args.image, f"langclass-check-pg-{tag}", free_port(), env, None)

            def pg_start() -> str:
                nonlocal schema
                host, pg_port = pg_reachable(args.postgres_url)
                pg_exec(r, args.image, args.postgres_url, f'CREATE SCHEMA "{new_schema}"')
                schema = new_schema
                return f"{host}:{pg_port}, a new schema {new_schema} (search_path in the URL); " + pg.start(args.start_timeout)

            report.step("postgresql: start", pg_start)
            report.step("postgresql: health", lambda: check_health(pg, "postgresql"))
            report.step("postgresql: classify", lambda: check_classify(pg, version))
            report.step("postgresql: store", lambda: check_store(pg))
            pg_id = pg.stored_id

            def rows() -> str:
                n = pg_exec(r, args.image, args.postgres_url, f'SELECT count(*) FROM "{schema}".languages WHERE id = \'{pg_id}\'')
                rev = pg_exec(r, args.image, args.postgres_url, f'SELECT version_num FROM "{schema}".alembic_version')
                if n != "1":
                    raise CheckFailed(f"{schema}.languages holds {n} rows with id {pg_id[:16]}…; expected 1")
                return f"the row is in {schema}.languages on the server; alembic_version {rev}"

            report.step("postgresql: row on the server", rows)

            def pg_restart() -> str:
                stopped = pg.stop()
                pg2 = Service(r, args.image, f"langclass-check-pg2-{tag}", free_port(), env, None)
                pg2.start(args.start_timeout)
                detail = check_kept(pg2, pg_id)
                pg2.stop()
                return f"{stopped}; a new container: {detail}"

            report.step("postgresql: restart", pg_restart)

            # the compose file's topology: an API without job slots and a `langclass worker` container
            api = Service(r, args.image, f"langclass-check-pg3-{tag}", free_port(), {**env, "LANGCLASS_WORKER_SLOTS": "0"}, None)
            worker = Service(r, args.image, f"langclass-check-worker-{tag}", 0, {**env, "LANGCLASS_WORKER_SLOTS": "1"}, None, ("worker",))
            report.step("postgresql: api without job slots", lambda: api.start(args.start_timeout))
            report.step("postgresql: worker", lambda: worker.start(args.start_timeout))
            report.step("postgresql: construct job on the worker", lambda: check_job(api, worker, pg_id, version, args.job_timeout))
            report.step("postgresql: stop", lambda: f"api {api.stop()}; worker {worker.stop()}")
        status = 0
    except CheckFailed as exc:
        if not getattr(exc, "reported", False):
            print(f"FAIL  {exc}", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        status = 130
    except Exception:  # a bug of this script, not a failed check: the traceback, then the cleanup
        traceback.print_exc()
    finally:
        if runner is not None:
            if schema is not None:
                try:
                    pg_exec(runner, args.image, args.postgres_url, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                except CheckFailed as exc:
                    print(f"warn  could not drop schema {schema}: {exc}", flush=True)
                    status = status or 1
            left = runner.cleanup()
            for item in left:
                print(f"warn  not removed: {item}", flush=True)
    total = time.monotonic() - report.t0
    if status == 0:
        print(f"PASS  {report.passed} checks in {total:.0f} s", flush=True)
    else:
        print(f"FAILED after {report.passed} passing checks, {total:.0f} s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())

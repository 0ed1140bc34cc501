"""The container files (issue 35, items 7 and 8), read without building anything:

* a ``.env`` (compose's file of secrets: ``POSTGRES_PASSWORD``, ``LANGCLASS_API_KEYS``) is excluded
  from the build context by ``.dockerignore`` and from the repository by ``.gitignore`` (before:
  ``COPY . .`` put it in the image);
* ``docker-compose.yml`` runs a CPU worker by default — no GPU reservation, no CUDA base (before:
  ``docker compose up`` needed an NVIDIA GPU) — and ``docker-compose.gpu.yml`` is the opt-in GPU
  override; the API and the worker share one volume holding the census directory (before: census
  failed under compose, ``'/app' is not writable``);
* the image installs with ``constraints-image.txt``, every package pinned (before: only torch);
* ``make container-check`` starts a container in the README's ``run -p`` form (before: only host
  networking, so the published-port form, which needs iptables under podman, was never exercised).
"""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")  # PyYAML comes with ray and uvicorn[standard]

ROOT = Path(__file__).resolve().parents[1]


def _dockerignored(path: str) -> bool:
    """Whether ``path`` is left out of the build context by .dockerignore (its rules in order, ``!``
    re-including; a pattern also matches in any folder when it starts with ``**/``)."""
    ignored = False
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line[1:] if negate else line
        pattern = pattern.rstrip("/")
        anywhere = pattern.startswith("**/") and fnmatch.fnmatch(path.split("/")[-1], pattern[3:])
        if fnmatch.fnmatch(path, pattern) or anywhere:
            ignored = not negate
    return ignored


@pytest.mark.parametrize("name", [".env", ".env.local", ".env.production"])
def test_env_files_stay_out_of_the_image_and_the_repository(name: str) -> None:
    assert _dockerignored(name), f"{name} would be copied into the image"
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    r = subprocess.run(["git", "check-ignore", "-q", "--no-index", name], cwd=ROOT)
    assert r.returncode == 0, f"{name} is not ignored by .gitignore"


def test_an_example_env_file_may_be_committed() -> None:
    assert not _dockerignored(".env.example")  # a template without secrets
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    assert subprocess.run(["git", "check-ignore", "-q", "--no-index", ".env.example"], cwd=ROOT).returncode == 1


def _compose(name: str) -> dict:
    return yaml.safe_load((ROOT / name).read_text())


def test_compose_runs_a_cpu_worker_by_default() -> None:
    services = _compose("docker-compose.yml")["services"]
    worker = services["worker"]
    assert worker["command"] == ["worker"]
    assert "deploy" not in worker, "the default worker must not reserve a GPU"
    args = (worker.get("build") or {}).get("args") or {}
    assert "BASE_IMAGE" not in args and "TORCH_INDEX" not in args, "the default worker builds the CPU image"
    for name in ("api", "worker"):  # records name the commit when LANGCLASS_CODE_VERSION is given (no .git in the image)
        assert services[name]["build"]["args"]["CODE_VERSION"] == "${LANGCLASS_CODE_VERSION:-}", name
    assert worker["image"] == services["api"]["image"] == "langclass:cpu"
    assert services["api"]["environment"]["LANGCLASS_WORKER_SLOTS"] == "0"


def test_the_gpu_worker_is_an_opt_in_override() -> None:
    worker = _compose("docker-compose.gpu.yml")["services"]["worker"]
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
    assert worker["build"]["args"]["BASE_IMAGE"].startswith("nvidia/cuda:") and "cu" in worker["build"]["args"]["TORCH_INDEX"]
    assert "docker-compose.gpu.yml" in (ROOT / "docker-compose.yml").read_text()  # the default file says how


def test_api_and_worker_share_the_census_directory() -> None:
    compose = _compose("docker-compose.yml")
    services = compose["services"]
    mounts = {name: {v.split(":")[1]: v.split(":")[0] for v in services[name].get("volumes", [])} for name in ("api", "worker")}
    assert mounts["api"].get("/data") and mounts["api"]["/data"] == mounts["worker"].get("/data")
    assert mounts["api"]["/data"] in compose["volumes"]
    for name in ("api", "worker"):
        env = services[name]["environment"]
        assert env["LANGCLASS_CENSUS_DIR"].startswith("/data/"), name
        assert env["LANGCLASS_JOB_CHECKPOINT_DIR"].startswith("/data/"), name


def test_the_build_refuses_a_cuda_torch_when_the_cpu_index_was_asked_for(tmp_path: Path) -> None:
    """The Dockerfile's dependency step checks the installed torch: with ``TORCH_INDEX`` the CPU
    index, a CUDA build (pip's silent fallback to PyPI when the index is unreachable) fails the
    build. The check's own Python line is run here against a stand-in torch of each kind."""
    import re
    import sys

    text = (ROOT / "Dockerfile").read_text()
    m = re.search(r'case "\$\{TORCH_INDEX\}" in \*/cpu\) \.venv/bin/python -c "([^"]+)";; esac', text)
    assert m, "the Dockerfile no longer checks the torch build"
    code = m.group(1).replace("${TORCH_INDEX}", "https://download.pytorch.org/whl/cpu")
    for cuda, fails in ((None, False), ("12.6", True)):
        fake = tmp_path / f"cuda-{cuda}" / "torch"
        fake.mkdir(parents=True)
        (fake / "__init__.py").write_text(f"__version__ = '2.13.0'\nclass version:\n    cuda = {cuda!r}\n")
        done = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(fake.parent)}, capture_output=True, text=True)
        assert (done.returncode != 0) == fails, (cuda, done.stderr)
        if fails:
            assert "is a CUDA build although TORCH_INDEX is the CPU index" in done.stderr


# --- the rest of item 8: pinned image dependencies, the README's `run -p` form in the check ----------


def _pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line!r} is not pinned with =="
            out[name.lower().replace("_", "-")] = version
    return out


def test_the_image_pins_every_dependency_and_torch_as_the_development_install() -> None:
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _pins(ROOT / "constraints-image.txt")
    direct = [*project["dependencies"], *project["optional-dependencies"]["ray"]]
    for req in direct:
        name = re.match(r"[A-Za-z0-9_.\-]+", req).group(0).lower().replace("_", "-")  # type: ignore[union-attr]
        assert name in pins, f"{name} is not pinned in constraints-image.txt"
    assert pins["torch"] == _pins(ROOT / "constraints.txt")["torch"]
    assert not [n for n in pins if n.startswith("nvidia-")], "a CUDA package pinned for the CPU image"
    docker = (ROOT / "Dockerfile").read_text()
    assert "constraints-image.txt" in docker.split("COPY . .")[0].split("\nCOPY ")[1]  # in the dependency layer
    installs = re.findall(r"make install EXTRAS[^\n]*", docker)
    assert len(installs) == 2 and all("CONSTRAINTS=constraints-image.txt" in line for line in installs), installs
    assert "-c $(CONSTRAINTS)" in (ROOT / "Makefile").read_text()


def _container_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_container", ROOT / "bench" / "container.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_check_starts_a_container_in_the_readmes_published_port_form() -> None:
    import re

    container = _container_module()
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"docker run -p (127\.0\.0\.1):(\d+):(\d+) -v ([\w-]+):/data langclass", readme)
    assert m, "the README no longer shows the run -p form"
    svc = container.Service(None, "img", "c1", 8137, {}, "vol", published=True)
    args = svc.run_args()
    assert ["--publish", f"127.0.0.1:8137:{m.group(3)}"] == args[args.index("--publish"):args.index("--publish") + 2]
    assert "--network" not in args and not [a for a in args if a.startswith("LANGCLASS_PORT")]  # the image's own port
    assert ["--volume", "vol:/data"] == args[args.index("--volume"):args.index("--volume") + 2]
    host = container.Service(None, "img", "c2", 8137, {}, None).run_args()
    assert host[host.index("--network") + 1] == "host" and "--publish" not in host
    source = (ROOT / "bench" / "container.py").read_text()
    assert "published=True" in source.split("def main(")[1], "the check never starts the published-port form"
    assert "iptables" in container.TOOLS and "iptables" in container.APT_PACKAGES  # podman's bridge needs it


"""Every command line the Dagger module runs, as plain data (no Dagger import).

The module (``__init__.py``) only wires these into containers; the commands are the harness's
own (``ci/images`` build script, the ``simcluster`` CLI, ``ci/release``, ``ci/tools``, helm), the
same ones a developer runs by hand, so what the module does is tested here and by those tools'
own tests. Paths are inside the runner container.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

# The runner: Debian bookworm with the Go the tools need (ci/tools/README.md: go1.26.8), plus
# Python 3.9 (Pants) and 3.11 (the services) from uv's standalone builds. These images are pulled
# by the Dagger engine, which this workplace cannot reach: nothing here has run them.
RUNNER_IMAGE = "golang:1.26.8-bookworm"
UV_IMAGE = "ghcr.io/astral-sh/uv:0.13.8"
PYTHONS = ("3.9", "3.11")

SRC = "/src"
OUT = "/out"
STATE = "/state"
JOULIE_CACHE = "/root/.cache/joulie"
PANTS_CACHE = "/root/.cache/pants"
CACHE_VOLUMES = {JOULIE_CACHE: "joulie-cache", PANTS_CACHE: "joulie-pants-cache"}
RUNNER_ENV = {
    "PANTS_PANTSD": "false",  # one-shot, like .ci/run
    "PANTS_DYNAMIC_UI": "false",
    "PANTS_COLORS": "false",
    "UV_PYTHON_BIN_DIR": "/usr/local/bin",  # python3.9 / python3.11 on PATH for ./pants
}
# What never goes into the engine from the checkout.
SOURCE_IGNORE = ("dist", ".pants.d", ".pids", ".ci/state", "**/__pycache__")

IMAGES_OUT = f"{OUT}/images"
IMAGES_JSON = f"{IMAGES_OUT}/images.json"
CHARTS_OUT = f"{OUT}/charts"
CHARTS = ("charts/joulie", "charts/joulie-simulator")
DEFAULT_SPEC = "simulated-cluster/specs/smoke.yaml"
SUMMARY = f"{STATE}/runs/latest/summary.json"

_REGISTRY = re.compile(r"[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*")


def uv_install_pythons() -> list[str]:
    return ["/usr/local/bin/uv", "python", "install", *PYTHONS]


def system_packages() -> list[str]:
    return ["bash", "ci/install-system-packages"]


def build_images() -> list[str]:
    """The image build script: package, build with its own dockerd, start each once, save."""
    return ["./pants", "run", "ci/images:build", "--", "--verify", "--save", IMAGES_OUT, "--json", IMAGES_JSON]


def simcluster(*args: str) -> list[str]:
    """The harness's wrapper: for up/smoke it builds the Go tools (cached) and packages the PEXes."""
    return ["./simcluster", *args]


def simcluster_env(spec: str, timing: str = "ci", runtime: str = "") -> dict[str, str]:
    env = {"SIMCLUSTER_DIR": STATE, "SIMCLUSTER_SPEC": spec, "SIMCLUSTER_TIMING": timing}
    if runtime:
        env["SIMCLUSTER_RUNTIME"] = runtime
    return env


def simcluster_up(spec: str) -> list[str]:
    """One exec: the cluster lives only as long as the exec, so ``up`` is followed by ``status``."""
    up = shlex.join(simcluster("up", "--spec", spec))
    status = shlex.join(simcluster("status"))
    return ["bash", "-c", f"set -euo pipefail; {up}; {status}"]


def simcluster_smoke(spec: str) -> list[str]:
    return simcluster("smoke", "--spec", spec)


def release_list() -> list[str]:
    return ["./pants", "run", "ci/release:release", "--", "list"]


def parse_release_list(text: str) -> dict[str, str]:
    """``ci/release list`` output (name TAB version TAB image TAB file) → {name: version}."""
    out = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 4 and re.fullmatch(r"\d+\.\d+\.\d+", parts[1]):
            out[parts[0]] = parts[1]
    return out


def validate_registry(registry: str) -> str:
    """``host[:port][/path]``, lower case, no scheme, tag or trailing slash; returned unchanged."""
    if not _REGISTRY.fullmatch(registry) or "." not in registry.split("/")[0] and ":" not in registry.split("/")[0] and registry.split("/")[0] != "localhost":
        raise ValueError(
            f"registry {registry!r}: expected host[:port][/path] such as registry.example.com/joulie "
            "or localhost:5000/joulie (no scheme, no tag, lower case)"
        )
    return registry


def registry_host(registry: str) -> str:
    return validate_registry(registry).split("/")[0]


@dataclass(frozen=True)
class Publish:
    tarball: str  # docker save output under IMAGES_OUT
    refs: tuple[str, ...]  # where it goes: <registry>/joulie-<component>:<version> and :<dev tag>


def publish_plan(registry: str, images_json: str, versions: dict[str, str]) -> list[Publish]:
    """From the build's images.json and the service versions: what to push where.

    The component's version is its entry service's (the simulator image: the simulator's).
    """
    validate_registry(registry)
    plan = []
    for img in json.loads(images_json):
        component, entry, tag = img["component"], img["services"][0], img["tag"]
        if entry not in versions:
            raise ValueError(f"no version for {entry!r} (known: {', '.join(sorted(versions))})")
        repo = f"{registry}/joulie-{component}"
        plan.append(Publish(f"{IMAGES_OUT}/joulie-{component}.tar", (f"{repo}:{versions[entry]}", f"{repo}:{tag}")))
    return plan


def helm_from_manifest() -> str:
    """Shell: the helm that ci/tools/bootstrap-tools.sh built (its manifest line HELM=<path>)."""
    return '"$(ci/tools/bootstrap-tools.sh --print-paths helm | sed -n "s/^HELM=//p")"'


def package_charts() -> list[str]:
    helm = helm_from_manifest()
    charts = " ".join(shlex.quote(c) for c in CHARTS)
    return ["bash", "-c", f"set -euo pipefail; ci/tools/bootstrap-tools.sh helm; mkdir -p {CHARTS_OUT}; "
            f"for c in {charts}; do {helm} package \"$c\" --destination {CHARTS_OUT}; done"]


def push_charts(registry: str) -> list[str]:
    """helm push of every packaged chart to oci://<registry>/charts (login from $REGISTRY_PASSWORD)."""
    host = registry_host(registry)
    helm = helm_from_manifest()
    login = (f'if [ -n "${{REGISTRY_USERNAME:-}}" ]; then printf %s "$REGISTRY_PASSWORD" | '
             f'{helm} registry login {shlex.quote(host)} --username "$REGISTRY_USERNAME" --password-stdin; fi')
    push = f"for t in {CHARTS_OUT}/*.tgz; do {helm} push \"$t\" {shlex.quote('oci://' + registry + '/charts')}; done"
    return ["bash", "-c", f"set -euo pipefail; {login}; {push}"]

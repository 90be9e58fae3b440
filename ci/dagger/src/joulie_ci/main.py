"""Joulie's Dagger module: the harness's own commands in a runner container.

    dagger -m ci/dagger call build-images export --path out/images
    dagger -m ci/dagger call simcluster-up
    dagger -m ci/dagger call simcluster-smoke                 # prints summary.json
    dagger -m ci/dagger call release --registry registry.example.com/joulie \\
        --username me --password env:REGISTRY_PASSWORD

Thin by design: every command line comes from ``commands.py`` (tested without an engine), and
each is a command a developer runs by hand (``./pants run ci/images:build``, ``./simcluster
smoke``, ``./pants run ci/release:release -- list``, ``helm package``/``push``). This file imports the
Dagger SDK, which is not in the repository's lockfile: Pants lints it with ruff but does not
type-check or import it (see BUILD beside it).
"""

from __future__ import annotations

from typing import Annotated

import dagger  # pants: no-infer-dep
from dagger import DefaultPath, Doc, Ignore, ReturnType, dag, function, object_type  # pants: no-infer-dep
from joulie_ci import commands

Source = Annotated[
    dagger.Directory,
    DefaultPath("/"),
    Ignore(list(commands.SOURCE_IGNORE)),
    Doc("the Joulie checkout (default: the repository this module is in)"),
]


def _runner(source: dagger.Directory) -> dagger.Container:
    """Debian bookworm + Go + Python 3.9/3.11 + the Debian packages the build needs, caches mounted."""
    ctr = (
        dag.container()
        .from_(commands.RUNNER_IMAGE)
        .with_file("/usr/local/bin/uv", dag.container().from_(commands.UV_IMAGE).file("/uv"))
    )
    for key, value in commands.RUNNER_ENV.items():
        ctr = ctr.with_env_variable(key, value)
    ctr = ctr.with_exec(commands.uv_install_pythons())
    for path, volume in commands.CACHE_VOLUMES.items():
        ctr = ctr.with_mounted_cache(path, dag.cache_volume(volume))
    return (
        ctr.with_directory(commands.SRC, source)
        .with_workdir(commands.SRC)
        .with_exec(commands.system_packages())
    )


def _with_env(ctr: dagger.Container, env: dict[str, str]) -> dagger.Container:
    for key, value in env.items():
        ctr = ctr.with_env_variable(key, value)
    return ctr


@object_type
class JoulieCi:
    @function
    def build_images(self, source: Source) -> dagger.Directory:
        """The four service images as docker-save tarballs plus images.json (refs, tags, sizes).

        Runs ci/images' build script in the runner with its own dockerd (needs the engine's
        insecure root capabilities); each image is started once with --version.
        """
        return (
            _runner(source)
            .with_exec(commands.build_images(), insecure_root_capabilities=True)
            .directory(commands.IMAGES_OUT)
        )

    @function
    async def simcluster_up(self, source: Source, spec: str = commands.DEFAULT_SPEC, runtime: str = "") -> str:
        """Bring the simulated cluster up and print its status (it lives only for this call)."""
        ctr = _with_env(_runner(source), commands.simcluster_env(spec, runtime=runtime))
        return await ctr.with_exec(commands.simcluster_up(spec), insecure_root_capabilities=True).stdout()

    @function
    async def simcluster_smoke(
        self, source: Source, spec: str = commands.DEFAULT_SPEC, timing: str = "ci", runtime: str = ""
    ) -> str:
        """The smoke run (up, deploy, checks, down); returns summary.json. A failed run raises with it."""
        ctr = _with_env(_runner(source), commands.simcluster_env(spec, timing=timing, runtime=runtime))
        ctr = ctr.with_exec(commands.simcluster_smoke(spec), insecure_root_capabilities=True, expect=ReturnType.ANY)
        summary = await ctr.file(commands.SUMMARY).contents()
        if await ctr.exit_code() != 0:
            raise RuntimeError(f"simcluster smoke failed; summary.json:\n{summary}")
        return summary

    @function
    async def release(
        self,
        source: Source,
        registry: Annotated[str, Doc("host[:port][/path], e.g. registry.example.com/joulie")],
        username: str = "",
        password: dagger.Secret | None = None,
    ) -> str:
        """Build the images, push each as <registry>/joulie-<component>:<version> and :<dev tag>,
        and push the packaged charts to oci://<registry>/charts. Returns what was published."""
        commands.validate_registry(registry)
        images = self.build_images(source)
        runner = _runner(source)
        versions = commands.parse_release_list(await runner.with_exec(commands.release_list()).stdout())
        plan = commands.publish_plan(registry, await images.file("images.json").contents(), versions)
        published = []
        for item in plan:
            ctr = dag.container().import_(images.file(item.tarball.rsplit("/", 1)[1]))
            if username and password is not None:
                ctr = ctr.with_registry_auth(commands.registry_host(registry), username, password)
            for ref in item.refs:
                published.append(await ctr.publish(ref))
        charts = runner.with_exec(commands.package_charts())
        if username and password is not None:
            charts = charts.with_env_variable("REGISTRY_USERNAME", username).with_secret_variable("REGISTRY_PASSWORD", password)
        out = await charts.with_exec(commands.push_charts(registry)).stdout()
        return "\n".join([*published, out.strip()])

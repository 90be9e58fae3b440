"""What a command hands down to the layers under it, built once by the CLI: the settings, the state
directory they name and the progress printer (:class:`Context`); the cluster spec with its fake
Node objects rendered once (:class:`RenderedSpec`), so up, deploy, the smoke's checks and the
benchmark all work from the same list."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from joulie_api import names
from joulie_simcluster.nodes import render_nodes
from joulie_simcluster.progress import Progress
from joulie_simcluster.settings import Settings
from joulie_simcluster.spec import ClusterSpec, load_spec
from joulie_simcluster.state import StateDir


@dataclass(frozen=True)
class Context:
    settings: Settings
    state: StateDir
    progress: Progress = field(default_factory=Progress)

    @classmethod
    def of(cls, settings: Settings, progress: Progress | None = None) -> Context:
        return cls(settings, StateDir(settings.dir), progress or Progress())

    def with_progress(self, progress: Progress) -> Context:
        return dataclasses.replace(self, progress=progress)


@dataclass(frozen=True)
class RenderedSpec:
    """A cluster spec, its text (``up`` keeps a copy in the state dir) and its Node objects."""

    spec: ClusterSpec
    text: str
    nodes: list[dict[str, Any]]

    @classmethod
    def of(cls, spec: ClusterSpec, text: str = "") -> RenderedSpec:
        return cls(spec, text, render_nodes(spec))

    @classmethod
    def load(cls, path: Path) -> RenderedSpec:
        """The spec file `path` (SpecError naming the file when it is not a valid spec)."""
        spec = load_spec(path)
        return cls.of(spec, path.read_text())

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes]

    @property
    def managed(self) -> list[str]:
        """The Nodes labelled joulie.io/managed=true: those the controller manager writes a NodeTwin for."""
        return [n["metadata"]["name"] for n in self.nodes if n["metadata"]["labels"].get(names.LABEL_MANAGED) == "true"]

    def pool_of(self, node: str) -> str:
        for n in self.nodes:
            if n["metadata"]["name"] == node:
                return str(n["metadata"]["labels"][names.LABEL_SIM_POOL])
        raise KeyError(node)

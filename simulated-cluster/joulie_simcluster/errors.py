"""The harness's one error type for what a command could not do (a process that would not start, a
cluster that is not there, a component that did not report). The CLI prints its message and exits
1; a spec or settings error exits 2 instead (:class:`joulie_simcluster.spec.SpecError`,
:class:`joulie_simcluster.settings.SettingsError`)."""

from __future__ import annotations


class RuntimeFailure(RuntimeError):
    """Something the runtime could not do; the message names what, with logs where there are."""

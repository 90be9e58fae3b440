"""The supervisor daemon: one per cluster, started by ``up`` and stopped by ``down``; the CLI exits
after each command, so something long-lived must own the restarts, as kubelet does on a node.

Every ``POLL_S`` it takes the state dir's lock (skipping the round when a command holds it), looks
at every process the state dir records (``processes.watched``), and restarts a dead one once its
backoff is over (``backoff.observe``). Its own record, ``<state>/supervisor.json`` (PID, start
time, per process: restarts, last exit, next restart), is what ``simcluster status`` prints. It
exits when ``cluster.env`` is gone (``down``, or an ``up`` that starts afresh starts another).

Emulated power states (``runtimes/power.py``): every ``POWER_POLL_S`` it reads the emulator's power
state per node; a node that is not on (shut down through its BMC) has its Node made NotReady and
its agent stopped, and that agent is not restarted (``powered-off.json``) until the node is on
again, as kubelet runs no DaemonSet Pod on a node that is off. It also keeps the BMC Secret equal
to ``bmcs.json`` (new ports after a simulator restart).

Run as ``python -m joulie_simcluster.runtimes.supervision.daemon --state DIR --backoff BASE,MAX,RESET``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from joulie_simcluster.runtimes import power
from joulie_simcluster.runtimes.pids import pid_alive, start_ticks
from joulie_simcluster.runtimes.supervision.backoff import BackoffPolicy, ProcessRecord, observe, restarted
from joulie_simcluster.runtimes.supervision.lock import changing
from joulie_simcluster.runtimes.supervision.processes import start_again, watched
from joulie_simcluster.state import StateDir

POLL_S = 0.5
POWER_POLL_S = 1.0


def record_path(state: StateDir) -> Path:
    return state.root / "supervisor.json"


def log(msg: str) -> None:
    print(time.strftime("%Y-%m-%dT%H:%M:%SZ ", time.gmtime()) + msg, flush=True)


class Supervisor:
    def __init__(self, state: StateDir, policy: BackoffPolicy):
        self.state, self.policy = state, policy
        self.records: dict[str, ProcessRecord] = {}
        self.children: dict[int, subprocess.Popen[bytes]] = {}
        self.generations: dict[str, str] = {}
        self.stopping = False
        self.next_power_s = 0.0
        self.bmcs_text: str | None = None
        self.power_error = ""

    def _exit_reason(self, pid: int) -> str:
        """Our own children's exit status; a process the CLI started is just gone."""
        child = self.children.get(pid)
        if child is None or child.poll() is None:
            return "gone"
        rc = child.returncode
        return f"signal {-rc}" if rc < 0 else f"exit {rc}"

    def _reap(self) -> None:
        for pid, child in list(self.children.items()):
            if child.poll() is not None and pid not in {r.pid for r in self.records.values()}:
                del self.children[pid]

    def round(self, now_s: float) -> None:
        """One look at every recorded process, under the lock."""
        with changing(self.state.root, wait=False) as held:
            if not held:
                return
            # A fresh up (STARTED_AT) or deploy (DEPLOY_ID): that side's restart counts start again.
            generations = {"cluster": (self.state.read_cluster_env() or {}).get("STARTED_AT", ""),
                           "deploy": (self.state.read_deploy_env() or {}).get("DEPLOY_ID", "")}
            for kind, generation in generations.items():
                if self.generations.get(kind) != generation:
                    self.records = {k: r for k, r in self.records.items() if not k.startswith(kind + "/")}
                    self.generations[kind] = generation
            off_agents = {f"agent-{n}" for n in self.power_round(now_s)}
            seen = set()
            for w in watched(self.state):
                key = f"{w.kind}/{w.name}"
                seen.add(key)
                if w.kind == "deploy" and w.name in off_agents:
                    continue  # its node is off: no agent runs there, none is restarted
                rec = self.records.setdefault(key, ProcessRecord())
                action = observe(rec, w.pid, w.alive, now_s, self.policy, self._exit_reason(w.pid))
                if action == "restart":
                    try:
                        child = start_again(self.state, w.name, w.kind)
                    except (KeyError, OSError) as e:
                        log(f"{w.name}: cannot start again: {e!r}; next try after the backoff")
                        rec.dead_since_s = None  # counts as one more crash
                        observe(rec, 0, False, now_s, self.policy, f"start failed: {e}")
                        continue
                    self.children[child.pid] = child
                    restarted(rec, child.pid, now_s)
                    log(f"{w.name}: {rec.last_exit}; restarted as pid {child.pid} (restart {rec.restarts}, "
                        f"crash {rec.crashes} in a row)")
                elif action == "waiting" and rec.dead_since_s == now_s:
                    log(f"{w.name} (pid {w.pid}): {rec.last_exit}; restart in {rec.restart_at_s - now_s:.1f}s"
                        if rec.restart_at_s else f"{w.name}: dead")
            for key in set(self.records) - seen:
                del self.records[key]
            self._reap()
            self.write()

    def power_round(self, now_s: float) -> set[str]:
        """The nodes taken down (off through their BMCs), after acting on the emulator's power
        states: Node NotReady and agent stopped on the way down, the reverse on the way up."""
        root = self.state.root
        down = power.read_powered_off(root)
        denv = self.state.read_deploy_env() or {}
        if now_s < self.next_power_s or not denv.get("BMC_SECRET") or not denv.get("SIMULATOR_HTTP"):
            return set(down)
        self.next_power_s = now_s + POWER_POLL_S
        try:
            self.bmcs_text = power.sync_secret(root, self.state.kubeconfig, self.bmcs_text)
            states = power.read_power_states(denv["SIMULATOR_HTTP"])
        except Exception as e:  # the simulator restarting, the API server away: try next round
            if self.bmcs_text is not None and repr(e) != self.power_error:
                log(f"power: cannot read the power states ({e!r}); trying every {POWER_POLL_S:g}s")
            self.power_error = repr(e)
            return set(down)
        self.power_error = ""
        change = power.transitions(states, down)
        for node in change.down:
            try:
                power.set_node_powered(self.state.kubeconfig, node, False)
            except Exception as e:
                log(f"power: node {node} is {states[node]} but marking its Node NotReady failed: {e!r}; next round")
                continue
            raw = denv.get(f"PID_agent-{node}", "")
            if raw.isdigit() and pid_alive(int(raw)) and start_ticks(int(raw)) == denv.get(f"START_agent-{node}"):
                os.kill(int(raw), signal.SIGTERM)
            down[node] = time.time()
            log(f"power: node {node} is {states[node]}: Node NotReady, agent stopped")
        for node in change.up:
            try:
                power.set_node_powered(self.state.kubeconfig, node, True)
            except Exception as e:
                log(f"power: node {node} is on again but giving it back to KWOK failed: {e!r}; next round")
                continue
            del down[node]
            name = f"agent-{node}"
            raw = denv.get(f"PID_{name}", "")
            running = raw.isdigit() and pid_alive(int(raw)) and start_ticks(int(raw)) == denv.get(f"START_{name}")
            if raw and not running:
                try:
                    child = start_again(self.state, name, "deploy")
                    self.children[child.pid] = child
                    self.records[f"deploy/{name}"] = ProcessRecord(pid=child.pid, started_at_s=now_s)
                except (KeyError, OSError) as e:
                    log(f"{name}: cannot start again after the boot: {e!r}")
            log(f"power: node {node} is on again: Node back to KWOK (Ready), agent started")
        if change.down or change.up:
            power.write_powered_off(root, down)
        return set(down)

    def write(self) -> None:
        path = record_path(self.state)
        data = {"pid": os.getpid(), "startTicks": start_ticks(os.getpid()),
                "backoff": {"baseS": self.policy.base_s, "maxS": self.policy.max_s,
                            "resetAfterS": self.policy.reset_after_s},
                "updatedAt": time.time(),
                "processes": {k: r.to_json() for k, r in sorted(self.records.items())}}
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)

    def run(self) -> int:
        log(f"supervising {self.state.root} (backoff {self.policy})")
        self.write()  # the CLI waits for this record to know the supervisor runs
        while not self.stopping:
            if not self.state.cluster_env.is_file():
                log("cluster.env gone: nothing to supervise; exiting")
                break
            self.round(time.time())
            time.sleep(POLL_S)
        record_path(self.state).unlink(missing_ok=True)
        return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="simcluster-supervisor")
    p.add_argument("--state", type=Path, required=True)
    p.add_argument("--backoff", default="10,300,600", help="BASE,MAX,RESET seconds (kubelet's: 10,300,600)")
    args = p.parse_args(argv)
    base, most, reset = (float(x) for x in args.backoff.split(","))
    sup = Supervisor(StateDir(args.state), BackoffPolicy(base, most, reset))

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        sup.stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return sup.run()


if __name__ == "__main__":
    sys.exit(main())

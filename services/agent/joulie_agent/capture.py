"""`joulie-agent capture`: copy this machine's hardware files into a corpus fixture, redacted.

Never writes expected.json (the golden test generates it after review) and never writes to the
captured machine. Redaction uses the corpus privacy patterns (reference §2.1).
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

from joulie_agent import gputools
from joulie_agent.corpus import CPUFREQ_FILES, ZONE_FILE_RE
from joulie_agent.hostread import HostPaths, read_proc_text, read_text, zone_dirs
from joulie_agent.toolrun import make_runner

REDACTIONS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"), r"\1-REDACTED"),
    (re.compile(r"\b[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"), "UUID-REDACTED"),
    (re.compile(r"(?i)\b(serial|asset[ _-]?tag)(\s*(?:number)?\s*[:=]\s*)\S+"), r"\1\2REDACTED"),
    (re.compile(r"\b([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}\b"), "MAC-REDACTED"),
    (re.compile(r"\b\d{1,3}(\.\d{1,3}){3}(/\d{1,2})?\b"), "IP-REDACTED"),
]
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def redact(text: str, hostnames: list[str]) -> str:
    for pat, repl in REDACTIONS:
        text = pat.sub(repl, text)
    for h in sorted({h for h in hostnames if h}, key=len, reverse=True):
        text = re.sub(re.escape(h), "REDACTED-HOST", text, flags=re.IGNORECASE)
    return text


def capture_machine(root: Path, out: Path, name: str) -> Path:
    if not NAME_RE.match(name):
        raise ValueError(f"--name {name!r}: expected lower-case letters, digits and dashes")
    dest = out / name
    if dest.exists():
        raise ValueError(f"{dest}: already exists")
    paths = HostPaths.under(root)
    import socket

    hosts = [socket.gethostname(), socket.getfqdn(), (read_text(root / "etc" / "hostname") or "").strip()]
    hosts += [h.split(".")[0] for h in hosts if h]
    dest.mkdir(parents=True)
    cpuinfo = read_proc_text(paths.cpuinfo)
    if cpuinfo is None:
        shutil.rmtree(dest)
        raise ValueError(f"{paths.cpuinfo}: unreadable; a fixture needs /proc/cpuinfo")
    (dest / "cpuinfo").write_text(redact(cpuinfo, hosts))
    for zd in zone_dirs(paths):
        zdest = dest / "powercap" / zd.name
        zdest.mkdir(parents=True)
        for f in sorted(zd.iterdir()):
            if ZONE_FILE_RE.match(f.name) and f.is_file():
                text = read_text(f)
                if text is not None:
                    (zdest / f.name).write_text(text)
    if paths.cpufreq.is_dir():
        for pol in sorted(paths.cpufreq.glob("policy*")):
            for fname in sorted(CPUFREQ_FILES):
                text = read_text(pol / fname)
                if text is not None:
                    (dest / "cpufreq" / pol.name).mkdir(parents=True, exist_ok=True)
                    (dest / "cpufreq" / pol.name / fname).write_text(text)
    run = make_runner()
    for argv, fname in ((gputools.NVIDIA_QUERY, "nvidia-smi.txt"), (gputools.NVIDIA_DEFAULT_QUERY, "nvidia-smi-default.txt"),
                        (gputools.ROCMSMI_LEGACY_QUERY, "rocm-smi.txt"),
                        (gputools.AMDSMI_LIMITS, "amd-smi.txt")):
        res = run(argv)
        if res.ok and res.output.strip() and "unrecognized arguments" not in res.output:
            (dest / fname).write_text(redact(res.output, hosts))
    (dest / "node-labels.json").write_text(json.dumps({}, indent=2) + "\n")
    (dest / "machine.yaml").write_text(
        "description: TODO what machine this is (model, sockets, GPUs)\n"
        "source: TODO who captured it and how (e.g. joulie-agent capture on the node)\n"
        f"capturedAt: \"{datetime.now(UTC).strftime('%Y-%m-%d')}\"\n"
        "allocatable:\n  cpu: \"TODO\"\n  memory: \"TODO\"\n  gpu: {}\n"
        "writeRejectingZones: []\n"
    )
    return dest

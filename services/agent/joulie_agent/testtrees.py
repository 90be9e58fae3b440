"""Node trees and stand-in GPU tools for tests and the benchmark (standard Linux layouts).

Not the emulator: plain files laid out as the kernel does, and small shell scripts that answer
the exact commands the agent runs, keeping their state in files so a test can read what was set.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

XEON_8260 = "Intel(R) Xeon(R) Platinum 8260 CPU @ 2.40GHz"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def cpuinfo(root: Path, sockets: int = 2, cpus_per_socket: int = 4, model: str = XEON_8260,
            vendor: str = "GenuineIntel") -> None:
    blocks = []
    for k in range(sockets * cpus_per_socket):
        blocks.append(f"processor\t: {k}\nvendor_id\t: {vendor}\nmodel name\t: {model}\n"
                      f"physical id\t: {k // cpus_per_socket}\ncore id\t\t: {k % cpus_per_socket}\n")
    write(root / "proc" / "cpuinfo", "\n".join(blocks) + "\n")


def zone(root: Path, zone_id: str, name: str, *, enabled: int = 1, energy_uj: int = 0,
         max_range_uj: int = 262143328850, pl1_uw: int | None = 165_000_000, max_uw: int = 165_000_000,
         rejecting: bool = False) -> Path:
    d = root / "sys" / "class" / "powercap" / zone_id
    write(d / "name", name + "\n")
    write(d / "enabled", f"{enabled}\n")
    write(d / "energy_uj", f"{energy_uj}\n")
    write(d / "max_energy_range_uj", f"{max_range_uj}\n")
    if pl1_uw is not None:
        write(d / "constraint_0_name", "long_term\n")
        write(d / "constraint_0_max_power_uw", f"{max_uw}\n")
        write(d / "constraint_0_time_window_us", "999424\n")
        if rejecting:
            (d / "constraint_0_power_limit_uw").mkdir()
        else:
            write(d / "constraint_0_power_limit_uw", f"{pl1_uw}\n")
    return d


def rapl_node(root: Path, sockets: int = 2, dies: int = 1, psys: bool = False, mmio: bool = False,
              max_uw: int = 165_000_000) -> None:
    """Intel RAPL: package zones (or package-N-die-M zones), DRAM sub-zones whose limit rejects writes."""
    cpuinfo(root, sockets)
    i = 0
    for s in range(sockets):
        for die in range(dies):
            name = f"package-{s}" if dies == 1 else f"package-{s}-die-{die}"
            zone(root, f"intel-rapl:{i}", name, max_uw=max_uw // dies, pl1_uw=max_uw // dies)
            zone(root, f"intel-rapl:{i}:0", "dram", enabled=0, pl1_uw=0, max_uw=47_250_000, rejecting=True)
            i += 1
    if psys:
        zone(root, f"intel-rapl:{i}", "psys", pl1_uw=0, max_uw=0)
    if mmio:
        zone(root, "intel-rapl-mmio:0", "package-0", max_uw=max_uw)


def cpufreq_node(root: Path, policies: int = 8, min_khz: int = 1_000_000, max_khz: int = 3_000_000,
                 driver: str = "acpi-cpufreq") -> None:
    for p in range(policies):
        d = root / "sys" / "devices" / "system" / "cpu" / "cpufreq" / f"policy{p}"
        write(d / "scaling_driver", driver + "\n")
        write(d / "cpuinfo_min_freq", f"{min_khz}\n")
        write(d / "cpuinfo_max_freq", f"{max_khz}\n")
        write(d / "scaling_max_freq", f"{max_khz}\n")
        write(d / "scaling_cur_freq", f"{max_khz}\n")


def scaling_max(root: Path) -> dict[str, int]:
    base = root / "sys" / "devices" / "system" / "cpu" / "cpufreq"
    return {p.name: int((p / "scaling_max_freq").read_text()) for p in sorted(base.glob("policy*"))}


def pl1(root: Path, zone_id: str) -> str:
    return (root / "sys" / "class" / "powercap" / zone_id / "constraint_0_power_limit_uw").read_text().strip()


@dataclass(frozen=True)
class FakeGPUs:
    bin_dir: Path
    state: Path

    def limit_w(self, i: int) -> float:
        return float((self.state / f"gpu{i}" / "limit").read_text())

    def calls(self) -> list[str]:
        log = self.state / "calls.log"
        return log.read_text().splitlines() if log.exists() else []


def _gpu_state(state: Path, n: int, min_w: str, max_w: str, cur_w: str, name: str) -> None:
    for i in range(n):
        d = state / f"gpu{i}"
        write(d / "min", min_w)
        write(d / "max", max_w)
        write(d / "limit", cur_w)
        write(d / "draw", "71.50")
        write(d / "name", name)


NVIDIA_SMI = r"""#!/bin/sh
S='{state}'
echo "$*" >> "$S/calls.log"
[ -e "$S/hang" ] && sleep 30
[ -e "$S/fail" ] && {{ echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."; exit 9; }}
if [ "$1" = "--query-gpu=index,power.min_limit,power.max_limit,power.limit,power.draw,name" ] && [ "$2" = "--format=csv,noheader,nounits" ]; then
  for d in "$S"/gpu*; do i=${{d##*gpu}}
    printf '%s, %s, %s, %s, %s, %s\n' "$i" "$(cat "$d/min")" "$(cat "$d/max")" "$(cat "$d/limit")" "$(cat "$d/draw")" "$(cat "$d/name")"
  done | sort -n
  exit 0
fi
# A board that lost its limit has an `enforced` file (the driver's default) until the next -pl.
if [ "$1" = "--query-gpu=index,enforced.power.limit" ] && [ "$2" = "--format=csv,noheader,nounits" ]; then
  [ -e "$S/enforced_fail" ] && {{ echo "Unable to determine the device handle for GPU 00000000:14:00.0: Unknown Error"; exit 15; }}
  for d in "$S"/gpu*; do i=${{d##*gpu}}
    if [ -e "$d/enforced" ]; then e=$(cat "$d/enforced"); else e=$(cat "$d/limit"); fi
    printf '%s, %s\n' "$i" "$e"
  done | sort -n
  exit 0
fi
# -i takes a comma-separated list; every board is checked before any is written, as nvidia-smi does.
if [ "$1" = "-i" ] && [ "$3" = "-pl" ] && [ $# -eq 4 ]; then
  [ -e "$S/hang_set" ] && sleep 30
  ids=$(echo "$2" | tr ',' ' ')
  for i in $ids; do
    d="$S/gpu$i"
    [ -d "$d" ] || {{ echo "No devices were found"; exit 6; }}
    [ -e "$d/locked" ] && {{ echo "Changing power management limit is not supported for GPU: 00000000:1$i:00.0."; exit 3; }}
    awk -v w="$4" -v lo="$(cat "$d/min")" -v hi="$(cat "$d/max")" 'BEGIN {{ exit !(w >= lo && w <= hi) }}' || {{
      echo "Provided power limit $4.00 W is not a valid power limit which should be between $(cat "$d/min") W and $(cat "$d/max") W for GPU 00000000:1$i:00.0"
      echo "Terminating early due to previous errors."; exit 2; }}
  done
  for i in $ids; do
    d="$S/gpu$i"; old=$(cat "$d/limit"); printf '%s.00' "$4" > "$d/limit"; rm -f "$d/enforced"
    echo "Power limit for GPU 00000000:1$i:00.0 was set to $4.00 W from $old W."
  done
  echo "All done."; exit 0
fi
echo "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help." >&2; exit 2
"""


def fake_nvidia_smi(base: Path, n: int = 8, min_w: str = "200.00", max_w: str = "700.00", cur_w: str = "700.00",
                    name: str = "NVIDIA H100 80GB HBM3") -> FakeGPUs:
    state, bin_dir = base / "nvstate", base / "bin"
    _gpu_state(state, n, min_w, max_w, cur_w, name)
    p = write(bin_dir / "nvidia-smi", NVIDIA_SMI.format(state=state))
    p.chmod(0o755)
    return FakeGPUs(bin_dir, state)


ROCM_SMI = r"""#!/bin/sh
S='{state}'
echo "$*" >> "$S/calls.log"
json_cards() {{
  first=1; printf '{{'
  for d in "$S"/gpu*; do i=${{d##*gpu}}
    [ $first = 1 ] || printf ', '; first=0
    if [ "$1" = caps ]; then
      printf '"card%s": {{"Max Graphics Package Power (W)": "%s", "Min Graphics Package Power (W)": "%s", "Current Power Cap (W)": "%s", "Card Series": "%s", "Card SKU": "X0000000"}}' "$i" "$(cat "$d/max")" "$(cat "$d/min")" "$(cat "$d/limit")" "$(cat "$d/name")"
    else
      printf '"card%s": {{"Card Series": "%s", "Card SKU": "X0000000"}}' "$i" "$(cat "$d/name")"
    fi
  done; printf '}}\n'
}}
case "$*" in
  "--showpowercap --showproductname --json")
    if [ -e "$S/legacy" ]; then json_cards caps; exit 0; fi
    echo "usage: rocm-smi [-h] ..." >&2; echo "rocm-smi: error: unrecognized arguments: --showpowercap" >&2; exit 2 ;;
  "--showproductname --json") json_cards names; exit 0 ;;
esac
if [ "$1" = "-d" ] && [ "$3" = "--setpoweroverdrive" ]; then
  d="$S/gpu$2"
  [ -e "$d/secondary" ] && exit 0
  printf '%s.0' "$4" > "$d/limit"; echo "GPU[$2]		: Successfully set power to: $4W"; exit 0
fi
echo "rocm-smi: error: unrecognized arguments: $*" >&2; exit 2
"""

AMD_SMI = r"""#!/bin/sh
S='{state}'
echo "$*" >> "$S/calls.log"
if [ "$*" = "static --limit --json" ]; then
  first=1; printf '['
  for d in "$S"/gpu*; do i=${{d##*gpu}}
    [ $first = 1 ] || printf ', '; first=0
    printf '{{"gpu": %s, "limit": {{"ppt0": {{"max_power_limit": {{"value": %s, "unit": "W"}}, "min_power_limit": {{"value": %s, "unit": "W"}}, "socket_power_limit": {{"value": %s, "unit": "W"}}}}, "ppt1": "N/A"}}}}' "$i" "$(cat "$d/max")" "$(cat "$d/min")" "$(cat "$d/limit")"
  done; printf ']\n'; exit 0
fi
# set -g <index...> -o ppt0 W; exits 0 whatever happened, as amd-smi does.
if [ "$1" = set ] && [ "$2" = -g ]; then
  shift 2; ids=""
  while [ $# -gt 0 ] && [ "$1" != -o ]; do ids="$ids $1"; shift; done
  if [ "$1" = -o ] && [ "$2" = ppt0 ] && [ $# -eq 3 ] && [ -n "$ids" ]; then
    for i in $ids; do
      d="$S/gpu$i"
      if [ -e "$d/unsupported" ]; then echo "[AMDSMI_STATUS_NOT_SUPPORTED] Unable to set power cap to $3W"; continue; fi
      printf '%s' "$3" > "$d/limit"; echo "GPU: $i"; echo "    POWERCAP: Successfully set power cap to $3W"
    done
    exit 0
  fi
fi
echo "amdsmi_cli_exceptions.AmdSmiInvalidCommandException: Command '$*' is invalid. Error code: -10"; exit 1
"""


def fake_amd(base: Path, n: int = 8, tools: tuple[str, ...] = ("rocm-smi",), legacy: bool = False,
             min_w: str = "0", max_w: str = "750", cur_w: str = "750", name: str = "AMD Instinct MI300X") -> FakeGPUs:
    state, bin_dir = base / "amdstate", base / "bin"
    _gpu_state(state, n, min_w, max_w, cur_w, name)
    if legacy:
        write(state / "legacy", "")
    for tool, script in (("rocm-smi", ROCM_SMI), ("amd-smi", AMD_SMI)):
        if tool in tools:
            write(bin_dir / tool, script.format(state=state)).chmod(0o755)
    return FakeGPUs(bin_dir, state)

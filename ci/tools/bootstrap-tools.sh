#!/usr/bin/env bash
# ci/tools/bootstrap-tools.sh — build the pinned external test tools from Go modules.
#
# Every version comes from versions.env at the repository root. Each tool is built once
# with the machine's Go into ${JOULIE_CACHE:-~/.cache/joulie}/bin/<tool>-<version>
# (outside the repo; binaries are never committed) and listed with its absolute path in
# bin/tools.env. A run with everything present only prints "ok <tool> <version> (cached)".
# See ci/tools/README.md for the details, timings and the flags the tools need.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: ci/tools/bootstrap-tools.sh [options] [tool ...]

Builds the pinned tools that are missing (default: all of them) and writes the manifest
$JOULIE_CACHE/bin/tools.env (JOULIE_CACHE defaults to ~/.cache/joulie).

tools:   etcd kube-apiserver kube-scheduler kube-controller-manager kwok prometheus helm otelcol
         (the default set), and kubelet kube-proxy pause: built only when named, for the simulated
         cluster's kubelet runtime (SIMCLUSTER_RUNTIME=kubelet), so the default run stays as fast.
options:
  --print-paths  build nothing; rewrite the manifest from what is in the cache and print it.
                 Exit status 3 (and the missing tools on stderr) if a requested tool is missing.
  --force        rebuild the requested tools even when they are cached.
  --sync-gomod   regenerate ci/tools/*/go.mod and go.sum from versions.env (needs the Go
                 module proxy), then exit. Run it after changing a version in versions.env.
  -h, --help     this text.
environment:
  JOULIE_CACHE          cache root (bin/, logs/); default ~/.cache/joulie
  JOULIE_VERSIONS_FILE  pinned versions; default <repo>/versions.env
  GO                    Go command; default `go` on PATH, else /usr/local/go/bin/go
Go's own caches (GOCACHE, GOMODCACHE) keep their usual defaults unless set.
EOF
}

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
VERSIONS_FILE=${JOULIE_VERSIONS_FILE:-$REPO_ROOT/versions.env}
CACHE=${JOULIE_CACHE:-${HOME:?HOME is not set}/.cache/joulie}
BIN_DIR=$CACHE/bin
LOG_DIR=$CACHE/logs
MANIFEST=$BIN_DIR/tools.env
TIMES_FILE=$LOG_DIR/build-times.tsv

ALL_TOOLS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok prometheus helm otelcol)
# Built only when named on the command line: what only the simulated cluster's kubelet runtime
# needs (kubelet ~80 MiB, a ten-minute build on two busy cores; kube-proxy; the sandbox binary of its
# pause image, ci/tools/pause: no upstream module, versioned with the Kubernetes release it goes
# with); listed in the manifest once built.
OPTIONAL_TOOLS=(kubelet kube-proxy pause)

die() {
	echo "bootstrap-tools: error: $*" >&2
	exit 1
}

# ---------------------------------------------------------------- arguments
PRINT_PATHS=0
FORCE=0
SYNC_GOMOD=0
REQUESTED=()
for arg in "$@"; do
	case $arg in
	--print-paths) PRINT_PATHS=1 ;;
	--force) FORCE=1 ;;
	--sync-gomod) SYNC_GOMOD=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	-*) die "unknown option '$arg' (see --help)" ;;
	*)
		known=0
		for t in "${ALL_TOOLS[@]}" "${OPTIONAL_TOOLS[@]}"; do [[ $t == "$arg" ]] && known=1; done
		((known)) || die "unknown tool '$arg'; known tools: ${ALL_TOOLS[*]} ${OPTIONAL_TOOLS[*]}"
		REQUESTED+=("$arg")
		;;
	esac
done
# Canonical order (it keeps the three Kubernetes builds next to each other so the second
# and third reuse the first one's compiled packages), without duplicates. No tool named:
# the default set (ALL_TOOLS), never the optional ones.
TOOLS=()
for t in "${ALL_TOOLS[@]}" "${OPTIONAL_TOOLS[@]}"; do
	if ((${#REQUESTED[@]} == 0)); then
		[[ " ${OPTIONAL_TOOLS[*]} " == *" $t "* ]] || TOOLS+=("$t")
	else
		for r in "${REQUESTED[@]}"; do
			if [[ $r == "$t" ]]; then
				TOOLS+=("$t")
				break
			fi
		done
	fi
done

# ---------------------------------------------------------------- versions
[[ -r $VERSIONS_FILE ]] || die "cannot read $VERSIONS_FILE"
# shellcheck source=../../versions.env
source "$VERSIONS_FILE"

SEMVER_RE='^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$'
for key in KUBERNETES_VERSION ETCD_VERSION KWOK_VERSION PROMETHEUS_VERSION \
	PROMETHEUS_GO_MODULE_VERSION HELM_VERSION OTELCOL_VERSION OTELCOL_CONTRIB_VERSION; do
	val=${!key-}
	[[ -n $val ]] || die "$key is not set in $VERSIONS_FILE"
	[[ $val =~ $SEMVER_RE ]] || die "$key=$val in $VERSIONS_FILE is not a version like v1.2.3"
done

semver_part() { # semver_part v1.35.4 1 -> 35
	local v=${1#v}
	v=${v%%-*}
	local IFS=.
	# shellcheck disable=SC2206
	local parts=($v)
	echo "${parts[$2]}"
}

# k8s.io/kubernetes v1.X.Y goes with the staging modules k8s.io/* v0.X.Y.
K8S_STAGING_VERSION=v0.$(semver_part "$KUBERNETES_VERSION" 1).$(semver_part "$KUBERNETES_VERSION" 2)
# Prometheus A.B.C is served as the Go module version v0.<A*100+B>.C.
expected_prom_mod=v0.$(($(semver_part "$PROMETHEUS_VERSION" 0) * 100 + 10#$(semver_part "$PROMETHEUS_VERSION" 1))).$(semver_part "$PROMETHEUS_VERSION" 2)
[[ $expected_prom_mod == "$PROMETHEUS_GO_MODULE_VERSION" ]] ||
	die "versions.env: PROMETHEUS_VERSION=$PROMETHEUS_VERSION is Go module version $expected_prom_mod, but PROMETHEUS_GO_MODULE_VERSION=$PROMETHEUS_GO_MODULE_VERSION"
HELM_MODULE=helm.sh/helm/v$(semver_part "$HELM_VERSION" 0)
# One OpenTelemetry Collector release for every collector module: core v0.M.P (its stable
# v1.x modules come with it), contrib v0.M.Q (contrib patch releases build on core v0.M.0).
[[ $(semver_part "$OTELCOL_VERSION" 0) == 0 && $(semver_part "$OTELCOL_CONTRIB_VERSION" 0) == 0 &&
	$(semver_part "$OTELCOL_VERSION" 1) == "$(semver_part "$OTELCOL_CONTRIB_VERSION" 1)" ]] ||
	die "versions.env: OTELCOL_VERSION=$OTELCOL_VERSION and OTELCOL_CONTRIB_VERSION=$OTELCOL_CONTRIB_VERSION are not the same collector release v0.MINOR"
# The collector modules ci/tools/otelcol requires directly (what its main.go imports), by
# version line: core modules versioned like otelcol (v0.x), core stable modules (v1.x, the
# version otelcol's own go.mod requires), contrib modules (OTELCOL_CONTRIB_VERSION).
OTELCOL_CORE_MODULES=(go.opentelemetry.io/collector/otelcol go.opentelemetry.io/collector/service
	go.opentelemetry.io/collector/receiver/otlpreceiver go.opentelemetry.io/collector/processor/batchprocessor
	go.opentelemetry.io/collector/exporter/otlphttpexporter go.opentelemetry.io/collector/exporter/debugexporter)
OTELCOL_STABLE_MODULES=(go.opentelemetry.io/collector/component go.opentelemetry.io/collector/confmap
	go.opentelemetry.io/collector/confmap/provider/envprovider go.opentelemetry.io/collector/confmap/provider/fileprovider
	go.opentelemetry.io/collector/confmap/provider/yamlprovider)
OTELCOL_CONTRIB_MODULES=(github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver
	github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter
	github.com/open-telemetry/opentelemetry-collector-contrib/extension/healthcheckextension)

# ---------------------------------------------------------------- tool table
tool_version() {
	case $1 in
	etcd) echo "$ETCD_VERSION" ;;
	kube-* | kubelet | pause) echo "$KUBERNETES_VERSION" ;;
	kwok) echo "$KWOK_VERSION" ;;
	prometheus) echo "$PROMETHEUS_VERSION" ;;
	helm) echo "$HELM_VERSION" ;;
	otelcol) echo "$OTELCOL_VERSION" ;;
	esac
}
tool_key() { # manifest key: kube-apiserver -> KUBE_APISERVER
	local k=${1^^}
	echo "${k//-/_}"
}
tool_group() { # the Go module directory under ci/tools/
	case $1 in
	kube-* | kubelet) echo k8s ;;
	*) echo "$1" ;;
	esac
}
tool_pkg() { # the main package to build, from inside the group's module
	case $1 in
	etcd | otelcol | pause) echo . ;;
	kube-* | kubelet) echo "./cmd/$1" ;;
	kwok) echo sigs.k8s.io/kwok/cmd/kwok ;;
	prometheus) echo github.com/prometheus/prometheus/cmd/prometheus ;;
	helm) echo "$HELM_MODULE/cmd/helm" ;;
	esac
}
group_upstream() { # the upstream module a group's go.mod pins, and its version
	case $1 in
	etcd) echo "go.etcd.io/etcd/server/v3 $ETCD_VERSION" ;;
	k8s) echo "k8s.io/kubernetes $KUBERNETES_VERSION" ;;
	kwok) echo "sigs.k8s.io/kwok $KWOK_VERSION" ;;
	prometheus) echo "github.com/prometheus/prometheus $PROMETHEUS_GO_MODULE_VERSION" ;;
	helm) echo "$HELM_MODULE $HELM_VERSION" ;;
	otelcol) echo "go.opentelemetry.io/collector/otelcol $OTELCOL_VERSION" ;;
	pause) echo "" ;; # standard library only
	esac
}
tool_tags() {
	case $1 in
	# No `builtinassets`: the module zip has no compiled web UI (web/ui/static), so that
	# tag does not build; the API, remote-write and OTLP receivers do not need the UI.
	# Service discovery trimmed to file/http/static + kubernetes (README "build tags").
	prometheus) echo netgo,remove_all_sd,enable_kubernetes_sd ;;
	# The prometheus receiver compiles in Prometheus' service discoveries too: the same
	# trimming (file/http/static + kubernetes stay) saves ~240 packages of cloud SDKs.
	otelcol) echo netgo,remove_all_sd,enable_kubernetes_sd ;;
	*) echo "" ;;
	esac
}
# tool_ldflags TOOL BUILD_TIME(RFC3339, UTC: the upstream release's commit time)
tool_ldflags() {
	local t=$1 when=$2 v
	local flags="-s -w"
	case $t in
	kube-* | kubelet)
		v=$KUBERNETES_VERSION
		local major minor
		major=$(semver_part "$v" 0)
		minor=$(semver_part "$v" 1)
		for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
			flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$when"
		done
		;;
	kwok) flags+=" -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" ;;
	prometheus)
		local pv=github.com/prometheus/common/version
		flags+=" -X $pv.Version=${PROMETHEUS_VERSION#v} -X $pv.Revision=$PROMETHEUS_GO_MODULE_VERSION"
		flags+=" -X $pv.Branch=HEAD -X $pv.BuildUser=joulie-bootstrap-tools"
		flags+=" -X $pv.BuildDate=$(date -u -d "$when" +%Y%m%d-%H:%M:%S)"
		;;
	helm) flags+=" -X $HELM_MODULE/internal/version.version=$HELM_VERSION -X $HELM_MODULE/internal/version.gitTreeState=clean" ;;
	otelcol) flags+=" -X main.version=${OTELCOL_VERSION#v}" ;;
	pause) flags+=" -X main.version=$KUBERNETES_VERSION" ;;
	esac
	echo "$flags"
}
# tool_version_cmd TOOL BIN: print the tool's own version report
tool_version_cmd() {
	case $1 in
	helm) HELM_CONFIG_HOME=$CACHE/tmp/helm HELM_CACHE_HOME=$CACHE/tmp/helm HELM_DATA_HOME=$CACHE/tmp/helm \
		timeout 60 "$2" version ;;
	*) timeout 60 "$2" --version ;;
	esac
}
tool_version_expect() { # a fixed string the version report must contain
	case $1 in
	etcd) echo "etcd Version: ${ETCD_VERSION#v}" ;;
	kube-* | kubelet) echo "Kubernetes $KUBERNETES_VERSION" ;;
	kwok) echo "${KWOK_VERSION#v}" ;;
	prometheus) echo "prometheus, version ${PROMETHEUS_VERSION#v}" ;;
	helm) echo "Version:\"$HELM_VERSION\"" ;;
	otelcol) echo "otelcol version ${OTELCOL_VERSION#v}" ;;
	pause) echo "joulie pause $KUBERNETES_VERSION" ;;
	esac
}

# ---------------------------------------------------------------- kwok stages
# The kwok controller does nothing without Stage objects ("no stages found"). kwokctl
# passes its defaults; we write the same set into one --config file next to the binary:
# node-fast (initialize the Node: conditions Ready, addresses, capacity), node heartbeat
# with lease (kwok's default --node-lease-duration-seconds=40), pod-fast (ready, complete,
# delete). Taken verbatim from the pinned module's kustomize/stage/ directory.
KWOK_STAGES_FILE=$BIN_DIR/kwok-$KWOK_VERSION-stages.yaml
KWOK_STAGE_FILES=(node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
	pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml)
write_kwok_stages() { # LOG
	local moddir f tmp=$KWOK_STAGES_FILE.tmp.$$
	moddir=$("$GO" -C "$SCRIPT_DIR/kwok" list -mod=readonly -m -f '{{.Dir}}' sigs.k8s.io/kwok 2>>"$1") || return 1
	[[ -n $moddir ]] || return 1
	{
		echo "# kwok $KWOK_VERSION default stages (node-fast, node-heartbeat-with-lease, pod-fast),"
		echo "# copied by ci/tools/bootstrap-tools.sh from sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage/."
		echo "# Use: kwok --config <this file> --kubeconfig ... --manage-all-nodes=false \\"
		echo "#        --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake"
		for f in "${KWOK_STAGE_FILES[@]}"; do
			[[ -f $moddir/kustomize/stage/$f ]] || {
				echo "missing $moddir/kustomize/stage/$f" >>"$1"
				return 1
			}
			echo "---"
			echo "# kustomize/stage/$f"
			sed '/^---[[:space:]]*$/d' "$moddir/kustomize/stage/$f"
		done
	} >"$tmp" && mv -f "$tmp" "$KWOK_STAGES_FILE"
}

# ---------------------------------------------------------------- go.mod pins
gomod_pin_problem() { # prints what is wrong with the group's go.mod, nothing if all is well
	local g=$1 gomod=$SCRIPT_DIR/$1/go.mod mod ver
	read -r mod ver <<<"$(group_upstream "$g")"
	if [[ ! -f $gomod ]]; then
		echo "$gomod is missing"
		return
	fi
	[[ -n $mod ]] || return 0 # no upstream module to pin (pause)
	if ! grep -Eq "^[[:space:]]*(require[[:space:]]+)?${mod//./\\.}[[:space:]]+${ver//./\\.}([[:space:]]|$)" "$gomod"; then
		echo "$gomod does not require $mod $ver"
		return
	fi
	if [[ $g == k8s ]]; then
		local bad
		bad=$(grep -E '^[[:space:]]*(replace[[:space:]]+)?k8s\.io/[^ ]+ => ' "$gomod" |
			grep -Ev "=> k8s\.io/[^ ]+ ${K8S_STAGING_VERSION//./\\.}[[:space:]]*$" || true)
		if [[ -n $bad ]]; then
			echo "$gomod replaces k8s.io staging modules with something other than $K8S_STAGING_VERSION: ${bad//$'\n'/; }"
		elif ! grep -Eq "k8s\.io/apimachinery => k8s\.io/apimachinery ${K8S_STAGING_VERSION//./\\.}" "$gomod"; then
			echo "$gomod does not replace the k8s.io staging modules with $K8S_STAGING_VERSION"
		fi
	fi
	if [[ $g == otelcol ]]; then
		local m bad
		for m in "${OTELCOL_CONTRIB_MODULES[@]}" "${OTELCOL_CORE_MODULES[@]}"; do
			ver=$OTELCOL_VERSION
			[[ $m == github.com/* ]] && ver=$OTELCOL_CONTRIB_VERSION
			if ! grep -Eq "^[[:space:]]*(require[[:space:]]+)?${m//./\\.}[[:space:]]+${ver//./\\.}([[:space:]]|$)" "$gomod"; then
				echo "$gomod does not require $m $ver"
				return
			fi
		done
		# No other collector release may slip in (direct or indirect requirement).
		bad=$({
			grep -E '^[[:space:]]*(require[[:space:]]+)?go\.opentelemetry\.io/collector/[^ ]+ v0\.' "$gomod" |
				grep -Ev "[[:space:]]${OTELCOL_VERSION//./\\.}([[:space:]]|$)"
			grep -E '^[[:space:]]*(require[[:space:]]+)?github\.com/open-telemetry/opentelemetry-collector-contrib/' "$gomod" |
				grep -Ev "[[:space:]]${OTELCOL_CONTRIB_VERSION//./\\.}([[:space:]]|$)"
		} || true)
		[[ -z $bad ]] || echo "$gomod requires collector modules of another release: ${bad//$'\n'/; }"
	fi
}

# ---------------------------------------------------------------- environment
setup_go() {
	GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
	[[ -x $GO ]] || command -v "$GO" >/dev/null || die "Go not found (set GO=/path/to/go)"
	export GOWORK=off        # never pick up a go.work from above
	export GOTOOLCHAIN=local # build with this machine's Go, never download another
	export CGO_ENABLED=0     # static binaries, no C toolchain needed
	export GOFLAGS=-buildvcs=false
}

# ---------------------------------------------------------------- manifest
manifest_value() { # value as written in tools.env: plain when safe, else shell-quoted
	if [[ $1 =~ ^[A-Za-z0-9_./+:@-]+$ ]]; then echo "$1"; else printf '%q\n' "$1"; fi
}
write_manifest() {
	mkdir -p "$BIN_DIR"
	local tmp=$MANIFEST.tmp.$$ t key path
	{
		echo "# Generated by ci/tools/bootstrap-tools.sh from versions.env; do not edit."
		echo "# Absolute paths of the pinned tools. Read it with \`source\` or as KEY=value lines."
		echo "JOULIE_TOOLS_BIN=$(manifest_value "$BIN_DIR")"
		for t in "${ALL_TOOLS[@]}" "${OPTIONAL_TOOLS[@]}"; do
			key=$(tool_key "$t")
			path=$BIN_DIR/$t-$(tool_version "$t")
			if [[ -x $path ]]; then
				echo "$key=$(manifest_value "$path")"
				if [[ $t == kwok && -f $KWOK_STAGES_FILE ]]; then
					echo "KWOK_STAGES=$(manifest_value "$KWOK_STAGES_FILE")"
				fi
			else
				echo "# $key: $t $(tool_version "$t") is not built (ci/tools/bootstrap-tools.sh $t)"
			fi
		done
	} >"$tmp"
	if cmp -s "$tmp" "$MANIFEST"; then rm -f "$tmp"; else mv -f "$tmp" "$MANIFEST"; fi
}

# ---------------------------------------------------------------- --print-paths
if ((PRINT_PATHS)); then
	write_manifest
	cat "$MANIFEST"
	missing=()
	for t in "${TOOLS[@]}"; do
		[[ -x $BIN_DIR/$t-$(tool_version "$t") ]] || missing+=("$t")
	done
	if ((${#missing[@]})); then
		echo "bootstrap-tools: not built: ${missing[*]} (run ci/tools/bootstrap-tools.sh ${missing[*]})" >&2
		exit 3
	fi
	exit 0
fi

# ---------------------------------------------------------------- --sync-gomod
upstream_gomod() { # path of the upstream go.mod file in the module cache (downloads it)
	"$GO" mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p'
}
sync_group() {
	local g=$1 dir=$SCRIPT_DIR/$1 mod ver up gover
	read -r mod ver <<<"$(group_upstream "$g")"
	echo "==> sync ci/tools/$g/go.mod: $mod $ver"
	up=$(upstream_gomod "$mod" "$ver")
	[[ -n $up && -f $up ]] || die "sync $g: could not download $mod@$ver from the Go module proxy"
	gover=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$up")
	mkdir -p "$dir"
	rm -f "$dir/go.sum"
	{
		echo "// Generated by ci/tools/bootstrap-tools.sh --sync-gomod from versions.env; do not edit."
		echo "module joulie.local/ci/tools/$g"
		echo
		echo "go ${gover:-1.25.0}"
		# Keep upstream's GODEBUG defaults (they follow the main module).
		grep -E '^godebug [^(]' "$up" || true
	} >"$dir/go.mod"
	(
		cd "$dir"
		case $g in
		k8s)
			local args=(-require="$mod@$ver") staging
			for staging in $(sed -n 's|^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*|\1|p' "$up"); do
				args+=(-replace="$staging=$staging@$K8S_STAGING_VERSION")
			done
			((${#args[@]} > 1)) || die "sync k8s: no staging replace block found in $up"
			"$GO" mod edit "${args[@]}"
			;;
		etcd) "$GO" mod edit -require="$mod@$ver" ;;
		otelcol)
			# The stable v1.x core modules of this release: the version otelcol requires.
			local stable m args=()
			stable=$(sed -n 's|^[[:space:]]*go\.opentelemetry\.io/collector/component \(v1\.[0-9.]*\)$|\1|p' "$up")
			[[ -n $stable ]] || die "sync otelcol: $up does not require go.opentelemetry.io/collector/component v1.x"
			for m in "${OTELCOL_CORE_MODULES[@]}"; do args+=(-require="$m@$OTELCOL_VERSION"); done
			for m in "${OTELCOL_STABLE_MODULES[@]}"; do args+=(-require="$m@$stable"); done
			for m in "${OTELCOL_CONTRIB_MODULES[@]}"; do args+=(-require="$m@$OTELCOL_CONTRIB_VERSION"); done
			"$GO" mod edit "${args[@]}"
			;;
		*) "$GO" get -tool "$(tool_pkg "$g")@$ver" ;;
		esac
		"$GO" mod tidy
	)
	local problem
	problem=$(gomod_pin_problem "$g")
	[[ -z $problem ]] || die "sync $g: after tidy, $problem"
}
if ((SYNC_GOMOD)); then
	setup_go
	groups=()
	for t in "${TOOLS[@]}"; do
		g=$(tool_group "$t")
		[[ " ${groups[*]-} " == *" $g "* ]] || groups+=("$g")
	done
	for g in "${groups[@]}"; do
		[[ -n $(group_upstream "$g") ]] || continue # nothing upstream to sync (pause)
		sync_group "$g"
	done
	echo "go.mod files are in sync with $VERSIONS_FILE; review and commit ci/tools/*/go.{mod,sum}"
	exit 0
fi

# ---------------------------------------------------------------- build
mkdir -p "$BIN_DIR" "$LOG_DIR" "$CACHE/tmp"
exec 9>"$CACHE/.bootstrap.lock"
if command -v flock >/dev/null; then
	if ! flock -n 9; then
		echo "bootstrap-tools: waiting for another bootstrap-tools.sh run (lock $CACHE/.bootstrap.lock)" >&2
		flock 9
	fi
fi

CHILD=""
TMP_OUT=""
cleanup() {
	if [[ -n $CHILD ]]; then kill -- "$CHILD" 2>/dev/null || true; fi
	if [[ -n $TMP_OUT ]]; then rm -f "$TMP_OUT"; fi
	rm -f "$MANIFEST.tmp.$$" "$KWOK_STAGES_FILE.tmp.$$"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run_step LABEL LOG CMD... : runs CMD with output appended to LOG, printing a heartbeat
# with the elapsed seconds every 30 s. Returns CMD's exit status.
run_step() {
	local label=$1 log=$2
	shift 2
	local start=$SECONDS next=30 rc=0
	echo "--- step $label: $*" >>"$log"
	"$@" >>"$log" 2>&1 &
	CHILD=$!
	while kill -0 "$CHILD" 2>/dev/null; do
		sleep 0.2
		if ((SECONDS - start >= next)); then
			echo "    ... $label still running ($((SECONDS - start))s)"
			next=$((next + 30))
		fi
	done
	wait "$CHILD" || rc=$?
	CHILD=""
	return "$rc"
}

FAILED=()
BUILT=()
# fail TOOL VERSION STEP LOG MESSAGE
fail() {
	echo "bootstrap-tools: FAILED $1 $2: step '$3' failed: $5" >&2
	echo "bootstrap-tools: log: $4 (last lines below)" >&2
	tail -n 15 "$4" | sed 's/^/    | /' >&2
	FAILED+=("$1 ($3, log $4)")
}

build_tool() {
	local t=$1 ver out log g dir pkg t0 s1 s2 s3 d_dl d_build d_verify problem when report expect
	ver=$(tool_version "$t")
	out=$BIN_DIR/$t-$ver
	if [[ -x $out ]] && ((!FORCE)); then
		if [[ $t == kwok && ! -f $KWOK_STAGES_FILE ]]; then
			setup_go
			log=$LOG_DIR/$t-$ver.log
			if ! write_kwok_stages "$log"; then
				fail "$t" "$ver" download "$log" "could not copy the stage files from sigs.k8s.io/kwok@$ver"
				return 0
			fi
		fi
		echo "ok $t $ver (cached)"
		return 0
	fi
	g=$(tool_group "$t")
	dir=$SCRIPT_DIR/$g
	pkg=$(tool_pkg "$t")
	log=$LOG_DIR/$t-$ver.log
	: >"$log"
	t0=$SECONDS
	echo "==> $t $ver: build from ci/tools/$g ($pkg); log $log"

	problem=$(gomod_pin_problem "$g")
	if [[ -n $problem ]]; then
		echo "$problem" >>"$log"
		fail "$t" "$ver" download "$log" "$problem; run ci/tools/bootstrap-tools.sh --sync-gomod"
		return 0
	fi

	# download: fetch exactly the modules the package needs (checked against go.sum).
	s1=$SECONDS
	if ! run_step "$t download" "$log" "$GO" -C "$dir" list -mod=readonly -deps -f '{{.ImportPath}}' "$pkg"; then
		fail "$t" "$ver" download "$log" "go list -deps $pkg in ci/tools/$g failed (network, or go.sum out of date: try --sync-gomod)"
		return 0
	fi
	d_dl=$((SECONDS - s1))
	echo "    download ok (${d_dl}s)"

	# build
	# Version stamps use the upstream release's time (from the module proxy), not "now",
	# so rebuilding the same pins gives the same version report.
	when=""
	if [[ -n $(group_upstream "$g") ]]; then
		when=$("$GO" -C "$dir" list -mod=readonly -m -f '{{with .Time}}{{.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' \
			"$(group_upstream "$g" | cut -d' ' -f1)" 2>>"$log" || true)
	fi
	[[ -n $when ]] || when=1970-01-01T00:00:00Z
	TMP_OUT=$BIN_DIR/.$t-$ver.tmp.$$
	s2=$SECONDS
	if ! run_step "$t build" "$log" "$GO" -C "$dir" build -mod=readonly -trimpath -v \
		-tags "$(tool_tags "$t")" -ldflags "$(tool_ldflags "$t" "$when")" -o "$TMP_OUT" "$pkg"; then
		rm -f "$TMP_OUT"
		TMP_OUT=""
		fail "$t" "$ver" build "$log" "go build $pkg failed"
		return 0
	fi
	d_build=$((SECONDS - s2))
	echo "    build ok (${d_build}s, $(($(stat -c %s "$TMP_OUT") / 1048576)) MiB)"

	# verify: the binary runs and reports the pinned version.
	s3=$SECONDS
	expect=$(tool_version_expect "$t")
	echo "--- step $t verify" >>"$log"
	if ! report=$(tool_version_cmd "$t" "$TMP_OUT" 2>&1); then
		echo "$report" >>"$log"
		rm -f "$TMP_OUT"
		TMP_OUT=""
		fail "$t" "$ver" verify "$log" "the built binary did not run its version command"
		return 0
	fi
	echo "$report" >>"$log"
	if [[ $report != *"$expect"* ]]; then
		rm -f "$TMP_OUT"
		TMP_OUT=""
		fail "$t" "$ver" verify "$log" "version report does not contain '$expect'"
		return 0
	fi
	d_verify=$((SECONDS - s3))
	if [[ $t == kwok ]] && ! write_kwok_stages "$log"; then
		rm -f "$TMP_OUT"
		TMP_OUT=""
		fail "$t" "$ver" verify "$log" "could not copy the stage files from sigs.k8s.io/kwok@$ver"
		return 0
	fi
	mv -f "$TMP_OUT" "$out"
	TMP_OUT=""
	echo "    verify ok (${d_verify}s): $(head -n 1 <<<"$report")"
	echo "built $t $ver in $((SECONDS - t0))s -> $out"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$t" "$ver" \
		"$d_dl" "$d_build" "$d_verify" "$((SECONDS - t0))" >>"$TIMES_FILE"
	BUILT+=("$t")
}

need_build=0
for t in "${TOOLS[@]}"; do
	if ((FORCE)) || [[ ! -x $BIN_DIR/$t-$(tool_version "$t") ]]; then need_build=1; fi
done
if ((need_build)); then
	setup_go
	echo "bootstrap-tools: $("$GO" version), cache $CACHE"
	[[ -f $TIMES_FILE ]] || printf 'date\ttool\tversion\tdownload_s\tbuild_s\tverify_s\ttotal_s\n' >"$TIMES_FILE"
fi
START=$SECONDS
for t in "${TOOLS[@]}"; do build_tool "$t"; done
write_manifest

if ((${#BUILT[@]} || ${#FAILED[@]})); then
	echo "bootstrap-tools: built ${#BUILT[@]} tool(s) in $((SECONDS - START))s; manifest $MANIFEST"
fi
if ((${#FAILED[@]})); then
	echo "bootstrap-tools: FAILED: ${FAILED[*]}" >&2
	exit 1
fi

// Command kubelet is the upstream kubelet from k8s.io/kubernetes, built from the pinned module
// version (see versions.env and ../../go.mod). Same body as k8s.io/kubernetes/cmd/kubelet, so it
// behaves exactly like the release binary. Only the simulated cluster's kubelet runtime needs it,
// so ci/tools/bootstrap-tools.sh builds it only when asked by name (`bootstrap-tools.sh kubelet`);
// never committed as a binary.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}

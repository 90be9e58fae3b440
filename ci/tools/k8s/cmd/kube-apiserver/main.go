// Command kube-apiserver is the upstream kube-apiserver from k8s.io/kubernetes, built from the
// pinned module version (see versions.env and ../../go.mod). Same body as
// k8s.io/kubernetes/cmd/kube-apiserver, so it behaves exactly like the release binary.
// Built by ci/tools/bootstrap-tools.sh; never committed as a binary.
package main

import (
	"os"
	_ "time/tzdata" // time zone data for CronJob time zones

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}

// Command etcd is the upstream etcd server (go.etcd.io/etcd/server/v3/etcdmain),
// built from the pinned module version (see versions.env and go.mod). Same body as
// the upstream go.etcd.io/etcd/v3 main package, whose go.mod cannot be installed
// with `go install` because it uses local replace directives.
// Built by ci/tools/bootstrap-tools.sh; never committed as a binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

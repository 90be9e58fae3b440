// Command pause is the sandbox process of the simulated cluster's kubelet runtime: the one process
// of every Pod's sandbox container, which holds the Pod's namespaces while its containers come and
// go. Nothing can be pulled on the machines this project runs on, so the sandbox image is built
// here (this static binary alone in one layer, simulated-cluster/joulie_simcluster/runtimes/
// kubelet/images.py) and imported into containerd. It waits for SIGINT or SIGTERM and exits 0, and
// reaps the children it inherits when it is the PID namespace's init (shareProcessNamespace).
// Built by ci/tools/bootstrap-tools.sh only when asked (`bootstrap-tools.sh pause`).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is set by the bootstrap's -ldflags to the Kubernetes version it goes with.
var version = "dev"

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "--version" || os.Args[1] == "-v") {
		fmt.Printf("joulie pause %s\n", version)
		return
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reapChildren()
			continue
		}
		os.Exit(0)
	}
}

// reapChildren waits for every exited child without blocking, so none stays a zombie.
func reapChildren() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

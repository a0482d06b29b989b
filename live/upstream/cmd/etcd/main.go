// Command etcd is the etcd server of the local upstream control plane (ci/upstream-up.sh):
// etcd's own entry point, built from go.etcd.io/etcd/server/v3 at the version go.mod pins.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

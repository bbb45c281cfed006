//go:build tools

// This file keeps the Kubernetes control-plane commands in the module graph
// so `go build k8s.io/kubernetes/cmd/<name>` works from this directory.
package build

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)

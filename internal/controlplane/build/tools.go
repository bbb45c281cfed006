//go:build tools

// This file keeps k8s.io/kubernetes/cmd/kube-apiserver in the module graph so
// `go build k8s.io/kubernetes/cmd/kube-apiserver` works from this directory.
package build

import _ "k8s.io/kubernetes/cmd/kube-apiserver"

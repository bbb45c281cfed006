// Command ensure-binaries builds the control-plane binaries (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok) that
// internal/controlplane runs, unless they are already cached, and prints
// their paths. scripts/test runs it before `go test` so the first run builds
// outside any test timeout.
//
//	go run ./internal/controlplane/cmd/ensure-binaries
//
// KUBECODE_BIN_DIR overrides the cache directory.
package main

//go:build tools

// This file keeps metrics-server in the module graph so `go build
// sigs.k8s.io/metrics-server/cmd/metrics-server` works from this directory.
package build

import (
	_ "sigs.k8s.io/metrics-server/cmd/metrics-server"
)

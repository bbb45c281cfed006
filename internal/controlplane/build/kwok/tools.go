//go:build tools

// This file keeps sigs.k8s.io/kwok/cmd/kwok in the module graph so
// `go build sigs.k8s.io/kwok/cmd/kwok` works from this directory.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"

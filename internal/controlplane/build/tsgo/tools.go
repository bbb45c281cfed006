//go:build tools

// This file keeps the tsgo command in the module graph so `go build
// github.com/microsoft/typescript-go/cmd/tsgo` works from this directory.
package tsgo

import _ "github.com/microsoft/typescript-go/cmd/tsgo"

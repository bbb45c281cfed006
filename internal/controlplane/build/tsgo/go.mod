// Module tsgo pins the native TypeScript compiler (typescript-go) that
// kubecode runs to type-check scripts before they run. Its packages are
// internal to its module, so it is built as a side binary, as the
// control-plane binaries are. See ../../binaries.go.
module github.com/kubecode/kubecode/internal/controlplane/build/tsgo

go 1.26.0

require github.com/microsoft/typescript-go v0.0.0-20260708042240-2bd066d87f5b

require (
	github.com/Microsoft/go-winio v0.6.2 // indirect
	github.com/go-json-experiment/json v0.0.0-20260623181947-01eb4420fa68 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/mackerelio/go-osstat v0.2.7 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	golang.org/x/sync v0.21.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
	golang.org/x/term v0.44.0 // indirect
	golang.org/x/text v0.38.0 // indirect
)

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/kubecode/kubecode/internal/controlplane"
)

// Scripts run in worker processes (--isolation process). The worker is
// kubecode-worker (./cmd/kubecode-worker): the sandbox alone, which
// starts in ~30 ms in ~11 MB. Without it the server re-executes its own
// binary as the worker, which works the same but starts in ~110 ms of CPU
// in ~107 MB (every Kubernetes and Helm package initialised for nothing):
// a burst of scripts on a cold pool waits for those starts.

// workerBinaryEnv names the worker binary when --worker-binary is not set.
const workerBinaryEnv = "KUBECODE_WORKER_BINARY"

// workerBinaryName is the worker binary's name beside kubecode.
const workerBinaryName = "kubecode-worker"

// workerBinary returns the worker binary to run scripts in: flag, else
// $KUBECODE_WORKER_BINARY, else kubecode-worker beside this binary; ""
// means this binary itself. A path that was named but is not an
// executable file is an error.
func workerBinary(flag string) (string, error) {
	for _, named := range []struct{ path, by string }{{flag, "--worker-binary"}, {os.Getenv(workerBinaryEnv), "$" + workerBinaryEnv}} {
		if named.path == "" {
			continue
		}
		if !isExecutable(named.path) {
			return "", fmt.Errorf("%s %s: not an executable file; build it with go build -o %s ./cmd/kubecode-worker", named.by, named.path, named.path)
		}
		return named.path, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", nil
	}
	if p := filepath.Join(filepath.Dir(exe), workerBinaryName); isExecutable(p) {
		return p, nil
	}
	return "", nil
}

// buildWorker builds ./cmd/kubecode-worker of the source tree in the
// working directory into the binaries' cache and returns its path: for
// `go run ./cmd/kubecode demo`, whose binary has no worker beside it. Go
// rebuilds only what changed. It fails when there is no such source tree
// or no go command.
func buildWorker(ctx context.Context) (string, error) {
	if fi, err := os.Stat(filepath.Join("cmd", workerBinaryName, "main.go")); err != nil || fi.IsDir() {
		return "", errors.New("no ./cmd/kubecode-worker here (run the demo from the repository)")
	}
	dir, err := controlplane.BinDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, workerBinaryName)
	// Built aside and renamed: a demo starting meanwhile never runs half a
	// binary.
	tmp := out + fmt.Sprintf(".%d", os.Getpid())
	if b, err := exec.CommandContext(ctx, "go", "build", "-o", tmp, "./cmd/"+workerBinaryName).CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("go build ./cmd/%s: %v: %s", workerBinaryName, err, b)
	}
	return out, os.Rename(tmp, out)
}

// workerCommand makes the pool's worker command for binary ("" means this
// binary) and says which it is.
func workerCommand(binary string, log *slog.Logger) func() *exec.Cmd {
	if binary == "" {
		log.Info("script workers re-execute kubecode: build ./cmd/kubecode-worker beside it (or set --worker-binary) for workers that start 3x faster in a tenth of the memory")
		return nil
	}
	log.Debug("script workers", "binary", binary)
	return func() *exec.Cmd { return exec.Command(binary) }
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

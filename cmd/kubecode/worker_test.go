package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWorkerBinary: scripts run in kubecode-worker beside the server (as
// the tests and the image install it), not in re-executed kubecode
// processes; a worker binary named but missing stops the server at start
// with what to build.
func TestWorkerBinary(t *testing.T) {
	ctx := context.Background()
	u, proc := startHTTPOn(t, cp.AdminKubeconfig, nil)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "return 1 + 1"}})
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	var workers []string
	dir := filepath.Join("/proc", strconv.Itoa(proc.Pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, task := range tasks {
		b, _ := os.ReadFile(filepath.Join(dir, task.Name(), "children"))
		for _, child := range strings.Fields(string(b)) {
			if exe, err := os.Readlink(filepath.Join("/proc", child, "exe")); err == nil {
				workers = append(workers, filepath.Base(exe))
			}
		}
	}
	if len(workers) == 0 || workers[0] != workerBinaryName {
		t.Errorf("the server's worker processes run %q; want %s", workers, workerBinaryName)
	}

	missing := filepath.Join(t.TempDir(), "nothing")
	cmd := exec.Command(bin, "--kubeconfig", cp.AdminKubeconfig, "--worker-binary", missing, "exec", "-")
	cmd.Stdin = strings.NewReader("return 1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--worker-binary "+missing+": not an executable file; build it with go build") {
		t.Errorf("a missing worker binary: %v: %s", err, out)
	}
}

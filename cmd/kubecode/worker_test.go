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

// TestBuildWorker: `kubecode demo` run from the repository builds the
// worker into the binaries' cache, and the binary it builds is a worker
// (it says it is ready); run from elsewhere, it says where to run it.
func TestBuildWorker(t *testing.T) {
	t.Setenv("KUBECODE_BIN_DIR", t.TempDir())
	t.Chdir(filepath.Join("..", ".."))
	path, err := buildWorker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !isExecutable(path) {
		t.Fatalf("%s is not an executable file", path)
	}
	cmd := exec.Command(path)
	cmd.Stdin = strings.NewReader("") // ends at once, after saying it is ready
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), `"method":"runtime/ready"`) {
		t.Errorf("the built worker said %q, %v; want runtime/ready", out, err)
	}

	t.Chdir(t.TempDir())
	if _, err := buildWorker(context.Background()); err == nil || !strings.Contains(err.Error(), "run the demo from the repository") {
		t.Errorf("outside the repository: %v", err)
	}
}

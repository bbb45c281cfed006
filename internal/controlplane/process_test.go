package controlplane

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a parent that starts a control
// plane and dies without stopping it.
const helperEnv = "KUBECODE_CONTROLPLANE_ORPHAN_HELPER"

// runOrphanHelper starts a control plane, prints "pids: ETCD APISERVER" and
// "dir: DIR", then exits without Stop.
func runOrphanHelper() {
	c, err := Start(context.Background(), &Options{TempDir: os.Getenv(helperEnv)})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	pids := c.PIDs()
	fmt.Printf("pids: %d %d\ndir: %s\n", pids[0], pids[1], c.Dir)
	os.Exit(1)
}

// TestChildrenDieWithParent checks the parent-death signal: when the process
// that started the control plane exits without Stop, etcd and kube-apiserver
// go too.
func TestChildrenDieWithParent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second control plane")
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+tmp)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var pids []int
	s := bufio.NewScanner(strings.NewReader(string(out)))
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "pids: "); ok {
			for _, f := range strings.Fields(rest) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, pid)
			}
		}
	}
	if len(pids) != 2 {
		t.Fatalf("helper printed no pids:\n%s", out)
	}
	if left := waitGone(pids, 10*time.Second); len(left) > 0 {
		t.Errorf("processes %v still running after their parent exited", left)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/internal/refservers"
)

// An operator's path: declare an upstream, look at its tools, pin them,
// and scripts call them (a read the trusted server says is one).
func TestUpstreamsCommand(t *testing.T) {
	command, err := refservers.Command(refservers.Everything)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "upstreams.yaml")
	yaml := "upstreams:\n- name: everything\n  command: [" + strings.Join(command, ", ") + "]\n  trustAnnotations: true\n  tools: {get-env: {hidden: true}}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "upstreams", "--upstreams", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"everything (stdio: node ", "new: not pinned yet: an operator reviews it and runs kubecode upstreams pin; once pinned, a read: its readOnlyHint, from a server the operator trusts", "get-env                            hidden:", "tools wait to be pinned"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubecode upstreams does not say %q:\n%s", want, out)
		}
	}
	// Before any pin the tool is not there, and the type check says why.
	script := "return await tools.everything.get_sum({ a: 2, b: 3 })"
	if out, err := runCmd([]string{"--kubeconfig", cp.AdminKubeconfig, "exec", "--upstreams", file, "-"}, script); err == nil || !strings.Contains(out, "quarantined (not pinned yet") {
		t.Errorf("a call of an unpinned tool: %v\n%s", err, out)
	}
	out, err = run(t, "", "upstreams", "pin", "everything", "--upstreams", file)
	if err != nil || !strings.Contains(out, "pinned everything.get-sum") || strings.Contains(out, "get-env") {
		t.Fatalf("pin: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "upstreams.pins.json")); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "", "upstreams", "--upstreams", file)
	if err != nil || !strings.Contains(out, "read   tools.everything.get_sum") {
		t.Errorf("after the pin: %v\n%s", err, out)
	}
	out, err = run(t, script, "exec", "--upstreams", file, "-")
	if err != nil || !strings.Contains(out, "5") {
		t.Errorf("a pinned read: %v\n%s", err, out)
	}
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/internal/refservers"
)

// An operator's path: declare an upstream, look at its tools, pin them,
// and scripts call them (a read the trusted server says is one).
func TestUpstreamsCommand(t *testing.T) {
	command := everythingServer(t)
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
	listing := out
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
	// The operator pins what they reviewed, by its fingerprint.
	m := regexp.MustCompile(`pin as reviewed: kubecode upstreams pin (everything\.get-sum@[0-9a-f]{12}) `).FindStringSubmatch(listing)
	if m == nil {
		t.Fatalf("kubecode upstreams does not say how to pin get-sum as reviewed:\n%s", listing)
	}
	if out, err := runCmd([]string{"upstreams", "pin", "everything.get-sum@000000000000", "--upstreams", file}, ""); err == nil || !strings.Contains(out, "not the 000000000000 you reviewed") {
		t.Errorf("a pin of another declaration than the reviewed: %v\n%s", err, out)
	}
	out, err = run(t, "", "upstreams", "pin", m[1], "--upstreams", file)
	if err != nil || !strings.Contains(out, "pinned everything.get-sum\n") || strings.Contains(out, "get-env") || strings.Contains(out, "echo") {
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
	// Its answer taught a result type (the tool declares none): kept
	// beside the pins, shown, and served to no session until pinned (U2).
	if _, err := os.Stat(filepath.Join(dir, "upstreams.pins.learnt.json")); err != nil {
		t.Fatalf("nothing learnt is kept: %v", err)
	}
	out, err = run(t, "", "upstreams", "--upstreams", file)
	m = regexp.MustCompile(`learnt result type, served to no session until pinned:[\s\S]*pin it as reviewed: kubecode upstreams pin (everything\.get-sum@[0-9a-f]{12}) `).FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("the learnt type is not shown: %v\n%s", err, out)
	}
	if out, err := runCmd([]string{"upstreams", "pin", "everything.get-sum@000000000000", "--upstreams", file}, ""); err == nil || !strings.Contains(out, "learnt result type is now") {
		t.Errorf("a pin of another learnt type than the reviewed: %v\n%s", err, out)
	}
	out, err = run(t, "", "upstreams", "pin", m[1], "--upstreams", file)
	if err != nil || !strings.Contains(out, "pinned the learnt result type of everything.get-sum") {
		t.Fatalf("pin of the learnt type: %v\n%s", err, out)
	}
	pins, err := os.ReadFile(filepath.Join(dir, "upstreams.pins.json"))
	if err != nil || !strings.Contains(string(pins), `"learnt"`) {
		t.Errorf("the pins hold no learnt type: %v\n%s", err, pins)
	}
	out, err = run(t, "", "upstreams", "--upstreams", file)
	if err != nil || strings.Contains(out, "learnt result type, served") {
		t.Errorf("pinned, the learnt type still waits: %v\n%s", err, out)
	}
}

// TestPinIsAllOrNothing (the red-team's L1): with one upstream
// unreachable, pin says nothing was pinned, prints no "pinned" line and
// writes no pins file.
func TestPinIsAllOrNothing(t *testing.T) {
	command := everythingServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "upstreams.yaml")
	yaml := "upstreams:\n- name: everything\n  command: [" + strings.Join(command, ", ") + "]\n  trustAnnotations: true\n" +
		"- name: gone\n  command: [" + filepath.Join(dir, "no-such-server") + "]\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd([]string{"upstreams", "pin", "--upstreams", file}, "")
	if err == nil || !strings.Contains(out, "nothing pinned: upstream gone is unreachable") || strings.Contains(out, "pinned everything") {
		t.Errorf("pin with an upstream unreachable: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "upstreams.pins.json")); !os.IsNotExist(err) {
		t.Errorf("a pins file was written: %v", err)
	}
}

// everythingServer is the command of the reference "everything" MCP
// server (scripts/test installs it): the test skips without it, and fails
// under CI.
func everythingServer(t *testing.T) []string {
	t.Helper()
	command, err := refservers.Command(refservers.Everything)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return command
}

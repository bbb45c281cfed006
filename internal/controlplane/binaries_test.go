package controlplane

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBinDir(t *testing.T) {
	tests := []struct {
		name, binDir, xdg, want string
	}{
		{"KUBECODE_BIN_DIR wins", "/opt/kc", "/xdg", "/opt/kc"},
		{"XDG cache", "", "/xdg", "/xdg/kubecode/bin/v1.37.1-etcd3.7.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECODE_BIN_DIR", tt.binDir)
			t.Setenv("XDG_CACHE_HOME", tt.xdg)
			got, err := BinDir()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("BinDir() = %q, want %q", got, tt.want)
			}
		})
	}
}

// fakeBinaries writes two executable files into dir.
func fakeBinaries(t *testing.T, dir string) Binaries {
	t.Helper()
	b := Binaries{Etcd: filepath.Join(dir, "etcd"), KubeAPIServer: filepath.Join(dir, "kube-apiserver"),
		KubeControllerManager: filepath.Join(dir, "kube-controller-manager"), KubeScheduler: filepath.Join(dir, "kube-scheduler"),
		Kwok: filepath.Join(dir, kwokBinary), MetricsServer: filepath.Join(dir, metricsServerBinary), Tsgo: filepath.Join(dir, tsgoBinary)}
	for _, p := range b.paths() {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func TestEnsureBinariesReusesCache(t *testing.T) {
	dir := t.TempDir()
	want := fakeBinaries(t, dir)
	var progress bytes.Buffer
	got, err := EnsureBinaries(context.Background(), &BinariesOptions{
		Dir: dir, Progress: &progress, BuildModule: "/nonexistent", // a build would fail
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("binaries (-want +got):\n%s", diff)
	}
	if progress.Len() > 0 {
		t.Errorf("progress output for cached binaries: %q", progress.String())
	}
}

// TestEnsureBinariesWaitsForBuilder holds the lock as another builder
// would, finishes "building" while EnsureBinaries waits, and checks it then
// reuses the result instead of building again.
func TestEnsureBinariesWaitsForBuilder(t *testing.T) {
	dir := t.TempDir()
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(300 * time.Millisecond)
		fakeBinaries(t, dir)
		syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	}()
	var progress bytes.Buffer
	_, err = EnsureBinaries(context.Background(), &BinariesOptions{Dir: dir, Progress: &progress, BuildModule: "/nonexistent"})
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "waiting") {
		t.Errorf("progress = %q, want a line saying it waits", progress.String())
	}
}

func TestFindBuildModule(t *testing.T) {
	dir, err := findBuildModule()
	if err != nil {
		t.Fatal(err)
	}
	if !isFile(filepath.Join(dir, "go.mod")) || filepath.Base(dir) != "build" {
		t.Errorf("findBuildModule() = %q", dir)
	}
	root, ok := findModuleRoot(".")
	if !ok {
		t.Fatal("findModuleRoot: kubecode module not found from the package directory")
	}
	if want := filepath.Join(root, "internal", "controlplane", "build"); dir != want {
		t.Errorf("findBuildModule() = %q, want %q", dir, want)
	}
}

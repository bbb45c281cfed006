package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Versions of the binaries built from the modules in ./build and
// ./build/kwok. Changing one needs a matching change to its go.mod, and
// changes the cache directory (Kubernetes, etcd) or KWOK's file name.
const (
	KubernetesVersion = "v1.37.1"
	EtcdVersion       = "3.7.0"
	KwokVersion       = "v0.8.0"
	// MetricsServerVersion is the metrics-server of ./build/metrics-server.
	MetricsServerVersion = "v0.8.0"
	// TsgoVersion is the typescript-go pseudo-version of ./build/tsgo.
	TsgoVersion = "v0.0.0-20260708042240-2bd066d87f5b"

	modulePath = "github.com/kubecode/kubecode"
)

// kwokBinary names KWOK's binary by its version: the cache directory is
// named for the Kubernetes and etcd versions only.
const kwokBinary = "kwok-" + KwokVersion

// metricsServerBinary names metrics-server by its version.
const metricsServerBinary = "metrics-server-" + MetricsServerVersion

// tsgoBinary names the native TypeScript compiler by its version.
const tsgoBinary = "tsgo-" + TsgoVersion

// binDirName names the cache directory for one pair of versions.
var binDirName = KubernetesVersion + "-etcd" + EtcdVersion

// Binaries are the paths of the programs a control plane runs.
type Binaries struct {
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
	KubeScheduler         string
	Kwok                  string
	// MetricsServer serves metrics.k8s.io (kubectl top) on a living
	// control plane.
	MetricsServer string
	// Tsgo is the native TypeScript compiler, which kubecode runs to
	// type-check scripts; it is built with the control plane's binaries.
	Tsgo string
}

// paths lists every binary's path.
func (b Binaries) paths() []string {
	return []string{b.Etcd, b.KubeAPIServer, b.KubeControllerManager, b.KubeScheduler, b.Kwok, b.MetricsServer, b.Tsgo}
}

// BinariesOptions configure EnsureBinaries. A nil *BinariesOptions is the
// same as the zero value.
type BinariesOptions struct {
	// Dir holds the binaries. Zero means $KUBECODE_BIN_DIR when set, else
	// <user cache dir>/kubecode/bin/v1.37.1-etcd3.7.0 (~/.cache on Linux).
	Dir string
	// Progress receives build progress lines. Zero means os.Stderr.
	Progress io.Writer
	// BuildModule is the directory of the build module (the one holding
	// build/go.mod). Zero means it is located from this source file, or by
	// walking up from the working directory to the kubecode module.
	BuildModule string
	// ProgressEvery is the interval between progress lines while a binary
	// builds. Zero means 15s.
	ProgressEvery time.Duration
}

// binarySpec describes how to build one binary.
type binarySpec struct {
	name string
	dir  string   // module directory relative to the build module
	args []string // go build arguments after -o <file>
}

// kubeVersionFlags stamp the Kubernetes version into a component; without
// them it reports v0.0.0 and Helm's kubeVersion checks fail.
const kubeVersionFlags = "-X k8s.io/component-base/version.gitVersion=" + KubernetesVersion +
	" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"

var binarySpecs = []binarySpec{
	{name: "etcd", dir: ".", args: []string{"./etcd"}},
	{name: "kube-apiserver", dir: ".", args: []string{"-ldflags", kubeVersionFlags, "k8s.io/kubernetes/cmd/kube-apiserver"}},
	{name: "kube-controller-manager", dir: ".", args: []string{"-ldflags", kubeVersionFlags, "k8s.io/kubernetes/cmd/kube-controller-manager"}},
	{name: "kube-scheduler", dir: ".", args: []string{"-ldflags", kubeVersionFlags, "k8s.io/kubernetes/cmd/kube-scheduler"}},
	{name: kwokBinary, dir: "kwok", args: []string{"sigs.k8s.io/kwok/cmd/kwok"}},
	{name: metricsServerBinary, dir: "metrics-server", args: []string{"sigs.k8s.io/metrics-server/cmd/metrics-server"}},
	{name: tsgoBinary, dir: "tsgo", args: []string{"github.com/microsoft/typescript-go/cmd/tsgo"}},
}

// TsgoPath is where EnsureBinaries puts tsgo: the cache directory of BinDir.
func TsgoPath() (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, tsgoBinary), nil
}

// BinDir returns the directory EnsureBinaries uses when BinariesOptions.Dir
// is empty.
func BinDir() (string, error) {
	if d := os.Getenv("KUBECODE_BIN_DIR"); d != "" {
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("controlplane: locate cache dir: %w", err)
	}
	return filepath.Join(cache, "kubecode", "bin", binDirName), nil
}

// EnsureBinaries returns etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok from the cache directory, building whichever is
// missing first. Builds take several minutes cold (about 16 on two cores) and happen at most once per directory: an exclusive
// lock makes concurrent callers (parallel test binaries) wait for the first
// builder and then reuse its output. Binaries already present are never
// rebuilt.
func EnsureBinaries(ctx context.Context, opts *BinariesOptions) (Binaries, error) {
	if opts == nil {
		opts = &BinariesOptions{}
	}
	dir := opts.Dir
	if dir == "" {
		d, err := BinDir()
		if err != nil {
			return Binaries{}, err
		}
		dir = d
	}
	bins := Binaries{
		Etcd:                  filepath.Join(dir, "etcd"),
		KubeAPIServer:         filepath.Join(dir, "kube-apiserver"),
		KubeControllerManager: filepath.Join(dir, "kube-controller-manager"),
		KubeScheduler:         filepath.Join(dir, "kube-scheduler"),
		Kwok:                  filepath.Join(dir, kwokBinary),
		MetricsServer:         filepath.Join(dir, metricsServerBinary),
		Tsgo:                  filepath.Join(dir, tsgoBinary),
	}
	if missing(bins) == nil {
		return bins, nil
	}

	progress := opts.Progress
	if progress == nil {
		progress = os.Stderr
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Binaries{}, fmt.Errorf("controlplane: %w", err)
	}
	unlock, err := lockDir(ctx, dir, progress)
	if err != nil {
		return Binaries{}, err
	}
	defer unlock()

	todo := missing(bins) // another process may have built them while we waited
	if len(todo) == 0 {
		return bins, nil
	}
	module := opts.BuildModule
	if module == "" {
		if module, err = findBuildModule(); err != nil {
			return Binaries{}, err
		}
	}
	every := opts.ProgressEvery
	if every == 0 {
		every = 15 * time.Second
	}
	for _, spec := range binarySpecs {
		if !slices.Contains(todo, spec.name) {
			continue
		}
		if err := build(ctx, module, filepath.Join(dir, spec.name), spec, progress, every); err != nil {
			return Binaries{}, err
		}
	}
	return bins, nil
}

// missing lists the names of binaries that are absent or not executable.
func missing(b Binaries) []string {
	var out []string
	for _, p := range b.paths() {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			out = append(out, filepath.Base(p))
		}
	}
	return out
}

// lockDir takes an exclusive flock on dir/.lock, waiting (and saying so)
// while another process holds it.
func lockDir(ctx context.Context, dir string, progress io.Writer) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("controlplane: open lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		return func() { f.Close() }, nil
	}
	fmt.Fprintf(progress, "controlplane: another process is building binaries in %s; waiting\n", dir)
	done := make(chan error, 1)
	go func() { done <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("controlplane: lock %s: %w", dir, err)
		}
		return func() { f.Close() }, nil
	case <-ctx.Done():
		f.Close() // releases the pending flock call with an error or the lock
		return nil, ctx.Err()
	}
}

// build runs go build for one binary into a temporary file in the target
// directory and renames it into place.
func build(ctx context.Context, module, target string, spec binarySpec, progress io.Writer, every time.Duration) error {
	tmp := target + fmt.Sprintf(".tmp-%d", os.Getpid())
	defer os.Remove(tmp)
	args := append([]string{"build", "-trimpath", "-o", tmp}, spec.args...)
	cmd := exec.CommandContext(ctx, goTool(), args...)
	cmd.Dir = filepath.Join(module, spec.dir)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out

	start := time.Now()
	fmt.Fprintf(progress, "controlplane: building %s (go %s) in %s; this takes minutes once\n",
		spec.name, strings.Join(args, " "), cmd.Dir)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("controlplane: build %s: %w", spec.name, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			fmt.Fprintf(progress, "controlplane: still building %s (%s)\n", spec.name, time.Since(start).Round(time.Second))
		case err := <-waited:
			if err != nil {
				return fmt.Errorf("controlplane: build %s: %w\n%s", spec.name, err, tail(out.Bytes(), 40))
			}
			if err := os.Rename(tmp, target); err != nil {
				return fmt.Errorf("controlplane: %w", err)
			}
			fmt.Fprintf(progress, "controlplane: built %s in %s\n", spec.name, time.Since(start).Round(time.Second))
			return nil
		}
	}
}

// goTool returns the go command of the toolchain that runs us when it can
// (go run and go test say which in $GOROOT), else the one on $PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}

// findBuildModule locates internal/controlplane/build: next to this source
// file when the binary was built from a checkout without -trimpath, else by
// walking up from the working directory to the kubecode go.mod.
func findBuildModule() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Join(filepath.Dir(file), "build")
		if isFile(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("controlplane: %w", err)
	}
	if root, ok := findModuleRoot(wd); ok {
		dir := filepath.Join(root, "internal", "controlplane", "build")
		if isFile(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
	}
	return "", errors.New("controlplane: cannot find internal/controlplane/build (run from the kubecode repository, or set KUBECODE_BIN_DIR to a directory holding etcd and kube-apiserver)")
}

// findModuleRoot walks up from dir to the directory whose go.mod declares
// the kubecode module.
func findModuleRoot(dir string) (string, bool) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			s := bufio.NewScanner(f)
			for s.Scan() {
				if fields := strings.Fields(s.Text()); len(fields) == 2 && fields[0] == "module" && fields[1] == modulePath {
					f.Close()
					return dir, true
				}
			}
			f.Close()
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

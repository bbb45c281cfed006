package tokenbench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/kubecode/kubecode/adapters/helm"
	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/adapters/upstream"
	"github.com/kubecode/kubecode/bridge"
	"github.com/kubecode/kubecode/broker"
	"github.com/kubecode/kubecode/internal/controlplane"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/client-go/rest"
)

// KubecodeSide connects to a kubecode broker in mode on the cluster of
// cfg, over an in-memory transport (a transport costs no tokens), as
// kubecode serve starts it: Kubernetes and Helm, scripts type-checked with
// the tsgo scripts/test builds (none found: unchecked, which a code agent
// whose guess is wrong notices). Close the side to stop it.
func KubecodeSide(ctx context.Context, name string, cfg *rest.Config, mode broker.ToolMode) (*Side, error) {
	a, err := kubernetes.New(cfg, nil)
	if err != nil {
		return nil, err
	}
	h, err := helm.New(cfg, nil)
	if err != nil {
		return nil, err
	}
	tsgo, _ := controlplane.TsgoPath()
	br := bridge.New([]bridge.Provider{a, h}, nil)
	b := broker.New(br, &broker.Options{Mode: mode, Logger: slog.New(slog.DiscardHandler), Tsgo: tsgo})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	side, err := Connect(ctx, name, ct)
	if err != nil {
		_ = ss.Close()
		_ = br.Close()
		return nil, err
	}
	side.closers = append(side.closers, func() error { err := ss.Wait(); _ = b.Close(); _ = br.Close(); return err })
	return side, nil
}

// PeerVersion is the version of containers/kubernetes-mcp-server the
// benchmark compares with; scripts/test installs it from npm.
const PeerVersion = "0.0.67"

// PeerBinary is where scripts/test installs the peer, or $KUBECODE_PEER.
func PeerBinary() string {
	if p := os.Getenv("KUBECODE_PEER"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "kubecode", "peer", "node_modules", "kubernetes-mcp-server-linux-amd64", "bin", "kubernetes-mcp-server-linux-amd64")
}

// PeerSide runs the peer at bin over stdio with kubeconfig and its default
// toolsets, logging to logFile.
func PeerSide(ctx context.Context, bin, kubeconfig, logFile string) (*Side, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("tokenbench: the peer is not installed (scripts/test installs kubernetes-mcp-server-linux-amd64@%s with npm): %w", PeerVersion, err)
	}
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--log-file", logFile)
	return Connect(ctx, "kubernetes-mcp-server "+PeerVersion, &mcp.CommandTransport{Command: cmd})
}

// UpstreamSide connects to a kubecode broker in code mode whose one
// provider is the peer at bin run as an upstream MCP server named "peer"
// (its annotations trusted, every tool pinned as an operator would), so a
// question is answered from the upstream's own tools through a script.
// dir holds the upstreams file and its pins.
func UpstreamSide(ctx context.Context, bin, kubeconfig, logFile, dir string) (*Side, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("tokenbench: the peer is not installed (scripts/test installs kubernetes-mcp-server-linux-amd64@%s with npm): %w", PeerVersion, err)
	}
	raw, err := json.Marshal(map[string]any{"upstreams": []map[string]any{{"name": "peer", "trustAnnotations": true,
		"command": []string{bin, "--kubeconfig", kubeconfig, "--log-file", logFile}}}})
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "upstreams.yaml")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		return nil, err
	}
	f, err := upstream.ReadFile(file)
	if err != nil {
		return nil, err
	}
	u := upstream.New(f.Upstreams[0], &upstream.Options{PinsPath: f.PinsPath()})
	st := u.Status(ctx)
	if st.Error != "" {
		_ = u.Close()
		return nil, fmt.Errorf("tokenbench: the peer as an upstream: %s", st.Error)
	}
	pins := &upstream.Pins{}
	for _, t := range st.Tools {
		pins.Pin("peer", t.Tool, t.SHA256, t.Declaration, time.Now())
	}
	if err := pins.Write(f.PinsPath()); err != nil {
		_ = u.Close()
		return nil, err
	}
	tsgo, _ := controlplane.TsgoPath()
	br := bridge.New([]bridge.Provider{u}, nil)
	b := broker.New(br, &broker.Options{Mode: broker.ModeCode, Logger: slog.New(slog.DiscardHandler), Tsgo: tsgo})
	ct, ss := mcp.NewInMemoryTransports()
	srv, err := b.Server().Connect(ctx, ss, nil)
	if err != nil {
		_ = br.Close()
		_ = u.Close()
		return nil, err
	}
	side, err := Connect(ctx, "kubecode code over the peer as an upstream", ct)
	if err != nil {
		_ = srv.Close()
		_ = br.Close()
		_ = u.Close()
		return nil, err
	}
	side.closers = append(side.closers, func() error { err := srv.Wait(); _ = b.Close(); _ = br.Close(); _ = u.Close(); return err })
	return side, nil
}

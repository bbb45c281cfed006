package helm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/kubecode/kubecode/catalog"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// releaseState is what a revert records of a release: its revision, and
// nothing of its values.
type releaseState struct {
	Revision int `json:"revision"`
}

// Snapshot records a release a change touches: whether it is installed,
// and its revision.
func (a *Adapter) Snapshot(ctx context.Context, op string, c *catalog.Change, _ json.RawMessage) (*catalog.Snapshot, error) {
	if c.Kind != "HelmRelease" {
		return nil, fmt.Errorf("%s changes no release", op)
	}
	snap := &catalog.Snapshot{Op: op, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}
	rel, err := a.lastRelease(ctx, c.Namespace, c.Name)
	if err != nil || rel == nil {
		return snap, err
	}
	snap.Exists = true
	snap.Content, err = json.Marshal(releaseState{Revision: rel.Version})
	return snap, err
}

// lastRelease returns a release's latest revision, nil when it is not
// installed (none, or uninstalled with its history kept).
func (a *Adapter) lastRelease(ctx context.Context, ns, name string) (*release.Release, error) {
	cfg, err := a.config(ctx, ns, new(atomic.Bool))
	if err != nil {
		return nil, err
	}
	rel, err := cfg.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if rel.Info != nil && rel.Info.Status == release.StatusUninstalled {
		return nil, nil
	}
	return rel, nil
}

// Restore brings a release back as a revert: an install is uninstalled,
// an upgrade or rollback rolled back to the revision before it — only if
// no revision was made since.
func (a *Adapter) Restore(ctx context.Context, before, after *catalog.Snapshot) (string, json.RawMessage, error) {
	rel, err := a.lastRelease(ctx, before.Namespace, before.Name)
	if err != nil {
		return "", nil, err
	}
	revision := func(s *catalog.Snapshot) int {
		var st releaseState
		_ = json.Unmarshal(s.Content, &st)
		return st.Revision
	}
	target := map[string]any{"release": before.Name, "namespace": before.Namespace}
	switch {
	case !before.Exists && !after.Exists:
		return "", nil, catalog.ErrNothingToRevert
	case !after.Exists:
		return "", nil, fmt.Errorf("cannot re-install an uninstalled release from its record: install its chart again")
	case rel == nil:
		return "", nil, fmt.Errorf("conflict: the release was uninstalled since the execution; left alone")
	case rel.Version != revision(after):
		return "", nil, fmt.Errorf("conflict: the release is at revision %d, the execution left it at %d; left alone", rel.Version, revision(after))
	case !before.Exists:
		raw, err := json.Marshal(target)
		return "helm.uninstall", raw, err
	case revision(before) == revision(after):
		return "", nil, catalog.ErrNothingToRevert
	}
	target["revision"] = revision(before)
	raw, err := json.Marshal(target)
	return "helm.rollback", raw, err
}

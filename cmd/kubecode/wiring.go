package main

import (
	"github.com/kubecode/kubecode/adapters/helm"
	"github.com/kubecode/kubecode/adapters/kubernetes"
	"github.com/kubecode/kubecode/adapters/upstream"
	"github.com/kubecode/kubecode/bridge"
)

// The bridge finds what an adapter can do beyond calls (preview a change,
// revert one, say what results must honour) by type assertion at run time; these make a drifting
// signature a compile error instead of a capability silently lost.
var (
	_ bridge.Provider  = (*kubernetes.Adapter)(nil)
	_ bridge.Previewer = (*kubernetes.Adapter)(nil)
	_ bridge.Reverter  = (*kubernetes.Adapter)(nil)
	_ bridge.Shaper    = (*kubernetes.Adapter)(nil)
	_ bridge.Provider  = (*helm.Adapter)(nil)
	_ bridge.Previewer = (*helm.Adapter)(nil)
	_ bridge.Reverter  = (*helm.Adapter)(nil)
	_ bridge.Shaper    = (*helm.Adapter)(nil)
	_ bridge.Signaler  = (*kubernetes.Adapter)(nil)
	_ bridge.Signaler  = (*helm.Adapter)(nil)

	_ bridge.Provider       = (*upstream.Upstream)(nil)
	_ bridge.Previewer      = (*upstream.Upstream)(nil)
	_ bridge.UnservedLister = (*upstream.Upstream)(nil)
	_ bridge.Signaler       = (*upstream.Upstream)(nil)
	_ bridge.Reverter       = (*upstream.Upstream)(nil)
)

package bridge

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubecode/kubecode/bridge/policy"
	"github.com/kubecode/kubecode/catalog"
)

// Cluster is one of several clusters a bridge serves (Options.Clusters):
// its providers, its policy and what names it in plans.
type Cluster struct {
	// Name is how scripts pick the cluster: the value of the context
	// argument every operation takes (a kubeconfig context's name).
	Name string
	// Providers implement the cluster's operations.
	Providers []Provider
	// Policy, when set, is the rules the cluster's changes pass instead of
	// Options.Policy ("prod" read-only, "dev" apply).
	Policy *policy.Policy
	// Scope names the cluster in plans (its API server).
	Scope string
}

// cluster is a Cluster as the bridge uses it.
type cluster struct {
	name      string
	providers []Provider
	policy    policy.Policy
}

// contextArg is the argument naming the cluster a call is for, when the
// bridge serves several.
const contextArg = "context"

// multi says whether the bridge serves several clusters.
func (b *Bridge) multi() bool { return len(b.clusters) > 1 }

// clusterNamed returns the cluster called name ("" for the default).
func (b *Bridge) clusterNamed(name string) *cluster {
	if name == "" {
		return b.clusters[0]
	}
	for _, c := range b.clusters {
		if c.name == name {
			return c
		}
	}
	return nil
}

// decorate returns op as scripts see it on a bridge of several clusters:
// a context argument naming the clusters that serve it, and a description
// saying which.
func (b *Bridge) decorate(op *catalog.Operation, on []string) *catalog.Operation {
	d := *op
	in := &catalog.Schema{Type: "object"}
	if op.Input != nil {
		c := *op.Input
		in = &c
	}
	in.Properties = maps.Clone(in.Properties)
	if in.Properties == nil {
		in.Properties = map[string]*catalog.Schema{}
	}
	enum := make([]any, len(on))
	for i, n := range on {
		enum[i] = n
	}
	in.Properties[contextArg] = &catalog.Schema{Type: "string", Enum: enum,
		Description: fmt.Sprintf("the cluster (kubeconfig context) to call; default %s", b.clusters[0].name)}
	d.Input = in
	d.Description = strings.TrimSpace(op.Description) + " Clusters: " + strings.Join(on, ", ") + "."
	return &d
}

// takeContext splits a call's arguments into the cluster they name and
// the rest.
func takeContext(args json.RawMessage) (string, json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return "", args, nil // validation says what is wrong
	}
	raw, ok := m[contextArg]
	if !ok {
		return "", args, nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return "", nil, fmt.Errorf("context must be a cluster's name (a string)")
	}
	delete(m, contextArg)
	rest, err := json.Marshal(m)
	return name, rest, err
}

// clusterNames lists the clusters serving an entry, in the bridge's order.
func (b *Bridge) clusterNames(e *entry) []string {
	var out []string
	for _, c := range b.clusters {
		if _, ok := e.on[c.name]; ok {
			out = append(out, c.name)
		}
	}
	return out
}

// allClusters lists the clusters' names.
func (b *Bridge) allClusters() []string {
	var out []string
	for _, c := range b.clusters {
		out = append(out, c.name)
	}
	return out
}

// scopeOf names the clusters a plan is for.
func scopeOf(clusters []Cluster) string {
	var parts []string
	for _, c := range clusters {
		parts = append(parts, c.Name+"="+c.Scope)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// sharedCluster is where a shared provider's calls go: the shared
// providers' own with several clusters (on[""], the base policy), else the
// one cluster.
func (b *Bridge) sharedCluster() *cluster {
	if b.shared != nil {
		return b.shared
	}
	return b.clusters[0]
}

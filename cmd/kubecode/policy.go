package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/kubecode/kubecode/bridge/policy"
	"sigs.k8s.io/yaml"
)

// PlanKeyEnv holds the key that signs plans, shared by replicas.
const PlanKeyEnv = "KUBECODE_PLAN_KEY"

// policyFile is the YAML policy file: the bridge's Policy, and the plan
// key (better given in the environment).
type policyFile struct {
	policy.Policy `json:",inline"`
	PlanKey       string `json:"planKey,omitempty"`
	// Contexts override the policy for clusters by kubeconfig context
	// name, field by field: {prod: {mode: read-only}}.
	Contexts map[string]json.RawMessage `json:"contexts,omitempty"`
}

// contextPolicies returns the policy of each context the policy file's
// contexts section names: base with the section's fields over it.
func (g *globalFlags) contextPolicies(base policy.Policy) (map[string]policy.Policy, error) {
	if g.policy == "" {
		return nil, nil
	}
	b, err := os.ReadFile(g.policy)
	if err != nil {
		return nil, fmt.Errorf("read the policy: %w", err)
	}
	var f policyFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("policy %s: %w", g.policy, err)
	}
	out := map[string]policy.Policy{}
	for name, raw := range f.Contexts {
		p := base.Clone() // decoding into base's slices would change base
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&p); err != nil {
			return nil, fmt.Errorf("policy %s: contexts.%s: %w", g.policy, name, err)
		}
		if err := p.Check(); err != nil {
			return nil, fmt.Errorf("policy %s: contexts.%s: %w", g.policy, name, err)
		}
		out[name] = p
	}
	return out, nil
}

// loadPolicy reads --policy, applies --changes over it and finds the plan
// key: the file's, else $KUBECODE_PLAN_KEY, else none (a random one).
func (g *globalFlags) loadPolicy() (policy.Policy, []byte, error) {
	var f policyFile
	if g.policy != "" {
		b, err := os.ReadFile(g.policy)
		if err != nil {
			return policy.Policy{}, nil, fmt.Errorf("read the policy: %w", err)
		}
		if err := yaml.UnmarshalStrict(b, &f); err != nil {
			return policy.Policy{}, nil, fmt.Errorf("policy %s: %w", g.policy, err)
		}
		if err := f.Policy.Check(); err != nil {
			return policy.Policy{}, nil, fmt.Errorf("policy %s: %w", g.policy, err)
		}
	}
	if g.changes != "" {
		m, err := policy.ParseMode(g.changes)
		if err != nil {
			return policy.Policy{}, nil, fmt.Errorf("--changes: %w", err)
		}
		f.Mode = m
	}
	key := f.PlanKey
	if key == "" {
		key = os.Getenv(PlanKeyEnv)
	}
	if key != "" && len(key) < 16 {
		return policy.Policy{}, nil, fmt.Errorf("the plan key must be at least 16 characters")
	}
	if key == "" {
		return f.Policy, nil, nil
	}
	return f.Policy, []byte(key), nil
}

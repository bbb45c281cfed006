package main

import (
	"fmt"
	"os"

	"github.com/kubecode/kubecode/bridge"
	"sigs.k8s.io/yaml"
)

// PlanKeyEnv holds the key that signs plans, shared by replicas.
const PlanKeyEnv = "KUBECODE_PLAN_KEY"

// policyFile is the YAML policy file: the bridge's Policy, and the plan
// key (better given in the environment).
type policyFile struct {
	bridge.Policy `json:",inline"`
	PlanKey       string `json:"planKey,omitempty"`
}

// loadPolicy reads --policy, applies --changes over it and finds the plan
// key: the file's, else $KUBECODE_PLAN_KEY, else none (a random one).
func (g *globalFlags) loadPolicy() (bridge.Policy, []byte, error) {
	var f policyFile
	if g.policy != "" {
		b, err := os.ReadFile(g.policy)
		if err != nil {
			return bridge.Policy{}, nil, fmt.Errorf("read the policy: %w", err)
		}
		if err := yaml.UnmarshalStrict(b, &f); err != nil {
			return bridge.Policy{}, nil, fmt.Errorf("policy %s: %w", g.policy, err)
		}
		if f.Mode != "" {
			if _, err := bridge.ParseMode(string(f.Mode)); err != nil {
				return bridge.Policy{}, nil, fmt.Errorf("policy %s: %w", g.policy, err)
			}
		}
	}
	if g.changes != "" {
		m, err := bridge.ParseMode(g.changes)
		if err != nil {
			return bridge.Policy{}, nil, fmt.Errorf("--changes: %w", err)
		}
		f.Mode = m
	}
	key := f.PlanKey
	if key == "" {
		key = os.Getenv(PlanKeyEnv)
	}
	if key != "" && len(key) < 16 {
		return bridge.Policy{}, nil, fmt.Errorf("the plan key must be at least 16 characters")
	}
	if key == "" {
		return f.Policy, nil, nil
	}
	return f.Policy, []byte(key), nil
}

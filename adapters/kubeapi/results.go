package kubeapi

import "github.com/kubecode/kubecode/catalog"

// LastApplied is kubectl's copy of an object's last applied manifest: noise
// in a script's data, and for a Secret, its values.
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// ResultRules are what every result holding Kubernetes objects honours,
// whichever adapter returned it (the bridge applies them to all): a
// Secret's data and stringData values hidden, their keys kept; kubectl's
// last-applied copy always dropped from a Secret; managedFields and the
// last-applied copy dropped from every object as noise. Which objects are
// Secrets is IsSecret's answer: any whose kind is Secret.
func ResultRules() catalog.ResultRules {
	lastApplied := catalog.Path{"metadata", "annotations", LastApplied}
	return catalog.ResultRules{
		Secrets: []catalog.SecretObject{{Field: "kind", Value: secretKind, Values: []string{"data", "stringData"}, Drop: []catalog.Path{lastApplied}}},
		Noise:   []catalog.Path{{"metadata", "managedFields"}, lastApplied},
	}
}

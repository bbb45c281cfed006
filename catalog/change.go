package catalog

// Change is what one mutating call does (or would do), as its provider
// tells it to whoever judges it: the bridge's safety gates, plans and the
// ledger. Providers fill it from a dry run, so it describes the system's
// own answer, not a guess from the arguments.
type Change struct {
	// Action is the operation's verb: "create", "apply", "patch",
	// "delete", "scale", "rollout.restart", "rollout.undo", ...
	Action string `json:"action"`
	// Kind, Namespace and Name identify the object changed; Namespace is
	// empty for cluster-scoped objects.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Existed says the object was there before the call.
	Existed bool `json:"existed"`
	// Paths are the fields the call sets, dotted ("spec.replicas",
	// "spec.template.spec.containers[web].image"): one per leaf of a patch
	// or of an applied manifest, nil for creates and deletes.
	Paths []string `json:"paths,omitempty"`
	// GraceSeconds is a delete's grace period when the call set one; Force
	// marks a delete that skips graceful termination.
	GraceSeconds *int64 `json:"graceSeconds,omitempty"`
	Force        bool   `json:"force,omitempty"`
	// Sensitive marks an object that holds secret values: writes are
	// refused unless allowed, and no value of it appears in a Diff.
	Sensitive bool `json:"sensitive,omitempty"`
	// Privileged marks an object that grants permissions (access rules and
	// their bindings): writes are refused unless allowed.
	Privileged bool `json:"privileged,omitempty"`
	// Protected marks an object whose deletion takes much else with it
	// (a namespace, a type definition, a volume, cluster-wide access).
	Protected bool `json:"protected,omitempty"`
	// Diff summarizes the change in a few lines ("spec.replicas: 3 → 5").
	Diff []string `json:"diff,omitempty"`
	// Fingerprint digests what the call would send when that is more than
	// its arguments say (a rollback's target template, read from the
	// cluster): a plan binds it, so an approval that would send something
	// else diverges. Empty when the arguments say it all.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Objects are the changes of a call that changes many objects at once
	// (a Helm release: each object it creates, updates or deletes). Every
	// rule that judges an object judges each of them; the rules that bound
	// a patch's size judge only the call itself, which is reviewed whole.
	Objects []Change `json:"objects,omitempty"`
	// Critical, when set, says why the change touches what runs the
	// cluster itself (nodes, API priority, kube-system, a namespace's pod
	// security): refused unless the policy allows it.
	Critical string `json:"critical,omitempty"`
	// Internal marks an object that holds kubecode's own records (pending
	// plans, decisions, used plans, reverts): no script may change it,
	// whatever the policy.
	Internal bool `json:"internal,omitempty"`
	// Revert marks a change that brings an object back to what it was
	// before an applied execution (kubecode.revert).
	Revert bool `json:"revert,omitempty"`
}

// Object names the changed object: "Deployment shop/web", "Namespace
// shop".
func (c *Change) Object() string {
	if c.Namespace == "" {
		return c.Kind + " " + c.Name
	}
	return c.Kind + " " + c.Namespace + "/" + c.Name
}

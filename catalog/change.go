package catalog

import (
	"encoding/json"
	"strings"
)

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
	// Paths are the fields the call changes, dotted ("spec.replicas",
	// "spec.template.spec.containers[web].image", a key holding a dot or
	// a slash in brackets: "metadata.labels[app.kubernetes.io/name]"),
	// each a leaf: for an object that
	// existed, the leaves whose values the dry run changes (a field a patch
	// restates unchanged is not one); when the dry run failed, the leaves
	// the call names. Nil for creates and deletes.
	Paths []string `json:"paths,omitempty"`
	// Edits are the changes a reviewer would name, as the dry run shows
	// them: one per scalar field, per item of a list added, removed or
	// replaced (a toleration, an env var, a port, a volume), per block
	// changed as a whole (one container's resources, a probe). The rules
	// bounding a change's size count these, not Paths. Nil when the dry
	// run failed, for creates and deletes.
	Edits []string `json:"edits,omitempty"`
	// Restores, when set, says the change brings back an earlier state
	// of the object ("revision 2"): it is judged by what it restores, not
	// by its size.
	Restores string `json:"restores,omitempty"`
	// Rollout says whether the change replaces the object's running
	// instances (for Kubernetes, its pods): RolloutRestart when that is
	// what it asks for, RolloutRolls when it does so by itself (a new pod
	// template, a rollback), empty when it does not. The autopsy flags a
	// restart of an object already rolled in the same execution.
	Rollout string `json:"rollout,omitempty"`
	// NewNamespace marks a change that creates the namespace Name: the
	// execution's own, where its later changes are not strays.
	NewNamespace bool `json:"newNamespace,omitempty"`
	// Impact says what the change does to running workloads, as the
	// reviewer should read it first: "rolls 3 pods of shop/web",
	// "stops 2 of 3 pods of shop/web". Empty when it touches none.
	Impact string `json:"impact,omitempty"`
	// Pods count what Impact says: pods replaced, stopped and started.
	Pods Pods `json:"pods,omitzero"`
	// After are what will act on the object once the change is made (an
	// autoscaler, a GitOps controller, a Helm release, an owning
	// controller, a quota) and what each will do, as foreseen before a
	// person approves: the plan, the page and the answer say them first.
	After []Actor `json:"after,omitempty"`
	// Budget, when set, says which PodDisruptionBudget the change's
	// disruption would break ("PodDisruptionBudget shop/web allows no
	// disruption now"): refused unless the policy allows it.
	Budget string `json:"budget,omitempty"`
	// Signals are what the provider saw that a path-aware review calls
	// unsafe (a pod deleted that its controller recreates, a second
	// Service selecting the same pods, a healthy workload restarted): the
	// autopsy turns each into a flag. They do not refuse a change.
	Signals []Signal `json:"signals,omitempty"`
	// Validated, when set, says how a change was checked other than by its
	// own dry run ("validated in namespace default: namespace web is
	// created by this plan"). A change that has no dry run at all (a
	// command, an upstream tool) says "no dry run" here: a plan's header
	// then claims none for it.
	Validated string `json:"validated,omitempty"`
	// GraceSeconds is a delete's grace period when the call set one; Force
	// marks a delete that skips graceful termination.
	GraceSeconds *int64 `json:"graceSeconds,omitempty"`
	Force        bool   `json:"force,omitempty"`
	// Sensitive marks an object that holds secret values: writes are
	// refused unless allowed, and no value of it appears in a Diff.
	Sensitive bool `json:"sensitive,omitempty"`
	// SecretAccess, when set, says how a command can compute on Secret
	// values ("container web mounts Secret db at /etc/creds"): such a
	// command is never run as a read (a policy's execReads), whatever its
	// argv, since what it prints may depend on the value in a form no
	// scrubber knows. It is planned, for a person.
	SecretAccess string `json:"secretAccess,omitempty"`
	// Privileged marks an object that grants permissions (access rules and
	// their bindings): writes are refused unless allowed.
	Privileged bool `json:"privileged,omitempty"`
	// Dangers are what matters most in the access a Privileged change
	// grants (Secrets, commands in pods, impersonation, escalation, a
	// wildcard, ...): the plan and the page say them before the full list.
	Dangers []string `json:"dangers,omitempty"`
	// Protected marks an object whose deletion takes much else with it
	// (a namespace, a type definition, a volume, cluster-wide access).
	Protected bool `json:"protected,omitempty"`
	// Diff summarizes the change in a few lines ("spec.replicas: 3 → 5").
	Diff []string `json:"diff,omitempty"`
	// Fields are the values the change sets, each whole (Diff cuts long
	// ones): the before → after tables of the approval page and of
	// kubecode plans ID. Secret values are never in them.
	Fields []Field `json:"fields,omitempty"`
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
	// PodSecurity, when set, says which checks of the baseline Pod
	// Security Standard the object's pods would fail after the change that
	// they did not fail before (privileged containers, host namespaces,
	// hostPath volumes, added capabilities, ...): refused unless the policy
	// allows privileged pods there.
	PodSecurity string `json:"podSecurity,omitempty"`
	// Internal marks an object that holds kubecode's own records (pending
	// plans, decisions, used plans, reverts): no script may change it,
	// whatever the policy.
	Internal bool `json:"internal,omitempty"`
	// Unchanged says the dry run shows the call leaves the object exactly
	// as it is (a scale to the replicas it has, a patch restating its
	// fields): in plan mode it is not planned, and no one is asked.
	Unchanged bool `json:"unchanged,omitempty"`
	// Revert marks a change that brings an object back to what it was
	// before an applied execution (kubecode.revert), and RevertOf names
	// that execution.
	Revert   bool   `json:"revert,omitempty"`
	RevertOf string `json:"revertOf,omitempty"`
	// Upstream, when set, names the upstream MCP server a call goes to:
	// the change is a tool call (Kind "MCP tool", Name the operation), not
	// a cluster object's, so the rules about where in a cluster a change
	// lands (namespaces, cluster-wide) do not judge it.
	Upstream string `json:"upstream,omitempty"`
	// Group is the object's API group, when a provider other than the
	// object's own describes it (a Helm release's objects): a revert finds
	// the operations of its resource by kind and group.
	Group string `json:"-"`
	// ObjectOp is, for one object of a call that changes many (a
	// manifest's), the operation of its own resource
	// ("kubernetes.deployments.apply"): a revert reads and restores the
	// object with it. Empty otherwise.
	ObjectOp string `json:"-"`
	// Call is a tool call's arguments as sent (Upstream set), for its
	// provider's revert; never recorded (the ledger keeps the arguments,
	// secrets hidden).
	Call json.RawMessage `json:"-"`
}

// Actor is something in the cluster that acts on an object after a
// change, and what it will do to the change.
type Actor struct {
	// Who acts: "HorizontalPodAutoscaler live/storefront".
	Who string `json:"who"`
	// Does says what it will do, after Who: "keeps 3 to 10 replicas: it
	// sets spec.replicas back to 3 within seconds".
	Does string `json:"does"`
	// Undoes says the change will not last; Prevents that not all of it
	// will happen (a quota without room, a limit range that refuses its
	// pods).
	Undoes   bool `json:"undoes,omitempty"`
	Prevents bool `json:"prevents,omitempty"`
	// Instead says the change that would last, when one would.
	Instead string `json:"instead,omitempty"`
}

// The heads of Actor.Line.
const (
	WillNotLast   = "will not last: "
	WillNotHappen = "will not happen in full: "
	Afterwards    = "afterwards: "
)

// Undone says whether a line of Actor.Line (with anything before it)
// says the change will not last or will not happen in full.
func Undone(line string) bool {
	return strings.Contains(line, WillNotLast) || strings.Contains(line, WillNotHappen)
}

// Line says a in one line, as the plan puts it first: "will not last:
// …" when a undoes the change, "will not happen in full: …" when it
// prevents some of it, "afterwards: …" when it only acts on it.
func (a Actor) Line() string {
	head := Afterwards
	switch {
	case a.Undoes:
		head = WillNotLast
	case a.Prevents:
		head = WillNotHappen
	}
	s := head + a.Who + " " + a.Does
	if a.Instead != "" {
		s += "; what would last: " + a.Instead
	}
	return s
}

// Pods count the pods a change replaces (Rolled), stops and starts.
type Pods struct {
	Rolled  int64 `json:"rolled,omitempty"`
	Stopped int64 `json:"stopped,omitempty"`
	Started int64 `json:"started,omitempty"`
}

// Add adds o's counts to p.
func (p *Pods) Add(o Pods) {
	p.Rolled += o.Rolled
	p.Stopped += o.Stopped
	p.Started += o.Started
}

// Field is one field a change sets, as a reviewer reads it in full:
// Before and After are JSON, "(none)" where the field is absent, and
// "(value not shown)" for a secret.
type Field struct {
	Path   string `json:"path"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// Values of Change.Rollout.
const (
	RolloutRestart = "restart"
	RolloutRolls   = "rolls"
)

// Signal is one thing a provider saw about a change that a path-aware
// review calls unsafe.
type Signal struct {
	// Name is the autopsy's flag: one of the Signal constants.
	Name string `json:"name"`
	// Detail says what was seen, for a person.
	Detail string `json:"detail"`
}

// SignalKind is a signal a provider may raise and what its flag means,
// as the provider declares it (bridge.Signaler): the catalog and the
// autopsy know no provider's signals, they only count them.
type SignalKind struct {
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
}

// Object names the changed object: "Deployment shop/web", "Namespace
// shop".
func (c *Change) Object() string {
	if c.Namespace == "" {
		return c.Kind + " " + c.Name
	}
	return c.Kind + " " + c.Namespace + "/" + c.Name
}

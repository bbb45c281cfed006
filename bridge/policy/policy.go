package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubecode/kubecode/catalog"
)

// Mode says what the bridge does with a call that changes something.
type Mode string

// The modes of a Policy.
const (
	// ModeReadOnly refuses every change.
	ModeReadOnly Mode = "read-only"
	// ModePlan runs every change as a dry run and records it in a plan
	// that an approval can apply.
	ModePlan Mode = "plan"
	// ModeApply makes changes, still subject to the rules.
	ModeApply Mode = "apply"
)

// ParseMode checks a mode's name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeReadOnly, ModePlan, ModeApply:
		return m, nil
	}
	return "", fmt.Errorf("unknown changes mode %q: use read-only, plan or apply", s)
}

// Approval says who approves plans in plan mode.
type Approval string

// The approvals of a Policy.
const (
	// ApprovalHuman applies a plan only after a person approved it through
	// a channel the model never sees (an elicitation, the approval page,
	// the CLI). The agent gets the plan's id, never a token it could use.
	ApprovalHuman Approval = "human"
	// ApprovalAgent gives the agent the plan's token: sending it back
	// applies the plan. For automation that has no human; the ledger
	// records "approved by the agent".
	ApprovalAgent Approval = "agent"
)

// Two-person classes of change (Policy.TwoPerson).
const (
	TwoProtectedDelete = "protected-delete"
	TwoPermissionWrite = "permission-write"
	TwoClusterScoped   = "cluster-scoped"
	TwoAll             = "all"
)

// Policy is the one set of rules every change passes, whatever the script
// and whichever provider. Its zero value is the safe default: plan mode,
// narrow patches, graceful deletes, no writes to secrets or permissions.
type Policy struct {
	// Mode is what happens to changes. Zero means ModePlan.
	Mode Mode `json:"mode,omitempty"`
	// MaxEdits bounds the changes one call makes to an existing object,
	// counted as a reviewer names them from the dry run (Change.Edits): a
	// field changed, a list item added, removed or replaced, a container's
	// resources, a probe. Fields restated unchanged do not count; a
	// rollback or a revert is judged by what it restores, not its size.
	// Zero means 3; negative means no bound.
	MaxEdits int `json:"maxEdits,omitempty"`
	// MaxPatchPaths is MaxEdits' former name, read when MaxEdits is zero.
	//
	// Deprecated: use MaxEdits.
	MaxPatchPaths int `json:"maxPatchPaths,omitempty"`
	// ForceFullReplace allows applying a manifest over an existing object
	// that changes more than MaxEdits of it. Zero refuses it.
	ForceFullReplace bool `json:"forceFullReplace,omitempty"`
	// AllowBudgetBreaks allows a change that disrupts more pods than a
	// PodDisruptionBudget covering them allows now (deleting a pod,
	// scaling down). Zero refuses it.
	AllowBudgetBreaks bool `json:"allowBudgetBreaks,omitempty"`
	// AllowUngracefulDelete allows deletes with a zero grace period or
	// force. Zero refuses them.
	AllowUngracefulDelete bool `json:"allowUngracefulDelete,omitempty"`
	// AllowProtectedDelete allows deleting objects whose deletion takes
	// much else with them (namespaces, type definitions, volumes,
	// cluster-wide access rules). Zero refuses it.
	AllowProtectedDelete bool `json:"allowProtectedDelete,omitempty"`
	// AllowSecretWrites allows changes to objects that hold secret values.
	// Zero refuses them; values never reach plans, diffs or the ledger.
	AllowSecretWrites bool `json:"allowSecretWrites,omitempty"`
	// AllowPermissionWrites allows changes that widen access (access
	// rules and their bindings, webhooks, API services) like any other
	// change. Zero refuses them in apply mode; in plan mode with human
	// approval they are planned, with what they grant spelled out, for
	// PermissionWriteApprovers people to approve.
	AllowPermissionWrites bool `json:"allowPermissionWrites,omitempty"`
	// PermissionWriteApprovers is how many distinct people, neither the
	// user the plan acts for, approve a plan that widens access when
	// AllowPermissionWrites is off (plan mode, human approval). Zero means
	// 2; 1 lets one person approve it.
	PermissionWriteApprovers int `json:"permissionWriteApprovers,omitempty"`
	// AllowCriticalChanges allows changes to what runs the cluster itself:
	// nodes (delete, taint, cordon), API priority and fairness, the
	// kube-system namespaces, namespaces' pod-security labels. Zero
	// refuses them.
	AllowCriticalChanges bool `json:"allowCriticalChanges,omitempty"`
	// AllowPrivilegedPods allows changes whose pods would fail the
	// baseline Pod Security Standard (privileged containers, host
	// namespaces, hostPath volumes, added capabilities, ...), judged with
	// the API server's own checks. Zero refuses them, except in
	// PrivilegedPodNamespaces.
	AllowPrivilegedPods bool `json:"allowPrivilegedPods,omitempty"`
	// PrivilegedPodNamespaces are the namespaces where such pods are
	// allowed all the same (a CNI's, a node agent's).
	PrivilegedPodNamespaces []string `json:"privilegedPodNamespaces,omitempty"`
	// Namespaces, when set, are the only namespaces changes may touch;
	// cluster-scoped objects are then refused too.
	Namespaces []string `json:"namespaces,omitempty"`
	// DeniedKinds are kinds no change may touch.
	DeniedKinds []string `json:"deniedKinds,omitempty"`
	// MaxChanges bounds the changes of one execution. Zero means 10;
	// negative means no bound.
	MaxChanges int `json:"maxChanges,omitempty"`
	// PlanTTL is how long a plan stays approvable. Zero means 15 minutes.
	PlanTTL Duration `json:"planTTL,omitempty"`
	// Approval is who approves plans in plan mode. Zero means
	// ApprovalHuman: a person, through a channel the model never sees;
	// ApprovalAgent lets the agent apply its own plans (automation).
	Approval Approval `json:"approval,omitempty"`
	// ApprovalChannels, when set, are the only channels through which
	// people approve plans: "page", "cli" (kubecode approve), "elicitation"
	// (the MCP client asks its user), "terminal" (kubecode exec --approve).
	// A denial is taken from any channel. Zero means all of them.
	ApprovalChannels []string `json:"approvalChannels,omitempty"`
	// TwoPerson names the kinds of change that need two distinct human
	// approvers, neither the user the plan acts for: "protected-delete",
	// "permission-write", "cluster-scoped" or "all". Zero means none.
	TwoPerson []string `json:"twoPerson,omitempty"`
	// ExecReads are the commands run in containers (pods.exec) that are
	// reads, each an exact argv (["cat", "/etc/nginx/nginx.conf"]) or an
	// argv prefix ending in "*" (["ls", "*"]: ls with any arguments). A
	// call whose argv is one of them runs without a plan; every other
	// command is a change, planned and approved by a person. List only
	// commands that change nothing and print nothing secret (output
	// passes the secret boundary, which knows values, not what a command
	// makes of them). A command in a container that mounts or takes env
	// from a Secret, or that prints the environment, is never a read,
	// listed or not (catalog.Change.SecretAccess). A prefix must start
	// with a command that runs no other
	// and writes nothing whatever its arguments (cat, ls, grep, ...,
	// named bare, not by path). A call given stdin is never a read. Zero
	// means none.
	ExecReads [][]string `json:"execReads,omitempty"`
}

// Clone is a deep copy of p: its slices are its own.
func (p Policy) Clone() Policy {
	p.PrivilegedPodNamespaces = slices.Clone(p.PrivilegedPodNamespaces)
	p.Namespaces = slices.Clone(p.Namespaces)
	p.DeniedKinds = slices.Clone(p.DeniedKinds)
	p.ApprovalChannels = slices.Clone(p.ApprovalChannels)
	p.TwoPerson = slices.Clone(p.TwoPerson)
	reads := make([][]string, len(p.ExecReads))
	for i, r := range p.ExecReads {
		reads[i] = slices.Clone(r)
	}
	if p.ExecReads != nil {
		p.ExecReads = reads
	}
	return p
}

// ExecRead says whether argv is a read under ExecReads.
func (p Policy) ExecRead(argv []string) bool {
	for _, r := range p.ExecReads {
		if n := len(r); n > 0 && r[n-1] == "*" {
			if len(argv) >= n-1 && slices.Equal(argv[:n-1], r[:n-1]) {
				return true
			}
		} else if len(r) > 0 && slices.Equal(argv, r) {
			return true
		}
	}
	return false
}

// prefixReads are the commands whose any arguments still make a read: they
// run no other command and write nothing whatever they are given. A
// prefix ending in "*" must start with one of them.
var prefixReads = []string{"cat", "ls", "head", "tail", "wc", "stat", "df", "du", "ps", "id", "whoami", "hostname", "uname",
	"date", "pwd", "uptime", "free", "printenv", "nslookup", "dig", "getent", "grep", "md5sum", "sha256sum", "file"}

// Check says what is wrong with the policy's names, if anything.
func (p Policy) Check() error {
	if p.Mode != "" {
		if _, err := ParseMode(string(p.Mode)); err != nil {
			return err
		}
	}
	switch p.Approval {
	case "", ApprovalHuman, ApprovalAgent:
	default:
		return fmt.Errorf("unknown approval %q: use human (a person approves each plan) or agent (the agent applies its own plans)", p.Approval)
	}
	for _, c := range p.ApprovalChannels {
		switch c {
		case "page", "cli", "elicitation", "terminal":
		default:
			return fmt.Errorf("unknown approval channel %q: use page, cli, elicitation or terminal", c)
		}
	}
	for i, r := range p.ExecReads {
		if len(r) == 0 || r[0] == "" || r[0] == "*" {
			return fmt.Errorf("execReads[%d] is %q: list a command's argv, such as [\"cat\", \"/etc/nginx/nginx.conf\"], or a prefix ending in \"*\"", i, r)
		}
		if j := slices.Index(r, "*"); j >= 0 && j != len(r)-1 {
			return fmt.Errorf("execReads[%d] is %q: \"*\" may only end a prefix", i, r)
		}
		if r[len(r)-1] == "*" && !slices.Contains(prefixReads, r[0]) {
			return fmt.Errorf("execReads[%d] is %q: with any arguments %s may run other commands or write; list its exact argv instead (a prefix may start with %s)", i, r, r[0], strings.Join(prefixReads, ", "))
		}
	}
	if p.PermissionWriteApprovers < 0 || p.PermissionWriteApprovers > 2 {
		return fmt.Errorf("permissionWriteApprovers is %d: use 1 or 2 (0 means 2)", p.PermissionWriteApprovers)
	}
	for _, k := range p.TwoPerson {
		switch k {
		case TwoProtectedDelete, TwoPermissionWrite, TwoClusterScoped, TwoAll:
		default:
			return fmt.Errorf("unknown twoPerson kind %q: use %s, %s, %s or %s", k, TwoProtectedDelete, TwoPermissionWrite, TwoClusterScoped, TwoAll)
		}
	}
	return nil
}

// ChannelAllowed says whether people may approve plans through channel
// (ApprovalChannels; the agent's own approval under ApprovalAgent is no
// person's channel and is not judged here).
func (p Policy) ChannelAllowed(channel string) bool {
	return len(p.ApprovalChannels) == 0 || channel == "agent" || slices.Contains(p.ApprovalChannels, channel)
}

// PeoplePlanPermissionWrites says whether changes that widen access are
// planned for people to approve although AllowPermissionWrites is off:
// in plan mode with human approval, they are (by two people unless
// PermissionWriteApprovers is 1); the agent never approves them.
func (p Policy) PeoplePlanPermissionWrites() bool {
	return !p.AllowPermissionWrites && (p.Mode == ModePlan || p.Mode == "") && p.Approval != ApprovalAgent
}

// TwoPersonClasses are the classes of change that need two approvers:
// TwoPerson, and permission writes when people plan them with two
// approvers (PermissionWriteApprovers).
func (p Policy) TwoPersonClasses() []string {
	if p.PeoplePlanPermissionWrites() && p.PermissionWriteApprovers != 1 && !slices.Contains(p.TwoPerson, TwoPermissionWrite) {
		return append(slices.Clone(p.TwoPerson), TwoPermissionWrite)
	}
	return p.TwoPerson
}

// Duration is a time.Duration written as "15m" in configuration.
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"15m\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// DefaultMaxEdits is MaxEdits' default: the policy's bound and the
// autopsy's measure of a broad change.
const DefaultMaxEdits = 3

// WithDefaults returns p with every zero field at its default.
func (p Policy) WithDefaults() Policy {
	if p.Mode == "" {
		p.Mode = ModePlan
	}
	if p.MaxEdits == 0 {
		p.MaxEdits = p.MaxPatchPaths
	}
	if p.MaxEdits == 0 {
		p.MaxEdits = DefaultMaxEdits
	}
	if p.MaxChanges == 0 {
		p.MaxChanges = 10
	}
	if p.PlanTTL == 0 {
		p.PlanTTL = Duration(15 * time.Minute)
	}
	if p.Approval == "" {
		p.Approval = ApprovalHuman
	}
	return p
}

// Refusal is a change the policy refuses: the rule and what to do instead.
type Refusal struct {
	Rule    string
	Message string
}

// Rules of the policy, as refusals and ledger decisions name them.
const (
	RuleReadOnly         = "read-only"
	RuleMaxChanges       = "maxChanges"
	RuleNamespaces       = "namespaces"
	RuleDeniedKinds      = "deniedKinds"
	RuleSecretWrites     = "secretWrites"
	RulePermissionWrites = "permissionWrites"
	RuleProtectedDelete  = "protectedDelete"
	RuleUngracefulDelete = "ungracefulDelete"
	RuleFullReplace      = "fullReplace"
	RuleMaxEdits         = "maxEdits"
	RuleBudget           = "disruptionBudget"
	RuleInternal         = "kubecodeRecords"
	RuleCritical         = "criticalChanges"
	RulePodSecurity      = "podSecurity"
)

// Judge applies the rules to one change and to each object it changes
// (Change.Objects). It returns the first refusal, and the rules that were
// checked and passed.
func (p Policy) Judge(c *catalog.Change) (*Refusal, []string) {
	r, passed := p.checkObject(c)
	for i := range c.Objects {
		if r != nil {
			break
		}
		var more []string
		r, more = p.checkObject(&c.Objects[i])
		for _, rule := range more {
			if !slices.Contains(passed, rule) {
				passed = append(passed, rule)
			}
		}
	}
	return r, passed
}

// checkObject applies the rules to one object's change.
func (p Policy) checkObject(c *catalog.Change) (*Refusal, []string) {
	var passed []string
	ok := func(rule string) { passed = append(passed, rule) }
	obj := c.Object()
	if c.Internal {
		return &Refusal{RuleInternal, fmt.Sprintf("%s holds kubecode's own records of plans and approvals, which no script may change", obj)}, passed
	}
	if c.Critical != "" {
		if !p.AllowCriticalChanges {
			return &Refusal{RuleCritical, fmt.Sprintf("%s is refused: %s (allowCriticalChanges is off): say what you would change and ask a human", obj, c.Critical)}, passed
		}
		ok(RuleCritical)
	}
	if len(p.Namespaces) > 0 && c.Upstream == "" { // a tool call is in no namespace
		if c.Namespace == "" {
			return &Refusal{RuleNamespaces, fmt.Sprintf("%s is cluster-scoped and changes are allowed only in namespaces %s", obj, strings.Join(p.Namespaces, ", "))}, passed
		}
		if !slices.Contains(p.Namespaces, c.Namespace) {
			return &Refusal{RuleNamespaces, fmt.Sprintf("namespace %q is outside the namespaces changes are allowed in (%s)", c.Namespace, strings.Join(p.Namespaces, ", "))}, passed
		}
		ok(RuleNamespaces)
	}
	if slices.ContainsFunc(p.DeniedKinds, func(k string) bool { return strings.EqualFold(k, c.Kind) }) {
		return &Refusal{RuleDeniedKinds, fmt.Sprintf("changes to %s objects are denied by policy (deniedKinds), %s included: ask a human to make this change", c.Kind, obj)}, passed
	}
	if c.Sensitive {
		if !p.AllowSecretWrites {
			return &Refusal{RuleSecretWrites, fmt.Sprintf("%s holds secret values and writes to it are refused (allowSecretWrites is off): ask a human to make this change", obj)}, passed
		}
		ok(RuleSecretWrites)
	}
	if c.Privileged {
		if !p.AllowPermissionWrites && !p.PeoplePlanPermissionWrites() {
			how := "ask a human to make this change"
			if p.Mode == ModeApply {
				how = "a server in plan mode would plan it for people to approve; here, ask a human to make this change"
			}
			return &Refusal{RulePermissionWrites, fmt.Sprintf("%s widens access and such writes are refused (allowPermissionWrites is off): %s", obj, how)}, passed
		}
		ok(RulePermissionWrites)
	}
	if c.PodSecurity != "" {
		if !p.AllowPrivilegedPods && !slices.Contains(p.PrivilegedPodNamespaces, c.Namespace) {
			return &Refusal{RulePodSecurity, fmt.Sprintf("%s is refused: %s (allowPrivilegedPods is off): drop what the check names (privileged, host namespaces, hostPath, added capabilities), or ask a human", obj, c.PodSecurity)}, passed
		}
		ok(RulePodSecurity)
	}
	if c.Action == "delete" {
		if c.Protected && !p.AllowProtectedDelete {
			return &Refusal{RuleProtectedDelete, fmt.Sprintf("deleting %s takes much else with it and is refused (allowProtectedDelete is off): delete what it holds one by one, or ask a human", obj)}, passed
		}
		if (c.Force || c.GraceSeconds != nil && *c.GraceSeconds == 0) && !p.AllowUngracefulDelete {
			return &Refusal{RuleUngracefulDelete, fmt.Sprintf("deleting %s without a grace period is refused: leave gracePeriodSeconds and force out so it terminates cleanly", obj)}, passed
		}
		ok(RuleUngracefulDelete)
	}
	if c.Budget != "" {
		if !p.AllowBudgetBreaks {
			return &Refusal{RuleBudget, fmt.Sprintf("%s: %s is refused (allowBudgetBreaks is off): fix what keeps its pods unhealthy first, or ask a human", c.Budget, obj)}, passed
		}
		ok(RuleBudget)
	}
	// A revert or a rollback is judged by what it restores (an earlier,
	// reviewed state), not by how many fields that takes; a change the
	// dry run could not show (Edits nil) is judged by that failure.
	if c.Revert || c.Restores != "" || c.Edits == nil {
		return nil, passed
	}
	if p.MaxEdits > 0 && len(c.Edits) > p.MaxEdits {
		if c.Action == "apply" && c.Existed {
			if !p.ForceFullReplace {
				return &Refusal{RuleFullReplace, fmt.Sprintf("applying this manifest over the existing %s makes %d changes (%s), which replaces it wholesale and is refused (forceFullReplace is off): apply or patch only the %d or fewer things you mean to change",
					obj, len(c.Edits), sample(c.Edits), p.MaxEdits)}, passed
			}
			ok(RuleFullReplace)
		} else {
			return &Refusal{RuleMaxEdits, fmt.Sprintf("the %s of %s makes %d changes (%s); at most %d are allowed in one call (maxEdits): change only what the fix needs, one concern per call",
				c.Action, obj, len(c.Edits), sample(c.Edits), p.MaxEdits)}, passed
		}
	}
	ok(RuleMaxEdits)
	return nil, passed
}

func sample(paths []string) string {
	if len(paths) <= 4 {
		return strings.Join(paths, ", ")
	}
	return strings.Join(paths[:4], ", ") + ", …"
}

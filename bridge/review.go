package bridge

import (
	"slices"
	"strings"

	"github.com/kubecode/kubecode/catalog"
)

// Review is one planned change as the approval page lays it out: what it
// does to how many objects and pods, the warnings to read first, and
// every field it sets, whole. The plan's text (PlanChange.Diff) says the
// same in lines.
type Review struct {
	// Create, Change and Delete count the objects the change creates,
	// changes and deletes (a release's or manifest's one by one).
	Create int `json:"create,omitempty"`
	Change int `json:"change,omitempty"`
	Delete int `json:"delete,omitempty"`
	// Calls counts the calls of upstream tools, and Commands the commands
	// run in containers: calls, not objects created, changed or deleted.
	Calls    int `json:"calls,omitempty"`
	Commands int `json:"commands,omitempty"`
	// Pods count the pods it replaces, stops and starts.
	Pods catalog.Pods `json:"pods,omitzero"`
	// After say what will act on the objects once the change is made,
	// what undoes it first ("will not last: …"): the page shows them
	// before anything else.
	After []string `json:"after,omitempty"`
	// Impact says so in words ("stops 1 of the 4 pods of shop/web").
	Impact string `json:"impact,omitempty"`
	// Warnings are what to be careful about: privilege, disruption,
	// cluster scope, what runs the cluster, pod security.
	Warnings []string `json:"warnings,omitempty"`
	// RevertOf names the execution the change reverts.
	RevertOf string `json:"revertOf,omitempty"`
	// Tables are the fields set, object by object.
	Tables []FieldTable `json:"tables,omitempty"`
	// Lines are what the change says beyond the tables (what a create
	// makes, what a delete takes with it, the grants it gives).
	Lines []string `json:"lines,omitempty"`
}

// FieldTable is the fields a change sets on one object.
type FieldTable struct {
	Object string `json:"object"`
	Verb   string `json:"verb"` // "create", "change", "delete", "call", "run a command in"
	// Call marks a call's arguments (a command's, an upstream tool's):
	// values sent, with no before.
	Call   bool            `json:"call,omitempty"`
	Fields []catalog.Field `json:"fields,omitempty"`
	Lines  []string        `json:"lines,omitempty"`
}

// maxReviewValues bounds the values one change's tables hold in all, in
// bytes: the plan's record must fit where it is kept (a ConfigMap).
const maxReviewValues = 256 << 10

// reviewOf lays out change c for the page.
func reviewOf(c *catalog.Change) Review {
	r := reviewTables(c)
	budget := maxReviewValues
	for i := range r.Tables {
		fields := slices.Clone(r.Tables[i].Fields)
		for j := range fields {
			f := &fields[j]
			if budget -= len(f.Before) + len(f.After); budget < 0 {
				f.Before, f.After = "(not kept: the plan's values pass 256 KiB; kubecode plans ID shows the call)", ""
			}
		}
		r.Tables[i].Fields = fields
	}
	return r
}

func reviewTables(c *catalog.Change) Review {
	r := Review{Pods: c.Pods, Impact: c.Impact, RevertOf: c.RevertOf}
	undone, after := actorLines(c)
	r.After = append(undone, after...)
	warn := func(c *catalog.Change) {
		obj := c.Object()
		if c.Critical != "" {
			r.Warnings = append(r.Warnings, obj+": "+c.Critical)
		}
		if c.PodSecurity != "" {
			r.Warnings = append(r.Warnings, obj+": pod security: "+c.PodSecurity)
		}
		if c.Privileged && c.Action != "delete" {
			w := obj + ": grants permissions"
			if len(c.Dangers) > 0 {
				w += " — what matters: " + strings.Join(c.Dangers, "; ")
			}
			r.Warnings = append(r.Warnings, w)
		}
		if c.Budget != "" {
			r.Warnings = append(r.Warnings, obj+": "+c.Budget)
		}
		switch {
		case c.Upstream != "":
			r.Warnings = append(r.Warnings, obj+": a call of upstream "+c.Upstream+", outside the cluster: it has no dry run")
		case c.Namespace == "" && c.Kind != "HelmRelease" && c.Action != "":
			r.Warnings = append(r.Warnings, obj+": cluster-scoped")
		}
		for _, sg := range c.Signals {
			r.Warnings = append(r.Warnings, sg.Name+": "+sg.Detail)
		}
	}
	table := func(c *catalog.Change, lines []string) {
		t := FieldTable{Object: c.Object(), Verb: verbOf(c), Fields: c.Fields}
		t.Call = t.Verb == "call" || t.Verb == verbCommand
		if len(c.Fields) == 0 || t.Verb == "create" { // a create's summary beside its fields
			t.Lines = lines
		}
		r.Tables = append(r.Tables, t)
		switch t.Verb {
		case "call":
			r.Calls++
		case verbCommand:
			r.Commands++
		case "create":
			r.Create++
		case "delete":
			r.Delete++
		default:
			r.Change++
		}
	}
	warn(c)
	if len(c.Objects) == 0 {
		table(c, c.Diff)
		return r
	}
	for i := range c.Objects {
		o := &c.Objects[i]
		warn(o)
		table(o, o.Diff)
	}
	r.Lines = c.Diff
	return r
}

// verbCommand is verbOf a command run in a container.
const verbCommand = "run a command in"

// verbOf says what change c does to its object: create, change or
// delete.
func verbOf(c *catalog.Change) string {
	switch {
	case c.Upstream != "":
		return "call"
	case c.Action == "exec":
		return verbCommand
	case c.Action == "delete" || c.Action == "uninstall":
		return "delete"
	case !c.Existed:
		return "create"
	}
	return "change"
}

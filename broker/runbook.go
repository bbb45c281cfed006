package broker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/kubecode/kubecode/catalog"
)

// A Runbook is a named TypeScript script with typed parameters: a
// procedure a person approves once as a standard change (bridge.
// StandardChange) and agents call from any script as
// tools.runbooks.<name>(params). Its version is the hash of its code: an
// edited runbook is a new draft.
//
// A runbook is a script like execute_code's (top-level await, return)
// that reads its parameters from params, and opens with a JSDoc block
// that names it and declares them:
//
//	/**
//	 * Restarts a Deployment's pods, one by one, and says when it is done.
//	 * @param {string} namespace  the Deployment's namespace
//	 * @param {string} name       the Deployment
//	 * @param {'web' | 'worker'} [tier]  optional: a union of literals
//	 */
//	await tools.kubernetes.deployments.restart({ namespace: params.namespace, name: params.name })
//	return 'restarted'
//
// Types are string, number, integer, boolean, string[] and unions of
// string literals; a name in brackets is optional.
type Runbook struct {
	// Name is the runbook's name: lower case letters, digits and dashes.
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Params      []RunbookParam `json:"params"`
	// Code is the runbook's whole text; Version the hash of it.
	Code    string `json:"code"`
	Version string `json:"version"`
	// Source says where it comes from: "folder" (the operator's, from
	// --runbooks) or "saved by …" (an agent's).
	Source string `json:"source"`
}

// RunbookParam is one parameter of a runbook.
type RunbookParam struct {
	Name string `json:"name"`
	// Type is string, number, integer, boolean or string[]; Values, when
	// set, are the only strings allowed (a union of literals).
	Type        string   `json:"type"`
	Values      []string `json:"values,omitempty"`
	Optional    bool     `json:"optional,omitempty"`
	Description string   `json:"description,omitempty"`
}

// runbookName is what a runbook may be called.
var runbookName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// Operation names of runbooks.
const (
	runbookPrefix = "runbooks."
	saveOp        = "kubecode.runbooks.save"
)

// OpName is the operation that runs r: runbooks.<name>, dashes made
// underscores (tools.runbooks.restart_deployment).
func (r *Runbook) OpName() string { return runbookPrefix + strings.ReplaceAll(r.Name, "-", "_") }

// Signature is how a script calls r: tools.runbooks.restart_deployment({
// namespace: string, name: string }).
func (r *Runbook) Signature() string {
	var out []string
	for _, p := range r.Params {
		t := p.Type
		if len(p.Values) > 0 {
			t = strings.Join(p.Values, "|")
		}
		opt := ""
		if p.Optional {
			opt = "?"
		}
		out = append(out, p.Name+opt+": "+t)
	}
	return "tools." + r.OpName() + "({ " + strings.Join(out, ", ") + " })"
}

// runbookVersion names a runbook's code.
func runbookVersion(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:6])
}

var (
	jsdocRE = regexp.MustCompile(`(?s)^\s*/\*\*(.*?)\*/`)
	paramRE = regexp.MustCompile(`^@param\s+\{([^}]*)\}\s+(\[[A-Za-z_][A-Za-z0-9_]*\]|[A-Za-z_][A-Za-z0-9_]*)\s*(?:-\s*)?(.*)$`)
	litRE   = regexp.MustCompile(`^\s*(?:'([^']*)'|"([^"]*)")\s*$`)
)

// ParseRunbook reads runbook name from its code: the JSDoc block that
// opens it says what it does and declares its parameters. The error says
// what to fix.
func ParseRunbook(name, code string) (*Runbook, error) {
	if !runbookName.MatchString(name) {
		return nil, fmt.Errorf("runbook name %q: use 1–40 lower case letters, digits and dashes, starting with a letter", name)
	}
	if len(code) > maxRunbookBytes {
		return nil, fmt.Errorf("runbook %s: %d bytes of code; at most %d", name, len(code), maxRunbookBytes)
	}
	m := jsdocRE.FindStringSubmatch(code)
	if m == nil {
		return nil, fmt.Errorf("runbook %s: open it with a JSDoc block saying what it does and declaring its parameters: /** Restarts a Deployment. @param {string} namespace … */", name)
	}
	r := &Runbook{Name: name, Code: code, Version: runbookVersion(code)}
	var desc []string
	for _, line := range strings.Split(m[1], "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "*"))
		switch {
		case line == "":
		case strings.HasPrefix(line, "@param"):
			pm := paramRE.FindStringSubmatch(line)
			if pm == nil {
				return nil, fmt.Errorf("runbook %s: %q: write @param {type} name description", name, line)
			}
			p := RunbookParam{Name: strings.Trim(pm[2], "[]"), Optional: strings.HasPrefix(pm[2], "["), Description: strings.TrimSpace(pm[3])}
			if p.Name == "params" || slices.ContainsFunc(r.Params, func(q RunbookParam) bool { return q.Name == p.Name }) {
				return nil, fmt.Errorf("runbook %s: parameter %s is declared twice or reserved", name, p.Name)
			}
			typ := strings.TrimSpace(pm[1])
			switch typ {
			case "string", "number", "integer", "boolean", "string[]":
				p.Type = typ
			default:
				for _, alt := range strings.Split(typ, "|") {
					lm := litRE.FindStringSubmatch(alt)
					if lm == nil {
						return nil, fmt.Errorf("runbook %s: parameter %s: type %q: use string, number, integer, boolean, string[] or a union of string literals ('a' | 'b')", name, p.Name, typ)
					}
					p.Values = append(p.Values, lm[1]+lm[2])
				}
				p.Type = "string"
			}
			r.Params = append(r.Params, p)
		case strings.HasPrefix(line, "@"):
		default:
			desc = append(desc, line)
		}
	}
	r.Description = strings.Join(desc, " ")
	if r.Description == "" {
		return nil, fmt.Errorf("runbook %s: its JSDoc block says nothing of what it does: write a sentence before the @param lines", name)
	}
	return r, nil
}

// maxRunbookBytes bounds a runbook's code.
const maxRunbookBytes = 64 << 10

// operation is r as the catalog declares it.
func (r *Runbook) operation() *catalog.Operation {
	in := &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{}}
	for _, p := range r.Params {
		s := &catalog.Schema{Type: p.Type, Description: p.Description}
		if p.Type == "string[]" {
			s = &catalog.Schema{Type: "array", Items: &catalog.Schema{Type: "string"}, Description: p.Description}
		}
		for _, v := range p.Values {
			s.Enum = append(s.Enum, v)
		}
		in.Properties[p.Name] = s
		if !p.Optional {
			in.Required = append(in.Required, p.Name)
		}
	}
	return &catalog.Operation{Name: r.OpName(), Provider: "runbooks", Verb: "run", Resource: "runbooks",
		Description: "Runbook " + r.Name + " (" + r.Source + ", version " + r.Version + "): " + r.Description +
			" Runs without a plan within the standard change a person approved for it; outside it, its changes are planned.",
		Keywords: append([]string{"runbook", "standard", "change", r.Name}, strings.Split(r.Name, "-")...),
		Input:    in, Output: &catalog.Schema{Description: "what the runbook returns"},
		OutputName:  "RunbookResult",
		Annotations: catalog.Annotations{Script: true}}
}

// paramsDecl declares a runbook's params for the type check.
func (r *Runbook) paramsDecl() string {
	var b strings.Builder
	b.WriteString("declare const params: { readonly ")
	for i, p := range r.Params {
		if i > 0 {
			b.WriteString("; readonly ")
		}
		b.WriteString(p.Name)
		if p.Optional {
			b.WriteString("?")
		}
		b.WriteString(": ")
		switch {
		case len(p.Values) > 0:
			for j, v := range p.Values {
				if j > 0 {
					b.WriteString(" | ")
				}
				q, _ := json.Marshal(v)
				b.Write(q)
			}
		case p.Type == "integer":
			b.WriteString("number")
		default:
			b.WriteString(p.Type)
		}
	}
	b.WriteString(" };")
	return b.String()
}

// script is r's code as it runs with params: one line declares them, so
// a position in it is one line below the runbook's own.
func (r *Runbook) script(params json.RawMessage) string {
	// JSON.parse, not a literal: a "__proto__" key stays a key.
	lit, _ := json.Marshal(string(params))
	return "const params = Object.freeze(JSON.parse(" + string(lit) + "));\n" + r.Code
}

// saveOperation declares kubecode.runbooks.save.
func saveOperation() *catalog.Operation {
	return &catalog.Operation{Name: saveOp, Provider: "kubecode", Verb: "save", Resource: "runbooks",
		Description: "Save a runbook: a TypeScript script with typed parameters that agents call as tools.runbooks.<name>(params). " +
			"It is a draft that does not run until a person approves it as a standard change (kubecode runbooks approve); saving it again makes a new draft. " +
			"The code opens with a JSDoc block: a sentence on what it does, then @param {string} name description lines (types: string, number, integer, boolean, string[], 'a' | 'b'); it reads them from params.",
		Keywords: []string{"runbook", "save", "standard", "change", "reuse", "procedure"},
		Input: &catalog.Schema{Type: "object", Required: []string{"name", "code"}, Properties: map[string]*catalog.Schema{
			"name": {Type: "string", Description: "lower case letters, digits and dashes (restart-deployment)"},
			"code": {Type: "string", Description: "the runbook's TypeScript, opening with its JSDoc block"},
		}},
		Output: &catalog.Schema{Type: "object", Properties: map[string]*catalog.Schema{
			"name": {Type: "string"}, "version": {Type: "string"}, "call": {Type: "string", Description: "how scripts call it"},
			"state":   {Type: "string", Description: "draft: a person must approve it before it runs"},
			"approve": {Type: "string", Description: "what a person runs to approve it"},
		}},
		OutputName:  "SavedRunbook",
		Annotations: catalog.Annotations{Script: true}}
}

package catalog

import "slices"

// Operation describes one callable operation, e.g. "shop.orders.list",
// called from scripts as tools.shop.orders.list(input). Adapters publish
// operations; the catalog knows no provider and applies only generic
// mechanisms to what the descriptors carry.
type Operation struct {
	// Name is the stable dotted name "<provider>.<...>.<verb>"; scripts call
	// it as tools.<Name>.
	Name string `json:"name"`
	// Aliases are further dotted names that resolve to this operation.
	Aliases []string `json:"aliases,omitempty"`
	// Description is one line saying what the operation does.
	Description string `json:"description"`
	// Provider is the first segment of Name: the adapter that implements it.
	Provider string `json:"provider"`
	// What the operation acts on, for search: the resource in plural,
	// lower case; its kind (type name); other short names it answers to;
	// and the group it belongs to. All may be empty.
	Group      string   `json:"group,omitempty"`
	Resource   string   `json:"resource,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
	// Verb is the action: "list", "get", "logs", ...
	Verb string `json:"verb"`
	// Keywords are extra search terms: the words people use for the
	// operation's subject and action.
	Keywords []string `json:"keywords,omitempty"`
	// Hints tune how the operation is found and how its result type is
	// shown. Adapters usually share one *Hints among many operations. Nil
	// means none.
	Hints *Hints `json:"hints,omitempty"`
	// Input is the JSON schema of the single argument object.
	Input *Schema `json:"input"`
	// Output is the JSON schema of the result.
	Output *Schema `json:"output,omitempty"`
	// OutputName names the result type in declarations, e.g. "Order";
	// empty means "<Name in PascalCase>Result".
	OutputName  string      `json:"outputName,omitempty"`
	Annotations Annotations `json:"annotations"`
	// Fingerprint, when set, says which of its provider's operations this
	// is right now (an upstream tool's pinned declaration): the bridge
	// hands the operation it resolved to the call (OperationFrom), and a
	// provider whose operation of that name moved since refuses it rather
	// than run another under what the bridge decided for this one.
	Fingerprint string `json:"-"`
}

// Hints are what an adapter knows about its own domain that search and
// declarations use: words that lead to an operation, and the fields of its
// result that matter. The catalog holds no such tables itself.
type Hints struct {
	// Intents are question words that point at the operation although
	// they name neither it nor its subject ("crashing" for reading logs).
	// They are matched unstemmed, so list the inflections.
	Intents []string `json:"intents,omitempty"`
	// VerbWords are question words that ask for the operation's verb
	// without naming it ("remove" for delete). An operation whose verb is
	// asked for ranks ahead of its subject's other operations.
	VerbWords []string `json:"verbWords,omitempty"`
	// Weight multiplies the operation's search score unless the question
	// asks for its verb: below 1 for an operation that repeats what
	// another answers better (a metrics API's raw objects beside a top that
	// sets them against requests), or that answers a narrower question
	// than its subject's reads (a top, a node's logs). Zero means 1.
	Weight float64 `json:"weight,omitempty"`
	// Leading are property names shown first in objects, in this order;
	// the rest follow required first, then alphabetically.
	Leading []string `json:"leading,omitempty"`
	// Important are property names that matter wherever they appear: when
	// a result type is compacted they are kept ahead of their depth.
	Important []string `json:"important,omitempty"`
	// Keep are result paths always shown, with their subtrees, however
	// large the type ("status.phase"). Paths go through arrays and maps as
	// if they were not there: "spec.containers.name".
	Keep []string `json:"keep,omitempty"`
	// Detail are result paths a detailed declaration (one asked for by
	// name) shows besides Keep: the fields that make it complete.
	Detail []string `json:"detail,omitempty"`
	// Columns are what a table of the operation's results shows (direct
	// mode answers a list with a table), in order. Nil means the generic
	// columns: namespace, name and age.
	Columns []Column `json:"columns,omitempty"`
	// Scope marks an operation whose subject questions also name to say
	// where rather than what ("orders of a customer"): when a question names
	// another subject as well, this operation ranks below it.
	Scope bool `json:"scope,omitempty"`
}

// Column is one column of a table of results: the first of Paths with a
// value. A path is dotted and goes through arrays, which give their items'
// values joined by commas ("status.containerStatuses.restartCount").
type Column struct {
	Name  string   `json:"name"`
	Paths []string `json:"paths"`
}

// Annotations are hints about an operation's effect, as in MCP tool
// annotations.
type Annotations struct {
	ReadOnly    bool `json:"readOnly"`
	Destructive bool `json:"destructive"`
	Idempotent  bool `json:"idempotent"`
	// Sensitive marks an operation whose arguments may hold secret values:
	// records of its calls keep none of their values.
	Sensitive bool `json:"sensitive,omitempty"`
	// SecretArgs are argument keys whose values are secret data wherever
	// they appear, whatever their names say (a Kubernetes object's data
	// and stringData: it may be a Secret's): records and error messages
	// hide them, as they hide values of secret-looking names
	// (SecretName).
	SecretArgs []string `json:"secretArgs,omitempty"`
	// TargetArgs are the argument paths that name the call's target
	// rather than carry a value (a name, a namespace, an object's kind, a
	// JSON patch operation's path): a record that elides every value of a
	// call that may hold secrets keeps these. "[]" in a path stands for
	// every item of a list: {"patch", "[]", "path"}.
	TargetArgs []Path `json:"targetArgs,omitempty"`
	// Command is the argument holding the argv of a command the call runs
	// (a container's exec): such a call is a change unless the policy
	// lists its argv among the reads (ExecReads), and the ledger keeps
	// the exitCode of its result, never its output.
	Command string `json:"command,omitempty"`
	// CommandInput is the argument holding what the command reads on its
	// standard input: a call that gives it is never a read (a listed
	// database client fed "DROP TABLE" is a write).
	CommandInput string `json:"commandInput,omitempty"`
	// Script marks an operation that runs a script of its own (a
	// runbook): the call is neither a read nor a change, and each call
	// its script makes passes the bridge's rules on its own.
	Script bool `json:"script,omitempty"`
}

// Schema is the subset of JSON Schema the catalog uses for inputs and
// outputs. Schemas are trees: references are resolved by whoever builds
// them, and recursion is cut off with an empty Schema (any value). Schemas
// are immutable once an operation is published.
type Schema struct {
	// Type is "object", "array", "string", "integer", "number", "boolean",
	// or empty for any value.
	Type        string             `json:"type,omitempty"`
	Description string             `json:"description,omitempty"`
	Properties  map[string]*Schema `json:"properties,omitempty"`
	Required    []string           `json:"required,omitempty"`
	Items       *Schema            `json:"items,omitempty"`
	// AdditionalProperties is the schema of further properties: of map
	// values (labels), or, beside Properties, of fields not listed. Nil
	// means none declared.
	AdditionalProperties *Schema `json:"additionalProperties,omitempty"`
	// PrefixItems are a tuple's items, in order (an array's first item is
	// of the first schema, ...). Items, when also set, is the schema of the
	// items after them; nil means there are none.
	PrefixItems []*Schema `json:"prefixItems,omitempty"`
	// AnyOf are the forms a value takes: it matches one of them (a union).
	// Beside other fields (Type, Properties, ...) each form is read
	// together with them, as Branches returns it: an object type whose
	// properties every form shares and whose further ones differ.
	AnyOf []*Schema `json:"anyOf,omitempty"`
	// Enum lists the only values allowed; a constant is an Enum of one.
	Enum   []any  `json:"enum,omitempty"`
	Format string `json:"format,omitempty"`
	// Nullable means null is a value as well as what the rest describes.
	Nullable bool `json:"nullable,omitempty"`
	// Minimum and Maximum bound numbers, when set.
	Minimum *float64 `json:"minimum,omitempty"`
	Maximum *float64 `json:"maximum,omitempty"`
	// IntOrString marks fields that hold a number or a string.
	IntOrString bool `json:"x-int-or-string,omitempty"`
	// Name, when set, makes the schema a shared type: declarations refer
	// to it by this name and declare it once, in full, however many
	// results use it. Adapters use it for types every result carries.
	Name string `json:"x-type-name,omitempty"`
	// Title is the type's own name in its provider's API ("PodStatus").
	// Complete declarations (the type check's) declare the object under
	// it, so a misspelt field's error names a type the model knows; it does
	// not make the schema shared. Empty means a name made from where the
	// object sits ("Pod" + "Status").
	Title string `json:"title,omitempty"`
}

// Branches returns the forms of a union (AnyOf) each read together with
// s's other fields: a branch gets s's type, properties, required fields,
// items and other constraints where it sets none of its own, and its
// properties add to s's. A branch that would change is copied, never
// modified. It is nil when s is no union.
func (s *Schema) Branches() []*Schema {
	if len(s.AnyOf) == 0 {
		return nil
	}
	if s.Type == "" && len(s.Properties) == 0 && len(s.Required) == 0 && s.Items == nil && len(s.PrefixItems) == 0 &&
		s.AdditionalProperties == nil && len(s.Enum) == 0 && s.Format == "" && s.Minimum == nil && s.Maximum == nil && !s.IntOrString {
		return s.AnyOf // nothing to add
	}
	out := make([]*Schema, len(s.AnyOf))
	for i, b := range s.AnyOf {
		if b == nil {
			b = &Schema{}
		}
		m := *b
		m.Name = "" // another type than the branch's
		if m.Type == "" {
			m.Type = s.Type
		}
		if len(s.Properties) > 0 {
			m.Properties = make(map[string]*Schema, len(s.Properties)+len(b.Properties))
			for k, p := range s.Properties {
				m.Properties[k] = p
			}
			for k, p := range b.Properties {
				m.Properties[k] = p
			}
		}
		if len(s.Required) > 0 {
			m.Required = slices.Clone(s.Required)
			for _, r := range b.Required {
				if !slices.Contains(m.Required, r) {
					m.Required = append(m.Required, r)
				}
			}
		}
		if m.Items == nil && len(m.PrefixItems) == 0 {
			m.Items, m.PrefixItems = s.Items, s.PrefixItems
		}
		if m.AdditionalProperties == nil {
			m.AdditionalProperties = s.AdditionalProperties
		}
		if len(m.Enum) == 0 {
			m.Enum = s.Enum
		}
		if m.Format == "" {
			m.Format = s.Format
		}
		if m.Minimum == nil {
			m.Minimum = s.Minimum
		}
		if m.Maximum == nil {
			m.Maximum = s.Maximum
		}
		m.IntOrString = m.IntOrString || s.IntOrString
		out[i] = &m
	}
	return out
}

package catalog

// Operation describes one callable operation, e.g. "kubernetes.pods.list",
// called from scripts as tools.kubernetes.pods.list(input).
type Operation struct {
	// Name is the stable dotted name: "<provider>.<resource>.<verb>" for
	// Kubernetes resources, "kubernetes.api_resources" for discovery.
	Name string `json:"name"`
	// Aliases also resolve to this operation (singular, Kind, short names):
	// "kubernetes.po.list", "kubernetes.pod.list", "kubernetes.Pod.list".
	Aliases []string `json:"aliases,omitempty"`
	// Description is one line saying what the operation does.
	Description string `json:"description"`
	// Provider is "kubernetes" or "helm".
	Provider string `json:"provider"`
	// Resource facts, for Kubernetes operations.
	Group      string   `json:"group,omitempty"`
	Version    string   `json:"version,omitempty"`
	Resource   string   `json:"resource,omitempty"` // plural, lower-case: "pods"
	Kind       string   `json:"kind,omitempty"`     // "Pod"
	ShortNames []string `json:"shortNames,omitempty"`
	Namespaced bool     `json:"namespaced,omitempty"`
	// Verb is the action: "list", "get", "logs", ...
	Verb string `json:"verb"`
	// Keywords are extra search terms ("crash", "restart", "diagnose").
	Keywords []string `json:"keywords,omitempty"`
	// Input is the JSON schema of the single argument object.
	Input *Schema `json:"input"`
	// Output is the JSON schema of the result.
	Output *Schema `json:"output,omitempty"`
	// OutputName names the result type in declarations, e.g. "Pod";
	// empty means "<Name in PascalCase>Result".
	OutputName  string      `json:"outputName,omitempty"`
	Annotations Annotations `json:"annotations"`
}

// Annotations are hints about an operation's effect, as in MCP tool
// annotations.
type Annotations struct {
	ReadOnly    bool `json:"readOnly"`
	Destructive bool `json:"destructive"`
	Idempotent  bool `json:"idempotent"`
}

// Schema is the subset of JSON Schema the catalog uses for inputs and
// outputs. Schemas are trees: references are resolved by whoever builds
// them, and recursion is cut off with an empty Schema (any value).
type Schema struct {
	// Type is "object", "array", "string", "integer", "number", "boolean",
	// or empty for any value.
	Type        string             `json:"type,omitempty"`
	Description string             `json:"description,omitempty"`
	Properties  map[string]*Schema `json:"properties,omitempty"`
	Required    []string           `json:"required,omitempty"`
	Items       *Schema            `json:"items,omitempty"`
	// AdditionalProperties is the schema of map values (for maps such as
	// labels); nil means none declared.
	AdditionalProperties *Schema `json:"additionalProperties,omitempty"`
	Enum                 []any   `json:"enum,omitempty"`
	Format               string  `json:"format,omitempty"`
	// Minimum and Maximum bound numbers, when set.
	Minimum *float64 `json:"minimum,omitempty"`
	Maximum *float64 `json:"maximum,omitempty"`
	// IntOrString marks Kubernetes int-or-string fields.
	IntOrString bool `json:"x-kubernetes-int-or-string,omitempty"`
}

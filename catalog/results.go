package catalog

// ResultRules are what a provider says every result must honour, whoever
// produced it: values no model may see, and noise no script needs. The
// bridge applies the union of its providers' rules to every result (so a
// secret one provider knows of is hidden in another's results too) and
// refuses a result that may hold a secret it cannot decode.
type ResultRules struct {
	// Secrets are the objects that hold secret values.
	Secrets []SecretObject
	// Noise are paths dropped from every JSON object that has them, unless
	// the bridge is told to keep noise.
	Noise []Path
}

// SecretObject names the objects that hold secret values: every JSON
// object of a result, at any depth, whose member Field is the string
// Value (for Kubernetes: "kind" is "Secret").
type SecretObject struct {
	Field, Value string
	// Values are its members whose every entry is replaced by "[redacted]":
	// the keys stay, so a script can still tell which exist.
	Values []string
	// Drop are paths always removed from it, noise kept or not (kubectl's
	// copy of a Secret's last applied manifest holds its values).
	Drop []Path
}

// Path is a member's place within an object, one key per level.
type Path []string

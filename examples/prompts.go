package examples

import (
	"embed"
	"strings"
)

//go:embed prompts/*.ts
var prompts embed.FS

// Prompt is one MCP prompt's script and what it asks for.
type Prompt struct {
	Name, Title string
	// Required are the arguments it needs (of those its first line names).
	Required []string
	Script   string
}

// Prompts returns the prompts kubecode serves, each with its script of
// prompts/.
func Prompts() []Prompt {
	out := []Prompt{
		{Name: "cluster-health", Title: "Cluster health of a namespace"},
		{Name: "restarts", Title: "Pods that restarted"},
		{Name: "services-without-endpoints", Title: "Services without endpoints"},
		{Name: "helm-drift", Title: "Helm drift of a release", Required: []string{"release"}},
		{Name: "pod-not-ready", Title: "Why is this pod not ready?", Required: []string{"namespace", "pod"}},
	}
	for i := range out {
		b, _ := prompts.ReadFile("prompts/" + out[i].Name + ".ts")
		out[i].Script = strings.ReplaceAll(string(b), "\r\n", "\n")
	}
	return out
}

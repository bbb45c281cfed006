package kubernetes

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kubecode/kubecode/catalog"
)

// openapiDoc is one group-version's OpenAPI v3 document, decoded loosely:
// only components.schemas matters here.
type openapiDoc struct {
	Components struct {
		Schemas map[string]*oaSchema `json:"schemas"`
	} `json:"components"`
}

type oaSchema struct {
	Ref                  string               `json:"$ref"`
	Type                 string               `json:"type"`
	Format               string               `json:"format"`
	Properties           map[string]*oaSchema `json:"properties"`
	Required             []string             `json:"required"`
	Items                *oaSchema            `json:"items"`
	AdditionalProperties json.RawMessage      `json:"additionalProperties"`
	AllOf                []*oaSchema          `json:"allOf"`
	Enum                 []any                `json:"enum"`
	IntOrString          bool                 `json:"x-kubernetes-int-or-string"`
	PreserveUnknown      bool                 `json:"x-kubernetes-preserve-unknown-fields"`
	GVK                  []struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	} `json:"x-kubernetes-group-version-kind"`
}

func parseOpenAPI(data []byte) (*openapiDoc, error) {
	var d openapiDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("decode OpenAPI v3: %w", err)
	}
	return &d, nil
}

// kindSchemaName finds the components.schemas key for group/version/kind.
func (d *openapiDoc) kindSchemaName(group, version, kind string) string {
	for name, s := range d.Components.Schemas {
		for _, g := range s.GVK {
			if g.Group == group && g.Version == version && g.Kind == kind {
				return name
			}
		}
	}
	return ""
}

// maxSchemaDepth cuts recursive or very deep schemas (JSONSchemaProps refers
// to itself); the TypeScript generator compacts further.
const maxSchemaDepth = 16

// convert resolves name into a catalog.Schema tree.
func (d *openapiDoc) convert(name string) *catalog.Schema {
	return d.convertSchema(&oaSchema{Ref: "#/components/schemas/" + name}, map[string]bool{}, 0)
}

func (d *openapiDoc) convertSchema(s *oaSchema, seen map[string]bool, depth int) *catalog.Schema {
	if s == nil || depth > maxSchemaDepth {
		return &catalog.Schema{}
	}
	if s.Ref == "" && len(s.AllOf) == 1 && s.Type == "" && len(s.Properties) == 0 {
		s = s.AllOf[0]
	}
	if s.Ref != "" {
		name := strings.TrimPrefix(s.Ref, "#/components/schemas/")
		target, ok := d.Components.Schemas[name]
		if !ok || seen[name] {
			return &catalog.Schema{}
		}
		if out, ok := wellKnown(name); ok {
			return out
		}
		seen[name] = true
		defer delete(seen, name)
		out := d.convertSchema(target, seen, depth)
		if len(out.Properties) > 0 {
			out.Title = name[strings.LastIndexByte(name, '.')+1:] // io.k8s.api.core.v1.PodStatus
		}
		return out
	}
	out := &catalog.Schema{Type: s.Type, Format: s.Format, Enum: s.Enum, IntOrString: s.IntOrString}
	if len(s.Properties) > 0 {
		out.Type = "object"
		out.Properties = make(map[string]*catalog.Schema, len(s.Properties))
		for k, p := range s.Properties {
			out.Properties[k] = d.convertSchema(p, seen, depth+1)
		}
		out.Required = s.Required
	}
	if s.Items != nil {
		out.Items = d.convertSchema(s.Items, seen, depth+1)
	}
	if len(s.AdditionalProperties) > 0 && s.AdditionalProperties[0] == '{' {
		var ap oaSchema
		if json.Unmarshal(s.AdditionalProperties, &ap) == nil {
			out.AdditionalProperties = d.convertSchema(&ap, seen, depth+1)
		}
	}
	if s.PreserveUnknown && len(out.Properties) > 0 && out.AdditionalProperties == nil {
		out.AdditionalProperties = &catalog.Schema{} // fields beyond those listed are kept
	}
	return out
}

// wellKnown maps apimachinery leaf types to their JSON form.
func wellKnown(name string) (*catalog.Schema, bool) {
	switch name {
	case "io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime":
		return &catalog.Schema{Type: "string", Format: "date-time"}, true
	case "io.k8s.apimachinery.pkg.api.resource.Quantity":
		return &catalog.Schema{Type: "string", Format: "quantity"}, true
	case "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
		return &catalog.Schema{IntOrString: true}, true
	case "io.k8s.apimachinery.pkg.runtime.RawExtension", "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON":
		return &catalog.Schema{}, true
	}
	return nil, false
}

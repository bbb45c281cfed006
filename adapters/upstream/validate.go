package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A tool that declares an outputSchema promises the shape of its
// structuredContent, and the script is typed from that promise: a result
// that breaks it is an error that says so, not a value the script
// misreads.

// outputValidator checks one tool's structured results; it compiles the
// schema once, on first use.
type outputValidator struct {
	raw  json.RawMessage
	once sync.Once
	sch  *jsonschema.Schema
	err  error
}

// noLoader refuses every reference outside the schema: a server's schema
// must not make kubecode read a file or fetch a URL.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("references outside the schema are not followed (%s)", url)
}

func (v *outputValidator) validate(op string, value any) error {
	v.once.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(v.raw))
		if err != nil {
			v.err = err
			return
		}
		c := jsonschema.NewCompiler()
		c.UseLoader(noLoader{})
		c.DefaultDraft(jsonschema.Draft2020)
		const loc = "urn:kubecode:output"
		if err := c.AddResource(loc, doc); err != nil {
			v.err = err
			return
		}
		v.sch, v.err = c.Compile(loc)
	})
	if v.err != nil {
		// A schema kubecode cannot compile checks nothing: the result
		// passes as the declaration (unknown where it could not be read)
		// types it.
		return nil
	}
	// The validator wants JSON's own types (json.Number, not float64).
	raw, err := json.Marshal(value)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if err := v.sch.Validate(inst); err != nil {
		msg := strings.Join(strings.Fields(err.Error()), " ")
		if len(msg) > 600 {
			msg = msg[:600] + "…"
		}
		return fmt.Errorf("%s returned a result that does not match its outputSchema, so its declared type would mislead the script: %s", op, msg)
	}
	return nil
}

package tstest

import (
	"testing"

	"github.com/evanw/esbuild/pkg/api"
)

// Parse fails t for every syntax error esbuild finds in src, a TypeScript
// file, and then logs src.
func Parse(t testing.TB, src string) {
	t.Helper()
	res := api.Transform(src, api.TransformOptions{Loader: api.LoaderTS})
	for _, m := range res.Errors {
		line := ""
		if m.Location != nil {
			line = m.Location.LineText
		}
		t.Errorf("%s\n  in: %.300s", m.Text, line)
	}
	if len(res.Errors) > 0 {
		t.Logf("TypeScript:\n%.4000s", src)
	}
}

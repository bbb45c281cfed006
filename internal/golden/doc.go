// Package golden compares test output with golden files under testdata/,
// and rewrites them when the test binary runs with -update. Only tests
// import it.
//
//	func TestRender(t *testing.T) { golden.Check(t, "pods.ts", []byte(render())) }
//
//	go test ./catalog -run TestRender -update   # rewrite testdata/pods.ts
package golden

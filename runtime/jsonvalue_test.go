package runtime

import (
	"strings"
	"testing"

	"github.com/dop251/goja"
)

// TestJSONToValue checks the fast parser against goja's JSON.parse: the same
// values (compared through JSON.stringify) and an error where it errs.
func TestJSONToValue(t *testing.T) {
	inputs := []string{
		`{}`, `[]`, `null`, `true`, `false`, `0`, `-1`, `1.5`, `1e3`, `-2.5E-3`, `9007199254740993`, `123456789012`,
		`"plain"`, `"esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00"`, `"ünïcødé ✓"`,
		`{"a":1,"b":[true,null,{"c":"d"}],"e":{}}`, ` [ 1 , 2 , [ ] , { } ] `,
		`{"__proto__":{"polluted":true},"x":1}`, `{"a":1,"a":2}`,
		`[{"metadata":{"name":"p1","labels":{"app":"web"}}},{"metadata":{"name":"p2","labels":{}}}]`,
	}
	vm := goja.New()
	parse, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("parse"))
	stringify, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
	for _, in := range inputs {
		want, err := parse(goja.Undefined(), vm.ToValue(in))
		if err != nil {
			t.Fatalf("JSON.parse(%s): %v", in, err)
		}
		got, err := jsonToValue(vm, []byte(in))
		if err != nil {
			t.Errorf("jsonToValue(%s): %v", in, err)
			continue
		}
		w, _ := stringify(goja.Undefined(), want)
		g, _ := stringify(goja.Undefined(), got)
		if w.String() != g.String() {
			t.Errorf("jsonToValue(%s) = %s, JSON.parse gives %s", in, g, w)
		}
	}
	if v, _ := jsonToValue(vm, []byte(`{"__proto__":{"polluted":true}}`)); v.ToObject(vm).Get("polluted") != nil {
		t.Error("__proto__ key changed the prototype")
	}
	for _, bad := range []string{``, `{`, `[1,]`, `{"a":}`, `{"a" 1}`, `tru`, `"unterminated`, `"ctl ` + "\x01" + `"`, `1 2`, `{a:1}`, `'x'`, `[1 2]`, strings.Repeat("[", 20000)} {
		if _, err := jsonToValue(vm, []byte(bad)); err == nil {
			t.Errorf("jsonToValue(%.20q) accepted invalid JSON", bad)
		}
	}
}

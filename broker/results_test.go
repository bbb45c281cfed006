package broker_test

import (
	"strings"
	"testing"
)

// TestResultsReadLikeAnswers: a script's string comes back as its text;
// objects and arrays as compact JSON.
func TestResultsReadLikeAnswers(t *testing.T) {
	cs := connect(t, newBroker(t, cp.Admin))
	for _, tc := range []struct {
		name, code, want string
	}{
		{"string", "return 'shop/checkout: 2 of 3 ready\\npayments/ledger: 0 of 1 ready'", "shop/checkout: 2 of 3 ready\npayments/ledger: 0 of 1 ready"},
		{"quotes kept", `return 'say "hi"'`, `say "hi"`},
		{"object", "return { ready: 2, names: ['a', 'b'] }", `{"ready":2,"names":["a","b"]}`},
		{"number", "return 42", "42"},
		{"string in an array", "return ['x']", `["x"]`},
		{"with console", "console.log('checked 3'); return 'ok'", "ok\n--- console ---\nchecked 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, isErr := callText(t, cs, "execute_code", map[string]any{"code": tc.code})
			if isErr || text != tc.want {
				t.Errorf("got %q (error %v), want %q", text, isErr, tc.want)
			}
		})
	}
}

// TestDeepResultIsAnswered: a result nested 20,000 deep gets an answer, an
// error saying what to return instead, not silence.
func TestDeepResultIsAnswered(t *testing.T) {
	cs := connect(t, newBroker(t, cp.Admin))
	text, isErr := callText(t, cs, "execute_code", map[string]any{"code": "let o: any = {}\nfor (let i = 0; i < 20000; i++) o = { o }\nreturn o"})
	if !isErr || !strings.Contains(text, "nests more than 256 levels deep") {
		t.Errorf("got %q (error %v), want the depth limit", text, isErr)
	}
}

package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const canary = "s3cr3t-Canary-Value-7Hq9"

func TestScrubForms(t *testing.T) {
	r := New(nil)
	r.Set("Secret shop/db", []Value{{Value: canary + "\n", What: "Secret shop/db key password"}})
	b64 := base64.StdEncoding.EncodeToString([]byte(canary))
	for _, tc := range []struct {
		name, text, want string
	}{
		{"raw", "pw=" + canary + ".", "pw=[hidden: Secret shop/db key password]."},
		{"base64", "x " + b64 + " y", "x [hidden: Secret shop/db key password (base64)] y"},
		{"base64 at an offset", base64.StdEncoding.EncodeToString([]byte("user:" + canary)), ""},
		{"url-safe unpadded", base64.RawURLEncoding.EncodeToString([]byte(canary)), "[hidden: Secret shop/db key password (base64)]"},
		{"hex", hex.EncodeToString([]byte(canary)), "[hidden: Secret shop/db key password (hex)]"},
		{"upper-case", "token " + strings.ToUpper(canary), "token [hidden: Secret shop/db key password (upper-case)]"},
		{"lower-case", "token " + strings.ToLower(canary), "token [hidden: Secret shop/db key password (lower-case)]"},
		{"reversed", "token " + reversed(canary), "token [hidden: Secret shop/db key password (reversed)]"},
		{"url", "?p=" + url.QueryEscape(canary), "?p=[hidden: Secret shop/db key password]"},
		{"none", "nothing here at all", "nothing here at all"},
		{"jwt", "Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlLXBhcnQ", "Bearer [hidden: a token]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := r.Scrub(tc.text, false)
			if tc.want == "" {
				if strings.Contains(got, b64[4:len(b64)-4]) || !strings.Contains(got, "[hidden:") {
					t.Fatalf("not hidden: %q", got)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestShortValuesAndWords(t *testing.T) {
	r := New(nil)
	r.Set("s", []Value{{Value: "12345", What: "short"}, {Value: "changeme", What: "pw"}})
	for _, tc := range []struct{ in, want string }{
		{"port 12345", "port 12345"},                 // under MinValue: not registered
		{"pw changeme.", "pw [hidden: pw]."},         // a word
		{"changemedia", "changemedia"},               // inside a longer word: kept
		{`{"k":"changeme"}`, `{"k":"[hidden: pw]"}`}, // quotes are boundaries
	} {
		got, _ := r.Scrub(tc.in, false)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got)\n%s", tc.in, diff)
		}
	}
}

func TestCutOutput(t *testing.T) {
	r := New(nil)
	r.Set("s", []Value{{Value: canary, What: "pw"}})
	got, _ := r.Scrub("end: "+canary[:10], true)
	if diff := cmp.Diff("end: [hidden: pw]", got); diff != "" {
		t.Fatalf("(-want +got)\n%s", diff)
	}
	got, _ = r.Scrub("end: "+canary[:10], false)
	if got != "end: "+canary[:10] {
		t.Fatalf("uncut text lost a prefix: %q", got)
	}
}

func TestScrubJSON(t *testing.T) {
	r := New(nil)
	r.Set("s", []Value{{Value: canary, What: "pw"}, {Value: `quo"ted\value-long`, What: "q"}, {Value: "line one here\nline two here", What: "ml"}})
	for _, tc := range []struct{ name, in, want string }{
		{"plain", `{"log":"db ` + canary + ` ok"}`, `{"log":"db [hidden: pw] ok"}`},
		{"key", `{"` + canary + `":1}`, `{"[hidden: pw]":1}`},
		{"escaped", mustJSON(map[string]string{"v": `x quo"ted\value-long y`}), `{"v":"x [hidden: q] y"}`},
		{"multi-line", mustJSON([]string{"a line one here\nline two here b"}), `["a [hidden: ml] b"]`},
		{"untouched", `{"a":[1,2,{"b":"c"}]}`, `{"a":[1,2,{"b":"c"}]}`},
		{"not json", `text ` + canary, `text [hidden: pw]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := r.ScrubJSON([]byte(tc.in))
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Fatalf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestSetForgetAndShared(t *testing.T) {
	r := New(nil)
	r.Set("a", []Value{{Value: canary, What: "a"}})
	r.Set("b", []Value{{Value: canary, What: "b"}})
	r.Forget("a")
	if got, _ := r.Scrub(canary, false); got == canary {
		t.Fatal("a value b still registers was forgotten with a")
	}
	r.Set("b", nil)
	if got, _ := r.Scrub(canary, false); got != canary {
		t.Fatalf("forgotten value still hidden: %q", got)
	}
	if s := r.Stats(); s.Forms != 0 || s.Bytes != 0 || s.Sources != 0 {
		t.Fatalf("stats after forgetting all: %+v", s)
	}
	r.Add("cred", Value{Value: canary, What: "token"})
	r.Add("cred", Value{Value: canary, What: "token"})
	r.Forget("cred")
	if got, _ := r.Scrub(canary, false); got != canary {
		t.Fatalf("a value added twice outlived its source: %q", got)
	}
}

func TestMaxBytes(t *testing.T) {
	r := New(&Options{MaxBytes: 200})
	for i := range 20 {
		r.Set(fmt.Sprint(i), []Value{{Value: fmt.Sprintf("value-number-%04d-xyz", i), What: "v"}})
	}
	s := r.Stats()
	if s.Bytes > 200 || s.Dropped == 0 {
		t.Fatalf("bound not kept: %+v", s)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestScrubJSONRedTeam: a short value after a JSON escape is a word; a
// value in a number, or one that matches JSON's own syntax, never leaves
// a document no JSON reads (the review's findings 1 and 2).
func TestScrubJSONRedTeam(t *testing.T) {
	r := New(nil)
	r.Set("s", []Value{{Value: "hunter2pw", What: "pw"}, {Value: "12345678", What: "num"}, {Value: ":true,", What: "syntax"}})
	for _, tc := range []struct{ name, in, want string }{
		{"after a line break", mustJSON([]string{"log\nhunter2pw\n"}), `["log\n[hidden: pw]\n"]`},
		{"after an escaped ampersand", mustJSON([]string{"a&hunter2pw"}), `["a\u0026[hidden: pw]"]`},
		{"in a number", `{"size":12345678,"n":1}`, `{"n":1,"size":"[hidden: num]"}`},
		{"JSON's own syntax", `{"ready":true,"restarts":0}`, `{"ready":true,"restarts":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := r.ScrubJSON([]byte(tc.in))
			if !json.Valid(got) {
				t.Fatalf("not JSON: %s", got)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Fatalf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestNoGuessingOracle (the review's finding 5): a dry run's result that
// echoes the script's own guesses hides none of them, so the right guess
// looks like every other; a value the script did not send stays hidden.
func TestNoGuessingOracle(t *testing.T) {
	r := New(nil)
	r.Set("s", []Value{{Value: canary, What: "pw"}})
	args := []byte(`{"data":{"a":"wrong-guess-123","b":"` + canary + `"}}`)
	got, _ := r.ScrubJSONKnown([]byte(`{"data":{"a":"wrong-guess-123","b":"`+canary+`"},"other":"`+canary+`x"}`), args)
	if want := `{"data":{"a":"wrong-guess-123","b":"` + canary + `"},"other":"` + canary + `x"}`; string(got) != want {
		t.Errorf("the guess was judged: %s", got)
	}
	got, _ = r.ScrubJSONKnown([]byte(`{"log":"`+canary+`"}`), []byte(`{"name":"web"}`))
	if string(got) != `{"log":"[hidden: pw]"}` {
		t.Errorf("a value the script did not send: %s", got)
	}
}

// TestHide: a call's own secret values are hidden in the boundary's forms,
// short ones as words.
func TestHide(t *testing.T) {
	vals := []Value{{Value: "hunter2-canary", What: "an argument"}, {Value: "pw-4", What: "an argument"}}
	for _, tc := range []struct{ in, want string }{
		{`bad value "hunter2-canary"`, `bad value "[hidden: an argument]"`},
		{"as base64 aHVudGVyMi1jYW5hcnk=", "as base64 [hidden: an argument (base64)]"},
		{"hex 68756e746572322d63616e617279", "hex [hidden: an argument (hex)]"},
		{"short pw-4 hidden, pw-42 is not", "short [hidden: an argument] hidden, pw-42 is not"},
		{"nothing here", "nothing here"},
	} {
		got, _ := Hide(tc.in, vals)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Hide(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestOtherEncodersEscapes: a value as Python's json.dumps (non-ASCII as
// \uXXXX) and PHP's json_encode (slashes as \/) write it is hidden too.
func TestOtherEncodersEscapes(t *testing.T) {
	r := New(nil)
	r.Set("test", []Value{{Value: "pässwörd/with+slash", What: "Secret t/s key pw"}})
	for _, in := range []string{
		`{"echo":"p\u00e4ssw\u00f6rd/with+slash"}`,
		`{"echo":"pässwörd\/with+slash"}`,
		`{"echo":"p\u00e4ssw\u00f6rd\/with+slash"}`,
	} {
		out, hid := r.ScrubJSON([]byte(in))
		if strings.Contains(string(out), "with+slash") || len(hid) == 0 {
			t.Errorf("%s → %s", in, out)
		}
	}
}

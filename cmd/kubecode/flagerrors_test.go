package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestFlagErrors: a mistyped flag gets the nearest flags of its command,
// and every flag error says where the command's flags are listed; the
// version says more than "dev".
func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--namespce", "x"}, "unknown flag: --namespce; did you mean --namespace? (run kubecode demo --help for its flags)"},
		{[]string{"plans", "--srever", "http://x"}, "unknown flag: --srever; did you mean --server? (run kubecode plans --help for its flags)"},
		{[]string{"serve", "--zzzzzzzz"}, "unknown flag: --zzzzzzzz (run kubecode serve --help for its flags)"},
		{[]string{"serve", "-Q"}, "unknown shorthand flag: 'Q' in -Q (run kubecode serve --help for its flags)"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRootCommand()
			root.SetArgs(tc.args)
			root.SetOut(&bytes.Buffer{})
			err := root.Execute()
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	if v := versionString(); v == "dev" || v == "" {
		t.Errorf("version %q", v)
	}
	var help bytes.Buffer
	root := newRootCommand()
	root.SetArgs([]string{"--help"})
	root.SetOut(&help)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(help.String(), "--tsgo kubecode demo") {
		t.Errorf("a flag's placeholder is taken from its usage's back-quoted text:\n%s", help.String())
	}
}

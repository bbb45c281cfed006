package tokencount

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"declare const tools: { kubernetes: { pods: { list(input?: { namespace?: string }): Promise<Pod[]> } } }", 28},
	} {
		if got := Count(tc.text); got != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

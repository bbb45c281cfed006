package catalog

import "strings"

// Unserved is something people ask a provider for that it does not serve
// as an operation: search and the type check say so plainly, with what to
// do instead, rather than offering unrelated operations.
type Unserved struct {
	// Name is the operation a script would call ("kubernetes.pods.exec").
	Name string
	// Words are what a question about it says ("exec", "shell",
	// "port-forward"): a query holding one of them (a word, or words in
	// a row) is about it.
	Words []string
	// Why says that it is not served and what to do instead.
	Why string
}

// Matches says whether query is about u: it holds one of u's words as
// words of its own.
func (u *Unserved) Matches(query string) bool {
	q := " " + strings.Join(Words(strings.ToLower(query)), " ") + " "
	for _, w := range u.Words {
		if strings.Contains(q, " "+strings.Join(Words(strings.ToLower(w)), " ")+" ") {
			return true
		}
	}
	return false
}

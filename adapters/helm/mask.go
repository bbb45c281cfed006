package helm

import (
	"errors"
	"path"
	"sort"
	"strings"

	"github.com/kubecode/kubecode/catalog"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
)

// Scrubbing text by pattern cannot win against a template language: a
// chart's NOTES or its fail message may print a secret value transformed
// (b32enc, printf "%x", its characters spaced or in chunks), which no
// pattern of the value finds. So the texts a chart writes for the agent —
// notes, helm.template's output, the messages of a render that fails — are
// rendered again from a copy of the values in which every secret value is
// a marker: the value never reaches the template that would transform it.
// The scrubbing of callSecrets stays as a second line.
//
// A value is secret when it sits under a secret-looking key, or when a
// rendered Secret of the call holds it (a password composed into a
// connection string under an innocent key): what callSecrets knows (for a
// failed render, what the release's earlier revisions and the call's
// other reads told).

// errMasked says a text could not be rendered without the chart's secret
// values.
var errMasked = errors.New("it cannot be rendered without values this answer may not show")

// secretLeaf says whether an input value (with whether a secret-looking
// key holds it) is one of the call's secrets: under a secret-looking key,
// or held by a Secret the call rendered or read.
func (s *callSecrets) secretLeaf(v string, secretKey bool) bool {
	if secretKey {
		return true
	}
	if s == nil || len(v) < minFlowing {
		return false
	}
	list, _ := s.values()
	for _, x := range list {
		if strings.Contains(x, v) {
			return true
		}
	}
	return false
}

// maskValues returns a copy of v in which every scalar secret says
// (given its text and whether a secret-looking key holds it) is the
// marker redacted.
func maskValues(v any, secretKey bool, secret func(string, bool) bool) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = maskValues(x, secretKey || catalog.SecretName.MatchString(k), secret)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = maskValues(x, secretKey, secret)
		}
		return out
	case nil, bool:
		return t
	case string:
		if t == "" {
			return t // nothing to hide, and a marker would turn a condition true
		}
	}
	masked := false
	leaves(v, secretKey, func(s string, key bool) { masked = secret(s, key) })
	if masked {
		return redacted
	}
	return v
}

// maskMap is maskValues of a map of values.
func maskMap(m map[string]any, secret func(string, bool) bool) map[string]any {
	if m == nil {
		return nil
	}
	return maskValues(m, false, secret).(map[string]any)
}

// maskChart returns a copy of ch whose default values, and its
// dependencies', are masked; templates and files are shared.
func maskChart(ch *chart.Chart, secret func(string, bool) bool) *chart.Chart {
	c := *ch
	c.Values = maskMap(ch.Values, secret)
	var deps []*chart.Chart
	for _, d := range ch.Dependencies() {
		deps = append(deps, maskChart(d, secret))
	}
	c.SetDependencies(deps...)
	return &c
}

// maskedRender renders ch with config as release opts, from masked values,
// without the cluster (lookup finds nothing): the rendered files by name.
func maskedRender(ch *chart.Chart, config map[string]any, opts chartutil.ReleaseOptions, secret func(string, bool) bool) (map[string]string, error) {
	mc := maskChart(ch, secret)
	vals, err := chartutil.ToRenderValues(mc, maskMap(config, secret), opts, nil)
	if err != nil {
		return nil, err
	}
	return engine.Render(mc, vals)
}

// maskedNotes renders the notes of ch (its own NOTES.txt, as Helm shows
// them) with config, for release opts, from masked values. A chart that
// cannot render so gets a sentence saying its notes are withheld.
func maskedNotes(ch *chart.Chart, config map[string]any, opts chartutil.ReleaseOptions, secret func(string, bool) bool) string {
	files, err := maskedRender(ch, config, opts, secret)
	return notesIn(ch, files, err)
}

// notesIn are ch's notes among the files of its masked render (err: the
// render's failure).
func notesIn(ch *chart.Chart, files map[string]string, err error) string {
	if err != nil {
		return "(the chart's notes are withheld: " + errMasked.Error() + ")"
	}
	return strings.TrimSpace(files[path.Join(ch.Name(), "templates", "NOTES.txt")])
}

// notesOf are the notes of release rel as the agent may read them: its
// chart's notes rendered again from its values with the secrets masked
// (a release kubecode installed from a pinned render keeps the notes it
// previewed, already masked), then scrubbed.
func notesOf(s *callSecrets, rel *release.Release) string {
	if rel == nil || rel.Info == nil || rel.Info.Notes == "" {
		return ""
	}
	if rel.Chart == nil || rel.Chart.Metadata == nil {
		return s.text(rel.Info.Notes)
	}
	return s.text(maskedNotes(rel.Chart, rel.Config, releaseOptions(rel), s.secretLeaf))
}

// releaseOptions are the render options of release rel.
func releaseOptions(rel *release.Release) chartutil.ReleaseOptions {
	return chartutil.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, Revision: rel.Version,
		IsInstall: rel.Version <= 1, IsUpgrade: rel.Version > 1}
}

// maskedError is the message of a render of ch with config that failed
// with err, as the agent may read it: the same render from values whose
// secrets are markers fails with the chart's own message, holding them
// no more; a render that then succeeds failed because of a secret value,
// and its message is not shown.
func maskedError(ch *chart.Chart, config map[string]any, opts chartutil.ReleaseOptions, secret func(string, bool) bool, err error) error {
	if !renderError(err) {
		return err
	}
	if _, merr := maskedRender(ch, config, opts, secret); merr != nil {
		return errors.New(merr.Error())
	}
	return errors.New("the chart's templates failed on the values given (the message is withheld: it depends on values this answer may not show)")
}

// renderError says whether err comes from rendering a chart's templates
// (a fail, a required value, a template error), whose message the chart
// writes.
func renderError(err error) bool {
	if err == nil {
		return false
	}
	m := err.Error()
	return strings.Contains(m, "execution error at (") || strings.Contains(m, "template: ") || strings.Contains(m, "parse error")
}

// derivedScrub returns what removes from a text the words that exist only
// because of a secret value: the words of ch's render with config that
// its render from masked values lacks (a name made of a password's
// base32, an error quoting it), each replaced by the marker. It answers
// for the texts no masked render makes (the objects' names and summaries
// in plan lines, errors from the API server or from Helm's own checks).
// When either render fails it removes nothing more: the call's scrubbing
// still applies.
func derivedScrub(ch *chart.Chart, config map[string]any, opts chartutil.ReleaseOptions, masked map[string]string, maskErr error) func(string) string {
	none := func(s string) string { return s }
	if ch == nil || maskErr != nil {
		return none
	}
	vals, err := chartutil.ToRenderValues(ch, config, opts, nil)
	if err != nil {
		return none
	}
	real, err := engine.Render(ch, vals)
	if err != nil {
		return none
	}
	have := map[string]bool{}
	for _, text := range masked {
		for _, w := range words(text) {
			have[w] = true
		}
	}
	derived := map[string]bool{}
	for _, text := range real {
		for _, w := range words(text) {
			if !have[w] {
				derived[w] = true
			}
		}
	}
	if len(derived) == 0 {
		return none
	}
	list := make([]string, 0, len(derived))
	for w := range derived {
		list = append(list, w)
	}
	// Longest first, so a word that holds another is replaced whole.
	sort.Slice(list, func(i, j int) bool {
		return len(list[i]) > len(list[j]) || len(list[i]) == len(list[j]) && list[i] < list[j]
	})
	return func(s string) string {
		for _, w := range list {
			if strings.Contains(s, w) {
				s = strings.ReplaceAll(s, w, redacted)
			}
		}
		return s
	}
}

// words splits text into runs of letters, digits and the characters of
// encodings (+ / = _ -) of at least minSecret characters.
func words(text string) []string {
	f := strings.FieldsFunc(text, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '/' || r == '=' || r == '_' || r == '-')
	})
	out := f[:0]
	for _, w := range f {
		if len(w) >= minSecret {
			out = append(out, w)
		}
	}
	return out
}

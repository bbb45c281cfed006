package helm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubecode/kubecode/adapters/helm"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/repo"
)

// TestRepositoryCharts serves the web-app chart from a real chart
// repository over HTTP (an index and a packaged chart, as helm repo
// index writes them), adds it as helm repo add would, and renders it by
// "repo/name" and by URL: allowed when the repository or URL prefix is a
// chart source, refused otherwise.
func TestRepositoryCharts(t *testing.T) {
	dir := t.TempDir()
	served := filepath.Join(dir, "served")
	ch, err := loader.Load(filepath.Join(exampleCharts, "web-app"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(served, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := chartutil.Save(ch, served); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(served)))
	defer srv.Close()
	index, err := repo.IndexDirectory(served, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := index.WriteFile(filepath.Join(served, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}

	settings := cli.New()
	settings.RepositoryConfig = filepath.Join(dir, "repositories.yaml")
	settings.RepositoryCache = filepath.Join(dir, "cache")
	entry := &repo.Entry{Name: "local", URL: srv.URL}
	r, err := repo.NewChartRepository(entry, getter.All(settings))
	if err != nil {
		t.Fatal(err)
	}
	r.CachePath = settings.RepositoryCache
	if _, err := r.DownloadIndexFile(); err != nil {
		t.Fatal(err)
	}
	f := repo.NewFile()
	f.Add(entry)
	if err := f.WriteFile(settings.RepositoryConfig, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		sources []string
		chart   string
		refused bool
	}{
		{"repository allowed", []string{"local"}, "local/web-app", false},
		{"repository not allowed", []string{"other"}, "local/web-app", true},
		{"URL prefix allowed", []string{srv.URL + "/"}, srv.URL + "/web-app-0.1.0.tgz", false},
		{"URL not under the prefix", []string{srv.URL + "/charts/"}, srv.URL + "/web-app-0.1.0.tgz", true},
		{"URL climbing out of the prefix", []string{srv.URL + "/charts/"}, srv.URL + "/charts/../web-app-0.1.0.tgz", true},
		{"URL climbing out, encoded", []string{srv.URL + "/charts/"}, srv.URL + "/charts/%2e%2e/web-app-0.1.0.tgz", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := helm.New(cp.Admin, &helm.Options{ChartSources: tc.sources, Settings: settings})
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(map[string]any{"chart": tc.chart, "release": "web"})
			out, err := a.Call(context.Background(), "helm.template", raw)
			switch {
			case tc.refused && (err == nil || !strings.Contains(err.Error(), "is not from an allowed chart source")):
				t.Errorf("not refused: %v", err)
			case !tc.refused && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.refused:
				var got helm.Rendered
				if err := json.Unmarshal(out, &got); err != nil || len(got.Objects) != 4 {
					t.Errorf("rendered %d objects (%v)", len(got.Objects), err)
				}
			}
		})
	}
}

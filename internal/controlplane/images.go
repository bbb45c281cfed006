package controlplane

import (
	_ "embed" // the simulated registry
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

//go:embed images.yaml
var publicImages []byte

// Images is the simulated registry of the simulated nodes: the images they
// can pull and what each does when it runs. Its zero value knows no image;
// the control plane's starts with the public images of images.yaml.
type Images struct {
	mu    sync.RWMutex
	bases map[string][]string
	repos map[string][]*Image // by repository; a later entry's tags win
}

// Image is one repository of the simulated registry. The YAML fields are
// described at the top of images.yaml.
type Image struct {
	Repository string              `json:"repository"`
	Tags       []string            `json:"tags"`
	Base       string              `json:"base"`
	Commands   []string            `json:"commands,omitempty"`
	Entrypoint []string            `json:"entrypoint,omitempty"`
	Cmd        []string            `json:"cmd,omitempty"`
	Programs   map[string]Program  `json:"programs,omitempty"`
	Memory     resource.Quantity   `json:"memory"`
	RequireEnv *EnvRequirement     `json:"requireEnv,omitempty"`
	Files      map[string]string   `json:"files,omitempty"`
	tags       map[string]struct{} // expanded Tags
	commands   map[string]struct{} // base, Commands and Programs
}

// Program is what a binary of an image does when it runs: with Exit nil it
// serves on Listens until stopped, otherwise it ends with *Exit after
// After. Logs are the lines it prints; PortFlag (such as --port) moves its
// port.
type Program struct {
	Listens  []int32  `json:"listens,omitempty"`
	Exit     *int     `json:"exit,omitempty"`
	After    Duration `json:"after,omitempty"`
	Logs     []string `json:"logs,omitempty"`
	PortFlag string   `json:"portFlag,omitempty"`
	// Serves are the HTTP paths it answers 200 with Body (every path when
	// empty); any other path is a 404. Body defaults to its first log
	// line.
	Serves []string `json:"serves,omitempty"`
	Body   string   `json:"body,omitempty"`
	// locations are what a configuration mounted into the container
	// makes it return (nginx's location … return), before Serves.
	locations []location
	// accessLog marks a server that logs each request to its output, as
	// nginx's official image does (access.log is its stdout); served is
	// where a request reaching it is logged (clusterNet.listening).
	accessLog bool
	served    func(line string)
}

// answer is the program's HTTP answer to GET path.
func (p Program) answer(path string) (int, string) {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if path == "" {
		path = "/"
	}
	if l := returnFor(p.locations, path); l != nil {
		return l.code, l.body
	}
	if len(p.Serves) > 0 && !slices.Contains(p.Serves, path) {
		return 404, "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n</body>\r\n</html>\r\n"
	}
	switch {
	case p.Body != "":
		return 200, p.Body
	case len(p.Logs) > 0:
		return 200, p.Logs[0] + "\n"
	}
	return 200, "OK\n"
}

// EnvRequirement makes an image's main program exit 1 with Message unless
// one of AnyOf is set, as postgres and mysql do.
type EnvRequirement struct {
	AnyOf   []string `json:"anyOf"`
	Message string   `json:"message"`
}

// Duration is a time.Duration written as "2s" in YAML.
type Duration struct{ time.Duration }

// UnmarshalJSON reads "2s", "1m30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("duration %s: want a string such as \"2s\"", b)
	}
	d.Duration, err = time.ParseDuration(s)
	return err
}

// imageFile is the YAML of images.yaml and of scenarios' own indexes.
type imageFile struct {
	Bases  map[string][]string `json:"bases"`
	Images []Image             `json:"images"`
}

// NewImages returns a registry with the public images of images.yaml.
func NewImages() *Images {
	im := &Images{}
	if err := im.Add(publicImages); err != nil {
		panic(fmt.Sprintf("images.yaml: %v", err)) // embedded: caught by tests
	}
	return im
}

// Add adds the images of one YAML index (the format of images.yaml; its
// bases may be omitted to use the registry's). A repository may come more
// than once, with different tags that behave differently; for a tag in
// more than one entry, the last added wins.
func (im *Images) Add(index []byte) error {
	var f imageFile
	if err := yaml.UnmarshalStrict(index, &f); err != nil {
		return fmt.Errorf("image index: %w", err)
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.bases == nil {
		im.bases, im.repos = map[string][]string{}, map[string][]*Image{}
	}
	for name, cmds := range f.Bases {
		im.bases[name] = cmds
	}
	for i := range f.Images {
		img := f.Images[i]
		named, err := reference.ParseNormalizedNamed(img.Repository)
		if err != nil || named.Name() != img.Repository {
			return fmt.Errorf("image index: repository %q is not a normalized name (%v)", img.Repository, err)
		}
		base, ok := im.bases[img.Base]
		if !ok {
			return fmt.Errorf("image index: %s: unknown base %q", img.Repository, img.Base)
		}
		img.tags = map[string]struct{}{}
		for _, t := range img.Tags {
			for _, e := range expandTag(t) {
				img.tags[e] = struct{}{}
			}
		}
		img.commands = commandsOf(base, &img)
		im.repos[img.Repository] = append(im.repos[img.Repository], &img)
		// An official image's -alpine tags are built on Alpine: its
		// busybox tools (wget, nc, ...) and no bash, whatever the other
		// tags' base.
		if alpine, ok := im.bases["alpine"]; ok && img.Base != "alpine" {
			variant := img
			variant.Base, variant.tags = "alpine", map[string]struct{}{}
			for t := range img.tags {
				if strings.Contains(t, "alpine") {
					variant.tags[t] = struct{}{}
				}
			}
			if len(variant.tags) > 0 {
				variant.commands = commandsOf(alpine, &variant)
				im.repos[img.Repository] = append(im.repos[img.Repository], &variant)
			}
		}
	}
	return nil
}

// commandsOf are the binaries img ships on base: the base's, its own
// commands and its programs.
func commandsOf(base []string, img *Image) map[string]struct{} {
	out := map[string]struct{}{}
	for _, c := range slices.Concat(base, img.Commands) {
		out[c] = struct{}{}
	}
	for c := range img.Programs {
		out[c] = struct{}{}
	}
	return out
}

// Lookup finds an image reference as a container's image field writes it
// ("nginx", "nginx:1.27", "docker.io/library/nginx@sha256:…"). A
// reference by digest is found when its repository is known. It returns
// the normalized reference either way, and nil when it cannot be pulled.
func (im *Images) Lookup(ref string) (*Image, string) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return nil, ref
	}
	named = reference.TagNameOnly(named)
	im.mu.RLock()
	entries := im.repos[named.Name()]
	im.mu.RUnlock()
	if len(entries) == 0 {
		return nil, named.String()
	}
	if _, ok := named.(reference.Digested); ok {
		return entries[len(entries)-1], named.String()
	}
	if t, ok := named.(reference.Tagged); ok {
		for i := len(entries) - 1; i >= 0; i-- {
			if _, ok := entries[i].tags[t.Tag()]; ok {
				return entries[i], named.String()
			}
		}
	}
	return nil, named.String()
}

// has reports whether the image ships the binary name (a path's base name).
func (img *Image) has(name string) bool {
	_, ok := img.commands[baseName(name)]
	return ok
}

// program returns what the binary name does, if the index knows.
func (img *Image) program(name string) (Program, bool) {
	p, ok := img.Programs[baseName(name)]
	return p, ok
}

func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

var (
	rangeRE = regexp.MustCompile(`\{(\d+)\.\.(\d+)\}`)
	altRE   = regexp.MustCompile(`\{([^{}]*,[^{}]*)\}`)
)

// expandTag expands "1.27.{0..5}" and "1.{25,26}-alpine" (the first brace
// first, recursively).
func expandTag(t string) []string {
	if m := rangeRE.FindStringSubmatchIndex(t); m != nil && (altRE.FindStringIndex(t) == nil || m[0] < altRE.FindStringIndex(t)[0]) {
		lo, _ := strconv.Atoi(t[m[2]:m[3]])
		hi, _ := strconv.Atoi(t[m[4]:m[5]])
		var out []string
		for i := lo; i <= hi; i++ {
			out = append(out, expandTag(t[:m[0]]+strconv.Itoa(i)+t[m[1]:])...)
		}
		return out
	}
	if m := altRE.FindStringSubmatchIndex(t); m != nil {
		var out []string
		for _, alt := range strings.Split(t[m[2]:m[3]], ",") {
			out = append(out, expandTag(t[:m[0]]+alt+t[m[1]:])...)
		}
		return out
	}
	return []string{t}
}

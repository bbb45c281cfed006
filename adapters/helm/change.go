package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubecode/kubecode/catalog"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// changeArgs are the arguments of the operations that change releases.
type changeArgs struct {
	Release         string         `json:"release"`
	Namespace       string         `json:"namespace"`
	Chart           string         `json:"chart"`
	Version         string         `json:"version"`
	Values          map[string]any `json:"values"`
	CreateNamespace bool           `json:"createNamespace"`
	ReuseValues     bool           `json:"reuseValues"`
	ResetValues     bool           `json:"resetValues"`
	Revision        int            `json:"revision"` // rollback: the revision to return to; 0 means the previous one
	KeepHistory     bool           `json:"keepHistory"`
	Wait            *bool          `json:"wait"`
	TimeoutSeconds  int            `json:"timeoutSeconds"`
}

// ChangeResult is what a changing operation did, or would do in a dry run.
type ChangeResult struct {
	Release Release `json:"release"`
	DryRun  bool    `json:"dryRun"`
	// Changes are the objects created, updated (with the fields) and
	// deleted: "update Deployment/web: spec.replicas".
	Changes []string `json:"changes"`
	Notes   string   `json:"notes,omitempty"`
}

func (a *Adapter) decodeChange(verb string, raw json.RawMessage) (changeArgs, error) {
	var c changeArgs
	if err := decode(raw, &c); err != nil {
		return c, err
	}
	if c.Release == "" {
		return c, badRequest(fmt.Sprintf(`name the release: tools.helm.%s({release: "web", ...})`, verb))
	}
	if c.Namespace == "" {
		c.Namespace = a.ns
	}
	if c.TimeoutSeconds < 0 {
		return c, badRequest("timeoutSeconds must be positive")
	}
	if c.Revision < 0 {
		return c, badRequest(fmt.Sprintf("revision %d: revisions count from 1", c.Revision))
	}
	if c.ReuseValues && c.ResetValues {
		return c, badRequest("reuseValues and resetValues exclude each other: reuse the last values, or reset to the chart's")
	}
	return c, nil
}

func (c changeArgs) wait() bool { return c.Wait == nil || *c.Wait }

func (a *Adapter) waitFor(c changeArgs) time.Duration {
	if c.TimeoutSeconds > 0 {
		return time.Duration(c.TimeoutSeconds) * time.Second
	}
	return a.timeout
}

// preview runs a changing operation as a dry run.
func (a *Adapter) preview(ctx context.Context, name string, raw json.RawMessage) (*catalog.Change, any, error) {
	return a.run(ctx, name, raw, true)
}

// change runs a changing operation.
func (a *Adapter) change(ctx context.Context, name string, raw json.RawMessage, dry bool) (any, error) {
	_, out, err := a.run(ctx, name, raw, dry)
	return out, err
}

// run performs (or, dry, previews) install, upgrade, rollback or
// uninstall, and accounts for what it changes.
func (a *Adapter) run(ctx context.Context, name string, raw json.RawMessage, dry bool) (*catalog.Change, any, error) {
	verb := strings.TrimPrefix(name, "helm.")
	args, err := a.decodeChange(verb, raw)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := a.config(ctx, args.Namespace)
	if err != nil {
		return nil, nil, err
	}
	ref := releaseArgs{Release: args.Release, Namespace: args.Namespace}
	current, err := cfg.Releases.Last(args.Release)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil, err
	}
	if err != nil {
		current = nil
	}
	if current != nil && current.Info != nil && current.Info.Status == release.StatusUninstalled {
		current = nil // kept history: a new install may reuse the name
	}
	change := &catalog.Change{Action: verb, Kind: "HelmRelease", Namespace: args.Namespace, Name: args.Release, Existed: current != nil}
	var before, after *release.Release
	switch verb {
	case "install":
		if current != nil {
			return change, nil, &apiError{status: 409, reason: "AlreadyExists",
				msg: fmt.Sprintf("release %q already exists in namespace %q (revision %d): use tools.helm.upgrade to change it", args.Release, args.Namespace, current.Version)}
		}
		ch, err := a.loadChart(args.Chart, args.Version)
		if err != nil {
			return change, nil, err
		}
		inst := action.NewInstall(cfg)
		inst.ReleaseName, inst.Namespace, inst.CreateNamespace = args.Release, args.Namespace, args.CreateNamespace
		inst.Wait, inst.Timeout = args.wait(), a.waitFor(args)
		if dry {
			inst.DryRunOption = "server"
		}
		after, err = inst.RunWithContext(ctx, ch, args.Values)
		if err != nil && dry && len(ch.CRDObjects()) > 0 && meta.IsNoMatchError(err) {
			// The chart's own types are not installed yet, and a dry run
			// installs none: render without the cluster instead.
			inst = action.NewInstall(new(action.Configuration))
			inst.ReleaseName, inst.Namespace = args.Release, args.Namespace
			inst.DryRun, inst.ClientOnly = true, true
			after, err = inst.RunWithContext(ctx, ch, args.Values)
		}
		if err != nil {
			return change, nil, scrubError(fmt.Errorf("install %s: %w", args.Release, err), after)
		}
		for _, crd := range ch.CRDObjects() {
			objs, _ := parseManifest(string(crd.File.Data))
			for _, o := range objs {
				change.Objects = append(change.Objects, a.objectChange("create", o, "", false))
			}
		}
	case "upgrade":
		if current == nil {
			return change, nil, notFound(ref, driver.ErrReleaseNotFound)
		}
		ch, err := a.loadChart(args.Chart, args.Version)
		if err != nil {
			return change, nil, err
		}
		up := action.NewUpgrade(cfg)
		up.Namespace, up.ReuseValues, up.ResetValues = args.Namespace, args.ReuseValues, args.ResetValues
		up.Wait, up.Timeout = args.wait(), a.waitFor(args)
		if dry {
			up.DryRunOption = "server"
		}
		before = current
		after, err = up.RunWithContext(ctx, args.Release, ch, args.Values)
		if err != nil {
			return change, nil, scrubError(fmt.Errorf("upgrade %s: %w", args.Release, err), after)
		}
	case "rollback":
		if current == nil {
			return change, nil, notFound(ref, driver.ErrReleaseNotFound)
		}
		target := args.Revision
		if target == 0 {
			target = current.Version - 1
		}
		if target < 1 {
			return change, nil, badRequest(fmt.Sprintf("release %q has only revision %d: there is nothing to roll back to", args.Release, current.Version))
		}
		if target == current.Version {
			return change, nil, badRequest(fmt.Sprintf("revision %d is the current revision of %q: name an earlier one (tools.helm.history lists them)", target, args.Release))
		}
		ref.Revision = target
		if after, err = cfg.Releases.Get(args.Release, target); err != nil {
			return change, nil, notFound(ref, err)
		}
		before = current
		change.Fingerprint = fmt.Sprint(target)
		if !dry {
			rb := action.NewRollback(cfg)
			rb.Version, rb.Wait, rb.Timeout = target, args.wait(), a.waitFor(args)
			if err := rb.Run(args.Release); err != nil {
				return change, nil, fmt.Errorf("rollback %s to revision %d: %w", args.Release, target, err)
			}
			if after, err = cfg.Releases.Last(args.Release); err != nil {
				return change, nil, err
			}
		}
	case "uninstall":
		if current == nil {
			return change, nil, notFound(ref, driver.ErrReleaseNotFound)
		}
		before = current
		change.Fingerprint = fmt.Sprint(current.Version)
		after = &release.Release{Name: current.Name, Namespace: current.Namespace, Version: current.Version, Chart: current.Chart,
			Info: &release.Info{Status: release.StatusUninstalled, LastDeployed: current.Info.LastDeployed}}
		if !dry {
			un := action.NewUninstall(cfg)
			un.KeepHistory, un.Wait, un.Timeout = args.KeepHistory, args.wait(), a.waitFor(args)
			resp, err := un.Run(args.Release)
			if err != nil {
				return change, nil, fmt.Errorf("uninstall %s: %w", args.Release, err)
			}
			if resp != nil && resp.Release != nil {
				after.Info = resp.Release.Info
			}
		}
	default:
		return nil, nil, fmt.Errorf("unknown operation %s", name)
	}
	lines, err := a.account(change, before, after)
	if err != nil {
		return change, nil, err
	}
	change.Diff = append([]string{headline(verb, before, after)}, change.Diff...)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", change.Fingerprint)
	if after != nil {
		h.Write([]byte(after.Manifest))
		for _, hk := range after.Hooks {
			h.Write([]byte(hk.Manifest))
		}
	}
	if before != nil {
		fmt.Fprintf(h, "\x00%d\x00%s", before.Version, before.Manifest)
	}
	change.Fingerprint = hex.EncodeToString(h.Sum(nil))[:16]
	out := ChangeResult{Release: summary(after), DryRun: dry, Changes: lines}
	if verb == "rollback" && dry {
		out.Release.Revision = current.Version + 1
		out.Release.Description = fmt.Sprintf("Rollback to %d", after.Version)
	}
	if after.Info != nil && verb != "uninstall" {
		objs, _ := parseManifest(after.Manifest)
		out.Notes = scrubText(after.Info.Notes, secretValues(objs))
	}
	return change, out, nil
}

// scrubError removes from err's message every value the Secrets of rel's
// (possibly partial) manifest hold: Helm's errors may quote what it
// rendered.
func scrubError(err error, rel *release.Release) error {
	if rel == nil {
		return err
	}
	objs, _ := parseManifest(rel.Manifest)
	msg := scrubText(err.Error(), secretValues(objs))
	if msg == err.Error() {
		return err
	}
	return &scrubbed{msg: msg, err: err}
}

// scrubbed is an error whose message lost secret values; its cause keeps
// its status for the bridge.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// headline is the first line of a release change's diff.
func headline(verb string, before, after *release.Release) string {
	chartOf := func(r *release.Release) string {
		if r == nil || r.Chart == nil || r.Chart.Metadata == nil {
			return "?"
		}
		return r.Chart.Metadata.Name + " " + r.Chart.Metadata.Version
	}
	switch verb {
	case "install":
		return fmt.Sprintf("install %s as release %s/%s", chartOf(after), after.Namespace, after.Name)
	case "upgrade":
		return fmt.Sprintf("upgrade release %s/%s from %s (revision %d) to %s", before.Namespace, before.Name, chartOf(before), before.Version, chartOf(after))
	case "rollback":
		return fmt.Sprintf("roll back release %s/%s from revision %d to revision %d (%s)", before.Namespace, before.Name, before.Version, after.Version, chartOf(after))
	}
	return fmt.Sprintf("uninstall release %s/%s (revision %d, %s)", before.Namespace, before.Name, before.Version, chartOf(before))
}

// account fills change.Objects and change.Diff with what going from
// before's manifest to after's does to each object, and returns the same
// as short lines for the result. before is nil for an install; for an
// uninstall after has no manifest.
func (a *Adapter) account(change *catalog.Change, before, after *release.Release) ([]string, error) {
	var old, now []*unstructured.Unstructured
	var err error
	if before != nil {
		if old, err = parseManifest(before.Manifest); err != nil {
			return nil, err
		}
	}
	if after != nil {
		if now, err = parseManifest(after.Manifest); err != nil {
			return nil, err
		}
		for _, h := range after.Hooks {
			hobjs, err := parseManifest(h.Manifest)
			if err != nil {
				return nil, err
			}
			for _, o := range hobjs {
				change.Objects = append(change.Objects, a.objectChange("create", o, change.Namespace, false))
				change.Diff = append(change.Diff, "+ hook "+objectKey(o))
			}
		}
	}
	id := func(o *unstructured.Unstructured) string {
		return o.GroupVersionKind().Group + "/" + o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	was := map[string]*unstructured.Unstructured{}
	for _, o := range old {
		was[id(o)] = o
	}
	var lines []string
	seen := map[string]bool{}
	for _, o := range now {
		k := id(o)
		seen[k] = true
		prev, ok := was[k]
		if !ok {
			c := a.objectChange("create", o, change.Namespace, false)
			change.Objects = append(change.Objects, c)
			change.Diff = append(change.Diff, "+ "+c.Object())
			lines = append(lines, "create "+objectKey(o))
			continue
		}
		ds := diffValues(nil, "", nil, nil, trimObject(prev.Object), trimObject(o.Object), true, true)
		if len(ds) == 0 {
			continue
		}
		c := a.objectChange("update", o, change.Namespace, true)
		var shown []string
		for _, d := range ds {
			c.Paths = append(c.Paths, d.path)
			if c.Sensitive || catalog.SecretName.MatchString(d.path) {
				shown = append(shown, d.path+" (value hidden)")
			} else {
				shown = append(shown, d.path+": "+short(d.want, d.hasWant)+" → "+short(d.got, d.hasGot))
			}
		}
		change.Objects = append(change.Objects, c)
		change.Diff = append(change.Diff, "~ "+c.Object()+": "+strings.Join(shown, "; "))
		lines = append(lines, "update "+objectKey(o)+": "+strings.Join(c.Paths, ", "))
	}
	for _, o := range old {
		if seen[id(o)] || o.GetAnnotations()["helm.sh/resource-policy"] == "keep" {
			continue
		}
		c := a.objectChange("delete", o, change.Namespace, true)
		change.Objects = append(change.Objects, c)
		change.Diff = append(change.Diff, "- "+c.Object())
		lines = append(lines, "delete "+objectKey(o))
	}
	if lines == nil {
		lines = []string{}
	}
	return lines, nil
}

// short shows a value in a diff line.
func short(v any, present bool) string {
	if !present {
		return "(none)"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// objectChange describes what a release does to one object for the
// bridge's rules, as the Kubernetes adapter describes its own changes.
func (a *Adapter) objectChange(action string, o *unstructured.Unstructured, releaseNS string, existed bool) catalog.Change {
	gvk := o.GroupVersionKind()
	c := catalog.Change{Action: action, Kind: gvk.Kind, Name: o.GetName(), Existed: existed, Namespace: o.GetNamespace()}
	if c.Namespace == "" && a.namespaced(gvk) {
		c.Namespace = releaseNS
	}
	group := gvk.Group
	c.Sensitive = group == "" && gvk.Kind == "Secret"
	c.Privileged = group == "rbac.authorization.k8s.io" || group == "admissionregistration.k8s.io" || group == "apiregistration.k8s.io"
	switch {
	case group == "" && (gvk.Kind == "Namespace" || gvk.Kind == "PersistentVolume" || gvk.Kind == "PersistentVolumeClaim"),
		group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition",
		group == "rbac.authorization.k8s.io" && (gvk.Kind == "ClusterRole" || gvk.Kind == "ClusterRoleBinding"):
		c.Protected = true
	}
	return c
}

// namespaced says whether objects of the kind live in namespaces; kinds
// the cluster does not know yet (a chart's own types) are taken to.
func (a *Adapter) namespaced(gvk schema.GroupVersionKind) bool {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return true
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace
}

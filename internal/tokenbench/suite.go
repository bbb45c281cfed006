package tokenbench

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/internal/scenario"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Case is a scenario with the answer it must get.
type Case struct {
	Scenario *Scenario
	Want     any // a map; answers are decoded into its type and compared
}

// Suite returns the scenarios for the demo scenario seeded in the cluster
// of cfg, with answers from truth (and, for facts the truth does not hold,
// from the API read with client-go).
func Suite(ctx context.Context, cfg *rest.Config, truth *scenario.Truth) ([]Case, error) {
	health := map[string]string{}
	for _, c := range truth.CrashLooping {
		if c.Namespace == "payments" {
			health[c.Namespace+"/"+c.Pod] = c.LastLogLine
		}
	}
	restarts := map[string]int{}
	for _, p := range truth.Restarted {
		restarts[p.Namespace+"/"+p.Name] = int(p.Restarts)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	deployments := map[string]DeploymentFacts{}
	for _, n := range []string{"checkout", "recommendation"} {
		d, err := cs.AppsV1().Deployments("shop").Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		f := DeploymentFacts{ReadyReplicas: int(d.Status.ReadyReplicas)}
		for _, c := range d.Spec.Template.Spec.Containers {
			f.Images = append(f.Images, c.Image)
		}
		deployments["shop/"+n] = f
	}
	unserved := []string{}
	for _, s := range truth.ServicesWithoutEndpoints {
		if s.Namespace == "payments" {
			unserved = append(unserved, s.Namespace+"/"+s.Name)
		}
	}
	// Facts the truth does not hold come from the API, read with client-go.
	events, err := cs.CoreV1().Events("shop").List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	warnings := []string{}
	for _, e := range events.Items {
		k := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name + ": " + e.Reason
		if !seen[k] {
			seen[k] = true
			warnings = append(warnings, k)
		}
	}
	sort.Strings(warnings)
	all, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	secrets, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	exists := map[string]bool{}
	for _, s := range secrets.Items {
		exists[s.Namespace+"/"+s.Name] = true
	}
	unlimited, unprobed := []string{}, []string{}
	refs := map[string][]string{}
	for _, d := range all.Items {
		key := d.Namespace + "/" + d.Name
		noLimit, noProbe := false, false
		var dr []string
		for _, c := range d.Spec.Template.Spec.Containers {
			noLimit = noLimit || c.Resources.Limits.Memory().IsZero()
			noProbe = noProbe || c.ReadinessProbe == nil
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					dr = append(dr, e.ValueFrom.SecretKeyRef.Name)
				}
			}
			for _, f := range c.EnvFrom {
				if f.SecretRef != nil {
					dr = append(dr, f.SecretRef.Name)
				}
			}
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				dr = append(dr, v.Secret.SecretName)
			}
		}
		if noLimit {
			unlimited = append(unlimited, key)
		}
		if noProbe {
			unprobed = append(unprobed, key)
		}
		for i, r := range dr {
			if !exists[d.Namespace+"/"+r] {
				dr[i] = r + " (missing)"
			}
		}
		if len(dr) > 0 {
			sort.Strings(dr)
			refs[key] = dr
		}
	}
	sort.Strings(unlimited)
	sort.Strings(unprobed)
	images := []string{}
	for _, d := range all.Items {
		for _, c := range d.Spec.Template.Spec.Containers {
			if unpinned(c.Image) {
				images = append(images, d.Namespace+"/"+d.Name+": "+c.Image)
			}
		}
	}
	sort.Strings(images)
	ingresses, err := cs.NetworkingV1().Ingresses("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	wildcards := map[string][]string{}
	for _, i := range ingresses.Items {
		for _, r := range i.Spec.Rules {
			if strings.HasPrefix(r.Host, "*") {
				wildcards[i.Namespace+"/"+i.Name] = append(wildcards[i.Namespace+"/"+i.Name], r.Host)
			}
		}
	}
	pods, err := cs.CoreV1().Pods("live").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	privileged := []string{}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
				privileged = append(privileged, p.Namespace+"/"+p.Name)
				break
			}
		}
	}
	sort.Strings(privileged)
	health1, secrets1 := HealthScan("payments"), SecretReferences()
	return []Case{
		{health1, health},
		{RestartSummary(), restarts},
		{RestartSummaryUpstream(), restarts},
		{TwoDeployments("shop", "checkout", "recommendation"), deployments},
		{ServicesWithoutReadyEndpoints("payments"), unserved},
		{WarningEvents("shop"), warnings},
		{NoMemoryLimits(), unlimited},
		{NoReadinessProbes(), unprobed},
		{secrets1, refs},
		{UnpinnedImages(), images},
		{WildcardIngressHosts(), wildcards},
		{PrivilegedPods("live"), privileged},
		// The two first questions an agent is likeliest to search for,
		// after the ten a session asks.
		{SearchingFirst(health1), health},
		{SearchingFirst(secrets1), refs},
	}, nil
}

// Check runs c on side and compares the answer with c.Want.
func (c Case) Check(ctx context.Context, side *Side, kind string) (*Run, time.Duration, error) {
	start := time.Now()
	run, err := c.Scenario.Run(ctx, side, kind)
	took := time.Since(start)
	if err != nil {
		return run, took, err
	}
	got := reflect.New(reflect.TypeOf(c.Want))
	if err := json.Unmarshal([]byte(run.Answer), got.Interface()); err != nil {
		return run, took, fmt.Errorf("%s on %s: answer %.200s: %w", c.Scenario.Name, side.Name, run.Answer, err)
	}
	if d := cmp.Diff(c.Want, got.Elem().Interface()); d != "" {
		return run, took, fmt.Errorf("%s on %s: wrong answer (-truth +answer):\n%s", c.Scenario.Name, side.Name, d)
	}
	return run, took, nil
}

// Result is one checked run.
type Result struct {
	Scale string // e.g. "demo (209 pods)"
	Pods  int
	Kind  string
	Run   *Run
	Took  time.Duration
}

// Markdown writes results as a table: per scenario and scale, each side's
// tokens as clients bill them, (a) the question asked first, definitions
// sent (cumulative input), (b) the question asked later, definitions
// cached (its calls and results), and code mode against the peer on both.
func Markdown(results []Result) string {
	var b strings.Builder
	b.WriteString("| scenario | cluster | side | calls | definitions | (b) calls + results | (a) cumulative input, first question | time |\n|---|---|---|---|---|---|---|---|\n")
	type key struct{ scenario, scale string }
	var order []key
	byKey := map[key][]Result{}
	for _, r := range results {
		k := key{r.Run.Scenario, r.Scale}
		if byKey[k] == nil {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], r)
	}
	for _, k := range order {
		var code, peer *Result
		for i, r := range byKey[k] {
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %d | %s |\n", k.scenario, k.scale, r.Run.Side, len(r.Run.Calls),
				r.Run.definitionTokens(), r.Run.CallTokens(), r.Run.CumulativeInput(), r.Took.Round(time.Millisecond))
			switch r.Kind {
			case KindCode, KindUpstream:
				code = &byKey[k][i]
			case KindPeer:
				peer = &byKey[k][i]
			}
		}
		if peer == nil && code != nil && code.Run.Of != k.scenario {
			for i, r := range byKey[key{code.Run.Of, k.scale}] {
				if r.Kind == KindPeer {
					peer = &byKey[key{code.Run.Of, k.scale}][i]
				}
			}
		}
		if code != nil && peer != nil {
			fmt.Fprintf(&b, "| %s | %s | **code mode vs the peer** | | | **%.2f×** | **%.1f %% fewer** | |\n", k.scenario, k.scale,
				float64(code.Run.CallTokens())/float64(peer.Run.CallTokens()),
				100*(1-float64(code.Run.CumulativeInput())/float64(peer.Run.CumulativeInput())))
		}
	}
	return b.String()
}

// Session is (c): questions asked one after another in one conversation
// with a side, at one scale: the definitions once, then each question, its
// calls and results, and its answer. Tokens is the conversation's length
// at its end.
type Session struct {
	Scale, Side, Kind string
	Questions         int
	Tokens            int
}

// Sessions adds up, per scale and side, the first n questions of results
// (in the order they ran, on one MCP session per side) into a session. A
// scenario that asks another's question another way (Of) is not one of
// them.
func Sessions(results []Result, n int) []Session {
	type key struct{ scale, side string }
	var order []key
	byKey := map[key]*Session{}
	for _, r := range results {
		if r.Run.Of != r.Run.Scenario {
			continue // the same question asked another way
		}
		k := key{r.Scale, r.Run.Side}
		s := byKey[k]
		if s == nil {
			s = &Session{Scale: r.Scale, Side: r.Run.Side, Kind: r.Kind, Tokens: r.Run.definitionTokens()}
			byKey[k] = s
			order = append(order, k)
		}
		if s.Questions < n {
			s.Questions++
			s.Tokens += r.Run.WithoutDefinitions()
		}
	}
	out := make([]Session, len(order))
	for i, k := range order {
		out[i] = *byKey[k]
	}
	return out
}

// SessionMarkdown writes sessions as a table.
func SessionMarkdown(sessions []Session) string {
	var b strings.Builder
	b.WriteString("| cluster | side | questions | (c) tokens of the session |\n|---|---|---|---|\n")
	for _, s := range sessions {
		fmt.Fprintf(&b, "| %s | %s | %d | %d |\n", s.Scale, s.Side, s.Questions, s.Tokens)
	}
	return b.String()
}

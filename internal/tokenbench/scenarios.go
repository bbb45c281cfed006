package tokenbench

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Kinds of side: each scenario has an agent for each.
const (
	KindCode   = "code"   // kubecode's search_tools + execute_code
	KindDirect = "direct" // kubecode's one tool per operation
	KindPeer   = "peer"   // containers/kubernetes-mcp-server
	// KindUpstream is kubecode's code mode over kubernetes-mcp-server as
	// an upstream: the same server's tools, called from a script.
	KindUpstream = "upstream"
)

// agent answers a scenario through one kind of side.
type agent func(r *recorder) (any, error)

// codeAgent is the code-mode agent of a scenario: no search (the
// execute_code description teaches the operations' names and inputs, and
// the results are the API's own objects), one script that answers; the
// script's result decodes into T. Each of wrong is a guess it made first
// that the type check must refuse, before anything ran, with what it
// needs to fix it.
func codeAgent[T any](script string, wrong ...string) agent {
	return func(r *recorder) (any, error) {
		for _, w := range wrong {
			text, err := r.call("execute_code", map[string]any{"code": w})
			if err == nil || !strings.Contains(text, "nothing changed") {
				return nil, fmt.Errorf("a wrong guess was not refused by the type check: %.300s", text)
			}
		}
		text, err := r.call("execute_code", map[string]any{"code": script})
		if err != nil {
			return nil, err
		}
		var out T
		return out, json.Unmarshal([]byte(text), &out)
	}
}

// tableAgent is an agent that answers from one list call's table.
func tableAgent(tool string, args map[string]any, answer func(table string) any) agent {
	return func(r *recorder) (any, error) {
		text, err := r.call(tool, args)
		if err != nil {
			return nil, err
		}
		return answer(text), nil
	}
}

// Scenario is one question with an agent per kind of side.
type Scenario struct {
	Name     string
	Question string
	// OneNamespace marks a question about one namespace: small data,
	// where a classic server is at its cheapest.
	OneNamespace bool
	// Of names the scenario whose other sides this one is compared with
	// (a code-mode agent that searches first asks the same question).
	Of     string
	agents map[string]agent
}

// Compared is the name of the scenario whose peer run s is compared with.
func (s *Scenario) Compared() string {
	if s.Of != "" {
		return s.Of
	}
	return s.Name
}

// SearchingFirst is s asked of code mode by an agent that does not guess:
// it calls search_tools with the question as it was asked, reads the
// answer, then runs s's script. The search answer is what it costs more.
func SearchingFirst(s *Scenario) *Scenario {
	code := s.agents[KindCode]
	return &Scenario{
		Name:         s.Name + ", searching first",
		Question:     s.Question,
		OneNamespace: s.OneNamespace,
		Of:           s.Name,
		agents: map[string]agent{KindCode: func(r *recorder) (any, error) {
			if _, err := r.call("search_tools", map[string]any{"query": s.Question}); err != nil {
				return nil, err
			}
			return code(r)
		}},
	}
}

// Serves says whether the scenario has an agent for kind.
func (s *Scenario) Serves(kind string) bool { return s.agents[kind] != nil }

// Run has side answer the scenario as a side of kind would, and returns
// the run with the answer as JSON.
func (s *Scenario) Run(ctx context.Context, side *Side, kind string) (*Run, error) {
	a := s.agents[kind]
	if a == nil {
		return nil, fmt.Errorf("tokenbench: scenario %s has no agent for %s", s.Name, kind)
	}
	run := &Run{Side: side.Name, Scenario: s.Name, Of: s.Compared(), Question: s.Question, Definitions: side.Definitions}
	answer, err := a(&recorder{ctx: ctx, side: side, run: run})
	if err != nil {
		return run, fmt.Errorf("tokenbench: %s on %s: %w", s.Name, side.Name, err)
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return run, err
	}
	run.Answer = string(b)
	return run, nil
}

// HealthScan asks which pods of namespace crash-loop and what each logged
// last before it died. The answer maps "namespace/pod" to that line.
func HealthScan(namespace string) *Scenario {
	logs := func(r *recorder, tool string, pods []string, args func(pod string) map[string]any) (map[string]string, error) {
		out := map[string]string{}
		for _, p := range pods {
			text, err := r.call(tool, args(p))
			if err != nil {
				return nil, err
			}
			out[namespace+"/"+p] = lastLine(text)
		}
		return out, nil
	}
	return &Scenario{
		Name:         "health scan (one namespace)",
		OneNamespace: true,
		Question:     fmt.Sprintf("Which pods in namespace %s are crash-looping, and what is the last line each logged before it died?", namespace),
		agents: map[string]agent{
			KindCode: codeAgent[map[string]string](fmt.Sprintf(`const pods = await tools.kubernetes.pods.list({ namespace: %q })
const out: Record<string, string> = {}
for (const p of pods) {
  for (const c of p.status?.containerStatuses ?? []) {
    if (c.state?.waiting?.reason !== 'CrashLoopBackOff') continue
    const log = await tools.kubernetes.pods.logs({ name: p.metadata.name, namespace: p.metadata.namespace, container: c.name, previous: true, tailLines: 5 })
    out[p.metadata.namespace + '/' + p.metadata.name] = log.trim().split('\n').pop() ?? ''
  }
}
return out`, namespace)),
			KindDirect: func(r *recorder) (any, error) {
				text, err := r.call("kubernetes_pods_list", map[string]any{"namespace": namespace})
				if err != nil {
					return nil, err
				}
				pods := rowsWhere(parseTable(text), "STATUS", "CrashLoopBackOff", "NAME")
				return logs(r, "kubernetes_pods_logs", pods, func(p string) map[string]any {
					return map[string]any{"name": p, "namespace": namespace, "previous": true, "tailLines": 5}
				})
			},
			KindPeer: func(r *recorder) (any, error) {
				text, err := r.call("pods_list_in_namespace", map[string]any{"namespace": namespace})
				if err != nil {
					return nil, err
				}
				pods := rowsWhere(parseTable(text), "STATUS", "CrashLoopBackOff", "NAME")
				return logs(r, "pods_log", pods, func(p string) map[string]any {
					return map[string]any{"name": p, "namespace": namespace, "previous": true, "tail": 5}
				})
			},
		},
	}
}

// RestartSummary asks which pods of any namespace restarted, and how
// often. The answer maps "namespace/pod" to the restarts of its
// containers.
func RestartSummary() *Scenario {
	fromTable := func(text string) map[string]int {
		out := map[string]int{}
		for _, row := range parseTable(text) {
			n, _ := strconv.Atoi(strings.Fields(row["RESTARTS"] + " 0")[0])
			if n > 0 {
				out[row["NAMESPACE"]+"/"+row["NAME"]] = n
			}
		}
		return out
	}
	return &Scenario{
		Name:     "restart summary (all namespaces)",
		Question: "Which pods, in any namespace, have restarted, and how many times?",
		agents: map[string]agent{
			KindCode: codeAgent[map[string]int](`const pods = await tools.kubernetes.pods.list({ allNamespaces: true })
const out: Record<string, number> = {}
for (const p of pods) {
  const n = (p.status?.containerStatuses ?? []).reduce((s, c) => s + c.restartCount, 0)
  if (n > 0) out[p.metadata.namespace + '/' + p.metadata.name] = n
}
return out`),
			KindDirect: func(r *recorder) (any, error) {
				text, err := r.call("kubernetes_pods_list", map[string]any{"allNamespaces": true})
				if err != nil {
					return nil, err
				}
				out := map[string]int{}
				for _, row := range parseTable(text) { // RESTARTS lists each container's count
					if sum := sumList(row["RESTARTS"]); sum > 0 {
						out[row["NAMESPACE"]+"/"+row["NAME"]] = sum
					}
				}
				return out, nil
			},
			KindPeer: func(r *recorder) (any, error) {
				text, err := r.call("pods_list", map[string]any{})
				if err != nil {
					return nil, err
				}
				return fromTable(text), nil
			},
		},
	}
}

// RestartSummaryUpstream is RestartSummary asked of kubernetes-mcp-server
// itself, once through its own tools (the peer) and once from a script in
// kubecode that calls the same tool as an upstream (tools.peer.pods_list):
// what code mode saves over an upstream, whatever the upstream.
func RestartSummaryUpstream() *Scenario {
	return &Scenario{
		Name:     "restart summary through an upstream MCP server",
		Question: "Which pods, in any namespace, have restarted, and how many times? (kubernetes-mcp-server's tools)",
		// The peer's own answer to the question is the restart summary's:
		// compared with it, not asked twice of the peer.
		Of: RestartSummary().Name,
		agents: map[string]agent{
			// The upstream answers a table, as it does its own clients: the
			// script reads it and returns the answer alone.
			KindUpstream: codeAgent[map[string]int](`const text = String(await tools.peer.pods_list({}))
const lines = text.split('\n').filter(l => l.trim() !== '')
const head = lines[0]
const cols: { name: string, start: number }[] = []
for (const m of head.matchAll(/\S+(?: \S+)*/g)) cols.push({ name: m[0], start: m.index! })
const cell = (line: string, name: string) => {
  const i = cols.findIndex(c => c.name === name)
  return line.slice(cols[i].start, i + 1 < cols.length ? cols[i + 1].start : undefined).trim()
}
const out: Record<string, number> = {}
for (const line of lines.slice(1)) {
  const n = parseInt(cell(line, 'RESTARTS'), 10)
  if (n > 0) out[cell(line, 'NAMESPACE') + '/' + cell(line, 'NAME')] = n
}
return out`),
		},
	}
}

// DeploymentFacts is what TwoDeployments answers for each deployment.
type DeploymentFacts struct {
	Images        []string `json:"images"`
	ReadyReplicas int      `json:"readyReplicas"`
}

// TwoDeployments asks for the images and ready replicas of two
// deployments of namespace. The answer maps "namespace/name" to them.
func TwoDeployments(namespace, a, b string) *Scenario {
	facts := func(obj []byte) (DeploymentFacts, error) {
		var d struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Image string `json:"image"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
			Status struct {
				ReadyReplicas int `json:"readyReplicas"`
			} `json:"status"`
		}
		if err := yaml.Unmarshal(obj, &d); err != nil { // YAML or JSON
			return DeploymentFacts{}, err
		}
		f := DeploymentFacts{ReadyReplicas: d.Status.ReadyReplicas}
		for _, c := range d.Spec.Template.Spec.Containers {
			f.Images = append(f.Images, c.Image)
		}
		return f, nil
	}
	each := func(r *recorder, tool string, args func(name string) map[string]any) (any, error) {
		out := map[string]DeploymentFacts{}
		for _, n := range []string{a, b} {
			text, err := r.call(tool, args(n))
			if err != nil {
				return nil, err
			}
			f, err := facts([]byte(text))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", tool, err)
			}
			out[namespace+"/"+n] = f
		}
		return out, nil
	}
	return &Scenario{
		Name:         "two deployment gets",
		OneNamespace: true,
		Question:     fmt.Sprintf("Which images do deployments %s and %s in namespace %s run, and how many replicas of each are ready?", a, b, namespace),
		agents: map[string]agent{
			KindCode: codeAgent[map[string]DeploymentFacts](fmt.Sprintf(`const out: Record<string, { images: string[]; readyReplicas: number }> = {}
for (const name of [%q, %q]) {
  const d = await tools.kubernetes.deployments.get({ name, namespace: %q })
  out[%q + '/' + name] = { images: d.spec?.template.spec?.containers.map(c => c.image ?? '') ?? [], readyReplicas: d.status?.readyReplicas ?? 0 }
}
return out`, a, b, namespace, namespace)),
			KindDirect: func(r *recorder) (any, error) {
				return each(r, "kubernetes_deployments_get", func(n string) map[string]any {
					return map[string]any{"name": n, "namespace": namespace}
				})
			},
			KindPeer: func(r *recorder) (any, error) {
				return each(r, "resources_get", func(n string) map[string]any {
					return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": n, "namespace": namespace}
				})
			},
		},
	}
}

// parseTable reads a kubectl-style table: a header line whose column names
// start each column, then one line per row. Cells are cut at the next
// column's start, so they may hold spaces ("42 (69s ago)").
func parseTable(text string) []map[string]string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for len(lines) > 0 && (strings.TrimSpace(lines[0]) == "" || strings.HasPrefix(lines[0], "#")) {
		lines = lines[1:]
	}
	if len(lines) == 0 {
		return nil
	}
	header := []rune(lines[0]) // columns line up by character
	type col struct {
		name  string
		start int
	}
	var cols []col
	for i := 0; i < len(header); {
		if header[i] == ' ' {
			i++
			continue
		}
		j := i
		for j < len(header) && !(header[j] == ' ' && (j+1 >= len(header) || header[j+1] == ' ')) {
			j++
		}
		cols = append(cols, col{strings.TrimSpace(string(header[i:j])), i})
		i = j
	}
	var rows []map[string]string
	for _, line := range lines[1:] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		l := []rune(line)
		row := map[string]string{}
		for k, c := range cols {
			end := len(l)
			if k+1 < len(cols) && cols[k+1].start < end {
				end = cols[k+1].start
			}
			if c.start < len(l) {
				row[c.name] = strings.TrimSpace(string(l[c.start:end]))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// rowsWhere returns column out of the rows whose column col holds value.
func rowsWhere(rows []map[string]string, col, value, out string) []string {
	var res []string
	for _, r := range rows {
		if strings.Contains(r[col], value) {
			res = append(res, r[out])
		}
	}
	sort.Strings(res)
	return res
}

// sumList adds up a cell of comma-separated numbers ("3,0").
func sumList(cell string) int {
	n := 0
	for _, f := range strings.Split(cell, ",") {
		v, _ := strconv.Atoi(strings.TrimSpace(f))
		n += v
	}
	return n
}

// lastLine is the last non-empty line of text.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

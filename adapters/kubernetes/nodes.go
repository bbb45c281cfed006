package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kubecode/kubecode/catalog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Node diagnostics through the API server's node proxy: nodes.logs (the
// kubelet's /logs/: its journal, or a file under /var/log) and nodes.stats
// (its /stats/summary). Both are reads, bounded, and only ever GET those
// two kubelet paths; both need get on nodes/proxy, which an identity may
// well lack (it is a powerful permission).

// Bounds of node reads: the text stays in the sandbox, but a node's whole
// journal is more than any script needs.
const (
	maxNodeLog   = 4 << 20
	maxNodeStats = 16 << 20
)

type nodeLogsArgs struct {
	Name      string  `json:"name"`
	Query     string  `json:"query"`
	Path      *string `json:"path"`
	TailLines *int64  `json:"tailLines"`
	SinceTime string  `json:"sinceTime"`
	Pattern   string  `json:"pattern"`
}

var (
	// nodeLogPathRE: a relative path of plain names under /var/log.
	nodeLogPathRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?$`)
	// nodeNameRE: a DNS subdomain, as node names are.
	nodeNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	// nodeLogQueryRE: a systemd unit or a log file's name.
	nodeLogQueryRE = regexp.MustCompile(`^[A-Za-z0-9@_.:-]+$`)
)

func describeNodeLogs(op *catalog.Operation) {
	op.Description = "A node's logs through the API server's node proxy (kubelet /logs/): the kubelet's journal by default (query: another service), or a file under /var/log (path); tailLines, sinceTime, pattern narrow it. Needs get on nodes/proxy."
	op.Input = &catalog.Schema{Type: "object", Required: []string{"name"}, Properties: map[string]*catalog.Schema{
		"name":      prop("string", "the node"),
		"query":     prop("string", `a service's journal, e.g. "kubelet" (the default), "containerd"`),
		"path":      prop("string", `a file or directory under /var/log instead, e.g. "kubelet.log"; "" lists /var/log`),
		"tailLines": {Type: "integer", Description: "only the last N lines", Minimum: ptr(0.0)},
		"sinceTime": prop("string", "RFC 3339: only lines since then"),
		"pattern":   prop("string", "a regular expression lines must match"),
	}}
	op.Output = &catalog.Schema{Type: "string"}
	op.OutputName = ""
	op.Keywords = append(op.Keywords, "node log", "kubelet log", "journal", "journalctl", "node problems")
}

func describeNodeStats(op *catalog.Operation) {
	u64 := func(d string) *catalog.Schema { return prop("integer", d) }
	cpu := &catalog.Schema{Type: "object", Name: "CPUStats", Properties: map[string]*catalog.Schema{
		"time": prop("string", ""), "usageNanoCores": u64("CPU in use now, in billionths of a core"), "usageCoreNanoSeconds": u64("CPU time used since start"),
	}}
	mem := &catalog.Schema{Type: "object", Name: "MemoryStats", Properties: map[string]*catalog.Schema{
		"time": prop("string", ""), "workingSetBytes": u64("memory in use that cannot be reclaimed: what limits and eviction judge"),
		"usageBytes": u64(""), "availableBytes": u64(""), "rssBytes": u64(""),
	}}
	container := &catalog.Schema{Type: "object", Name: "ContainerStats", Required: []string{"name"}, Properties: map[string]*catalog.Schema{
		"name": prop("string", ""), "startTime": prop("string", ""), "cpu": cpu, "memory": mem,
	}}
	op.Description = "A node's resource statistics through the API server's node proxy (kubelet /stats/summary): CPU and memory of the node, of each pod on it and each container. Needs get on nodes/proxy."
	op.Input = &catalog.Schema{Type: "object", Required: []string{"name"}, Properties: map[string]*catalog.Schema{"name": prop("string", "the node")}}
	op.Output = &catalog.Schema{Type: "object", Required: []string{"node", "pods"}, Properties: map[string]*catalog.Schema{
		"node": {Type: "object", Name: "NodeStats", Required: []string{"nodeName"}, Properties: map[string]*catalog.Schema{
			"nodeName": prop("string", ""), "startTime": prop("string", ""), "cpu": cpu, "memory": mem,
		}},
		"pods": {Type: "array", Items: &catalog.Schema{Type: "object", Name: "PodStats", Required: []string{"podRef", "containers"}, Properties: map[string]*catalog.Schema{
			"podRef": {Type: "object", Required: []string{"name", "namespace"}, Properties: map[string]*catalog.Schema{
				"name": prop("string", ""), "namespace": prop("string", ""), "uid": prop("string", ""),
			}},
			"startTime":  prop("string", ""),
			"cpu":        cpu,
			"memory":     mem,
			"containers": {Type: "array", Items: container},
		}}},
	}}
	op.OutputName = "NodeStatsSummary"
	op.Keywords = append(op.Keywords, "stats summary", "node usage", "cpu", "memory", "kubelet stats", "resource usage of a node")
}

// nodeProxyError says what a failed node proxy call means.
func nodeProxyError(node, what string, err error) error {
	if apierrors.IsForbidden(err) {
		return &catalog.CallError{Status: http.StatusForbidden, Reason: "Forbidden",
			Message: fmt.Sprintf("reading node %s's %s needs get on nodes/proxy, which this identity lacks (%s); ask for it, or read the node's conditions and events instead", node, what, apierrors.ReasonForError(err))}
	}
	return wrapError(err)
}

// nodeLogs reads a node's journal or log file.
func (a *Adapter) nodeLogs(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var args nodeLogsArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	if args.Name == "" {
		return nil, badRequest(`nodes.logs needs name: tools.kubernetes.nodes.logs({ name: "node-1", tailLines: 100 })`)
	}
	path := ""
	if args.Path != nil {
		path = *args.Path
	}
	if args.Path != nil && args.Query != "" {
		return nil, badRequest("give query (a service's journal) or path (a file under /var/log), not both")
	}
	if path != "" && (!nodeLogPathRE.MatchString(path) || strings.Contains("/"+path+"/", "/../") || strings.Contains("/"+path+"/", "/./")) {
		return nil, badRequest("path %q: a relative path of plain names under /var/log, such as \"kubelet.log\" or \"pods/\"", path)
	}
	if args.Query == "" && args.Path == nil { // path "" lists /var/log
		args.Query = "kubelet"
	}
	if args.Query != "" && !nodeLogQueryRE.MatchString(args.Query) {
		return nil, badRequest("query %q: a service's name, such as \"kubelet\"", args.Query)
	}
	if !nodeNameRE.MatchString(args.Name) {
		return nil, badRequest("name %q is not a node's name", args.Name)
	}
	// One segment ending in a slash keeps it: the kubelet serves /logs/.
	req := a.core.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + args.Name + "/proxy/logs/" + path)
	if args.Query != "" {
		req = req.Param("query", args.Query)
	}
	if args.TailLines != nil {
		req = req.Param("tailLines", strconv.FormatInt(*args.TailLines, 10))
	}
	if args.SinceTime != "" {
		if _, err := time.Parse(time.RFC3339, args.SinceTime); err != nil {
			return nil, badRequest("sinceTime %q: RFC 3339, such as 2026-11-28T10:00:00Z", args.SinceTime)
		}
		req = req.Param("sinceTime", args.SinceTime)
	}
	if args.Pattern != "" {
		if _, err := regexp.Compile(args.Pattern); err != nil {
			return nil, badRequest("pattern: %v", err)
		}
		req = req.Param("pattern", args.Pattern)
	}
	rc, err := req.Stream(ctx)
	if err != nil {
		return nil, nodeProxyError(args.Name, "logs", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxNodeLog+1))
	if err != nil {
		return nil, wrapError(err)
	}
	if len(b) > maxNodeLog {
		b = append(b[:maxNodeLog], "\n[node log truncated at 4 MiB: pass tailLines, sinceTime or pattern]\n"...)
	}
	return json.Marshal(string(b))
}

// nodeStats reads a node's /stats/summary.
func (a *Adapter) nodeStats(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var args struct {
		Name string `json:"name"`
	}
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	if args.Name == "" {
		return nil, badRequest(`nodes.stats needs name: tools.kubernetes.nodes.stats({ name: "node-1" })`)
	}
	if !nodeNameRE.MatchString(args.Name) { // "http:node-1:8080" would reach another port
		return nil, badRequest("name %q is not a node's name", args.Name)
	}
	rc, err := a.core.CoreV1().RESTClient().Get().Resource("nodes").Name(args.Name).SubResource("proxy").Suffix("stats", "summary").Stream(ctx)
	if err != nil {
		return nil, nodeProxyError(args.Name, "statistics", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxNodeStats+1))
	if err != nil {
		return nil, wrapError(err)
	}
	if len(b) > maxNodeStats {
		return nil, &catalog.CallError{Status: http.StatusRequestEntityTooLarge, Reason: "TooLarge", Message: fmt.Sprintf("node %s's statistics pass 16 MiB", args.Name)}
	}
	if !json.Valid(b) {
		return nil, &catalog.CallError{Status: http.StatusBadGateway, Reason: "BadGateway", Message: fmt.Sprintf("node %s's kubelet answered /stats/summary with something other than JSON", args.Name)}
	}
	return b, nil
}

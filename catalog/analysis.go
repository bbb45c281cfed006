package catalog

import (
	"strings"
	"unicode"
)

// Text preparation for the search index: splitting names into words and
// expanding a question into the operations it is likely about.

// words splits s into lower-case words at anything that is not a letter or
// digit and at camel-case humps: "kubernetes.api_resources" → kubernetes api
// resources, "HorizontalPodAutoscaler" → horizontal pod autoscaler,
// "APIService" → api service.
func words(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(string(rs[start:end])))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		lowerNext := i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && lowerNext)) {
			flush(i)
			start = i
		}
	}
	flush(len(rs))
	return out
}

// intents maps a word of a question to words of the operations that
// answer it: "crashing" → pods, logs, events. Matching is on the question's
// lower-case words before stemming, so inflections are listed.
var intents = map[string]string{
	"crash":            "pods logs events",
	"crashes":          "pods logs events",
	"crashing":         "pods logs events",
	"crashed":          "pods logs events",
	"crashloop":        "pods logs events",
	"crashloopbackoff": "pods logs events",
	"backoff":          "pods events",
	"restart":          "pods",
	"restarts":         "pods",
	"restarted":        "pods",
	"restarting":       "pods",
	"oom":              "pods events",
	"oomkilled":        "pods events",
	"memory":           "pods",
	"imagepullbackoff": "pods events",
	"errimagepull":     "pods events",
	"pull":             "pods events",
	"image":            "pods deployments",
	"evicted":          "pods events",
	"pending":          "pods events",
	"container":        "pods",
	"containers":       "pods",
	"log":              "logs",
	"stdout":           "logs",
	"stderr":           "logs",
	"output":           "logs",
	"scale":            "deployments statefulsets scale",
	"scaling":          "deployments statefulsets scale",
	"resize":           "deployments statefulsets scale",
	"replicas":         "deployments statefulsets",
	"autoscale":        "horizontalpodautoscalers",
	"autoscaler":       "horizontalpodautoscalers",
	"autoscaling":      "horizontalpodautoscalers",
	"endpoint":         "services endpoints endpointslices",
	"endpoints":        "services endpoints endpointslices",
	"backends":         "services endpointslices",
	"why":              "events logs",
	"broken":           "events logs",
	"failing":          "events logs",
	"fail":             "events logs",
	"fails":            "events logs",
	"error":            "events logs",
	"errors":           "events logs",
	"wrong":            "events logs",
	"debug":            "events logs",
	"diagnose":         "events logs",
	"troubleshoot":     "events logs",
	"happened":         "events",
	"warning":          "events",
	"warnings":         "events",
	"permission":       "roles rolebindings clusterroles",
	"permissions":      "roles rolebindings clusterroles",
	"access":           "roles rolebindings clusterroles",
	"who":              "rolebindings clusterrolebindings",
	"crd":              "customresourcedefinitions",
	"crds":             "customresourcedefinitions",
	"custom":           "customresourcedefinitions",
	"certificate":      "secrets certificatesigningrequests",
	"cert":             "secrets certificatesigningrequests",
	"password":         "secrets",
	"credentials":      "secrets",
	"disk":             "persistentvolumeclaims",
	"storage":          "persistentvolumeclaims storageclasses",
	"volume":           "persistentvolumeclaims persistentvolumes",
	"host":             "ingresses",
	"hosts":            "ingresses",
	"url":              "ingresses",
	"domain":           "ingresses",
	"schedule":         "cronjobs",
	"cron":             "cronjobs",
	"deploy":           "deployments",
	"rollout":          "deployments",
	"config":           "configmaps",
	"kinds":            "api resources",
	"types":            "api resources",
	"discovery":        "api resources",
}

// expand returns the intent words for a question's words, without
// duplicates and without words already in the question.
func expand(ws []string) []string {
	seen := map[string]bool{}
	for _, w := range ws {
		seen[w] = true
	}
	var out []string
	for _, w := range ws {
		for _, e := range strings.Fields(intents[w]) {
			if !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// joined returns the question's adjacent words run together, for resource
// names written as one word: "service accounts" → serviceaccounts,
// "persistent volume claims" → persistentvolumeclaims.
func joined(ws []string) []string {
	var out []string
	for n := 2; n <= 3; n++ {
		for i := 0; i+n <= len(ws); i++ {
			out = append(out, strings.Join(ws[i:i+n], ""))
		}
	}
	return out
}

// verbWords are the words that ask for a verb other than by its name.
var verbWords = map[string]string{
	"remove": "delete", "destroy": "delete", "kill": "delete", "evict": "delete",
	"update": "patch", "edit": "patch", "change": "patch", "modify": "patch", "set": "patch", "label": "patch", "annotate": "patch",
	"resize": "scale", "replicas": "scale", "autoscale": "scale",
	"new": "create", "add": "create", "make": "create",
	"manifest": "apply", "yaml": "apply", "declarative": "apply",
	"log": "logs", "output": "logs", "stdout": "logs", "stderr": "logs", "tail": "logs",
	"describe": "get", "inspect": "get", "details": "get",
}

// askedVerbs returns the verbs a question asks for by name or synonym.
func askedVerbs(ws []string) map[string]bool {
	out := map[string]bool{}
	for _, w := range ws {
		out[w] = true
		if v, ok := verbWords[w]; ok {
			out[v] = true
		}
	}
	return out
}

// verbWeight scales an operation's score by its verb. Unless the question
// asks for the verb, lists come first (the usual first step of an
// investigation), then other reads, and operations that change the cluster
// last.
func verbWeight(op *Operation, asked map[string]bool) float64 {
	switch {
	case asked[op.Verb]:
		return 1
	case op.Verb == "list":
		return 1
	case op.Annotations.ReadOnly:
		return 0.8
	default:
		return 0.45
	}
}

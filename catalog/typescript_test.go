package catalog

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubecode/kubecode/internal/golden"
	"github.com/kubecode/kubecode/internal/tstest"
)

// Schema builders for realistic fixtures.

func str() *Schema          { return &Schema{Type: "string"} }
func integer() *Schema      { return &Schema{Type: "integer"} }
func boolean() *Schema      { return &Schema{Type: "boolean"} }
func arr(s *Schema) *Schema { return &Schema{Type: "array", Items: s} }
func strMap() *Schema       { return &Schema{Type: "object", AdditionalProperties: str()} }
func enum(v ...any) *Schema { return &Schema{Type: "string", Enum: v} }
func obj(props map[string]*Schema, required ...string) *Schema {
	return &Schema{Type: "object", Properties: props, Required: required}
}

// metadataSchema is a shared type: declared once, by name.
func metadataSchema() *Schema {
	s := obj(map[string]*Schema{
		"name": str(), "namespace": str(), "uid": str(), "labels": strMap(), "annotations": strMap(),
		"creationTimestamp": str(), "deletionTimestamp": str(), "resourceVersion": str(), "generation": integer(),
		"generateName": str(), "finalizers": arr(str()), "managedFields": arr(obj(map[string]*Schema{"manager": str(), "operation": str()})),
		"ownerReferences": arr(obj(map[string]*Schema{"apiVersion": str(), "kind": str(), "name": str(), "uid": str(), "controller": boolean()}, "apiVersion", "kind", "name", "uid")),
	}, "name")
	s.Name = "ObjectMeta"
	return s
}

func conditions() *Schema {
	return arr(obj(map[string]*Schema{
		"type": str(), "status": str(), "reason": str(), "message": str(), "lastTransitionTime": str(),
		"lastProbeTime": str(), "observedGeneration": integer(),
	}, "type", "status"))
}

func containerSchema() *Schema {
	quantity := &Schema{IntOrString: true}
	probe := obj(map[string]*Schema{
		"httpGet":             obj(map[string]*Schema{"path": str(), "port": {IntOrString: true}, "scheme": str()}, "port"),
		"exec":                obj(map[string]*Schema{"command": arr(str())}),
		"initialDelaySeconds": integer(), "periodSeconds": integer(), "timeoutSeconds": integer(), "failureThreshold": integer(),
	})
	return obj(map[string]*Schema{
		"name": str(), "image": str(), "command": arr(str()), "args": arr(str()), "workingDir": str(),
		"imagePullPolicy": enum("Always", "IfNotPresent", "Never"),
		"ports":           arr(obj(map[string]*Schema{"containerPort": integer(), "name": str(), "protocol": enum("TCP", "UDP", "SCTP"), "hostPort": integer()}, "containerPort")),
		"env": arr(obj(map[string]*Schema{"name": str(), "value": str(), "valueFrom": obj(map[string]*Schema{
			"secretKeyRef":    obj(map[string]*Schema{"name": str(), "key": str()}, "key"),
			"configMapKeyRef": obj(map[string]*Schema{"name": str(), "key": str()}, "key"),
		})}, "name")),
		"resources": obj(map[string]*Schema{
			"limits":   {Type: "object", AdditionalProperties: quantity},
			"requests": {Type: "object", AdditionalProperties: quantity},
		}),
		"volumeMounts":    arr(obj(map[string]*Schema{"name": str(), "mountPath": str(), "readOnly": boolean(), "subPath": str()}, "name", "mountPath")),
		"livenessProbe":   probe,
		"readinessProbe":  probe,
		"startupProbe":    probe,
		"securityContext": obj(map[string]*Schema{"runAsUser": integer(), "runAsNonRoot": boolean(), "privileged": boolean(), "readOnlyRootFilesystem": boolean()}),
		"stdin":           boolean(), "tty": boolean(), "terminationMessagePath": str(),
	}, "name")
}

func podSpecSchema() *Schema {
	return obj(map[string]*Schema{
		"containers": arr(containerSchema()), "initContainers": arr(containerSchema()),
		"nodeName": str(), "nodeSelector": strMap(), "serviceAccountName": str(),
		"restartPolicy": enum("Always", "OnFailure", "Never"), "dnsPolicy": str(), "hostNetwork": boolean(),
		"priorityClassName": str(), "schedulerName": str(), "terminationGracePeriodSeconds": integer(),
		"enableServiceLinks": boolean(), "hostname": str(), "subdomain": str(),
		"tolerations": arr(obj(map[string]*Schema{"key": str(), "operator": str(), "value": str(), "effect": str(), "tolerationSeconds": integer()})),
		"volumes": arr(obj(map[string]*Schema{
			"name":                  str(),
			"configMap":             obj(map[string]*Schema{"name": str(), "defaultMode": integer()}),
			"secret":                obj(map[string]*Schema{"secretName": str(), "defaultMode": integer()}),
			"persistentVolumeClaim": obj(map[string]*Schema{"claimName": str(), "readOnly": boolean()}, "claimName"),
			"emptyDir":              obj(map[string]*Schema{"medium": str(), "sizeLimit": {IntOrString: true}}),
		}, "name")),
		"affinity": obj(map[string]*Schema{"nodeAffinity": {Type: "object"}, "podAffinity": {Type: "object"}, "podAntiAffinity": {Type: "object"}}),
	}, "containers")
}

func podSchema() *Schema {
	state := obj(map[string]*Schema{
		"waiting":    obj(map[string]*Schema{"reason": str(), "message": str()}),
		"running":    obj(map[string]*Schema{"startedAt": str()}),
		"terminated": obj(map[string]*Schema{"exitCode": integer(), "signal": integer(), "reason": str(), "message": str(), "startedAt": str(), "finishedAt": str(), "containerID": str()}, "exitCode"),
	})
	return obj(map[string]*Schema{
		"apiVersion": str(), "kind": str(), "metadata": metadataSchema(), "spec": podSpecSchema(),
		"status": obj(map[string]*Schema{
			"phase":      enum("Pending", "Running", "Succeeded", "Failed", "Unknown"),
			"conditions": conditions(), "message": str(), "reason": str(), "hostIP": str(), "podIP": str(),
			"podIPs": arr(obj(map[string]*Schema{"ip": str()})), "startTime": str(), "qosClass": str(), "nominatedNodeName": str(),
			"containerStatuses": arr(obj(map[string]*Schema{
				"name": str(), "ready": boolean(), "restartCount": integer(), "image": str(), "imageID": str(),
				"containerID": str(), "started": boolean(), "state": state, "lastState": state,
			}, "name", "ready", "restartCount", "image", "imageID")),
			"initContainerStatuses": arr(obj(map[string]*Schema{"name": str(), "ready": boolean(), "restartCount": integer(), "state": state}, "name", "ready", "restartCount")),
		}),
	}, "metadata")
}

func deploymentSchema() *Schema {
	return obj(map[string]*Schema{
		"apiVersion": str(), "kind": str(), "metadata": metadataSchema(),
		"spec": obj(map[string]*Schema{
			"replicas": integer(),
			"selector": obj(map[string]*Schema{
				"matchLabels":      strMap(),
				"matchExpressions": arr(obj(map[string]*Schema{"key": str(), "operator": str(), "values": arr(str())}, "key", "operator")),
			}),
			"template":                obj(map[string]*Schema{"metadata": metadataSchema(), "spec": podSpecSchema()}),
			"strategy":                obj(map[string]*Schema{"type": enum("Recreate", "RollingUpdate"), "rollingUpdate": obj(map[string]*Schema{"maxSurge": {IntOrString: true}, "maxUnavailable": {IntOrString: true}})}),
			"minReadySeconds":         integer(),
			"revisionHistoryLimit":    integer(),
			"paused":                  boolean(),
			"progressDeadlineSeconds": integer(),
		}, "selector", "template"),
		"status": obj(map[string]*Schema{
			"replicas": integer(), "readyReplicas": integer(), "availableReplicas": integer(), "updatedReplicas": integer(),
			"unavailableReplicas": integer(), "observedGeneration": integer(), "collisionCount": integer(), "conditions": conditions(),
		}),
	}, "metadata")
}

// certificateSchema is a CRD (cert-manager's Certificate, abridged): no
// always-kept paths, so the generic rule decides.
func certificateSchema() *Schema {
	return obj(map[string]*Schema{
		"apiVersion": str(), "kind": str(), "metadata": metadataSchema(),
		"spec": obj(map[string]*Schema{
			"secretName": str(), "commonName": str(), "dnsNames": arr(str()), "duration": str(), "renewBefore": str(),
			"issuerRef":      obj(map[string]*Schema{"name": str(), "kind": str(), "group": str()}, "name"),
			"privateKey":     obj(map[string]*Schema{"algorithm": enum("RSA", "ECDSA", "Ed25519"), "size": integer(), "rotationPolicy": enum("Never", "Always"), "encoding": enum("PKCS1", "PKCS8")}),
			"usages":         arr(str()),
			"subject":        obj(map[string]*Schema{"organizations": arr(str()), "countries": arr(str()), "localities": arr(str())}),
			"keystores":      obj(map[string]*Schema{"jks": obj(map[string]*Schema{"create": boolean(), "passwordSecretRef": obj(map[string]*Schema{"name": str(), "key": str()})}, "create")}),
			"secretTemplate": obj(map[string]*Schema{"labels": strMap(), "annotations": strMap()}),
		}, "secretName", "issuerRef"),
		"status": obj(map[string]*Schema{
			"conditions": conditions(), "notAfter": str(), "notBefore": str(), "renewalTime": str(), "revision": integer(),
			"lastFailureTime": str(), "failedIssuanceAttempts": integer(), "nextPrivateKeySecretName": str(),
		}),
		"x-extra": {},
	}, "metadata")
}

func listInputSchema() *Schema {
	return obj(map[string]*Schema{
		"namespace": str(), "allNamespaces": boolean(), "labelSelector": str(), "fieldSelector": str(),
		"limit": {Type: "integer", Minimum: new(1.0)},
	})
}

func getInputSchema() *Schema {
	return obj(map[string]*Schema{"name": str(), "namespace": str()}, "name")
}

var (
	podsList = &Operation{
		Name: "kubernetes.pods.list", Provider: "kubernetes", Hints: podHints, Resource: "pods", Kind: "Pod", Verb: "list",
		Description: "List pods in a namespace or across all namespaces (core/v1). Returns a plain array; every page is fetched.",
		Input:       listInputSchema(), Output: arr(podSchema()), OutputName: "Pod",
	}
	podsGet = &Operation{
		Name: "kubernetes.pods.get", Provider: "kubernetes", Hints: podHints, Resource: "pods", Kind: "Pod", Verb: "get",
		Description: "Get one pod by name (core/v1, namespaced).", Input: getInputSchema(), Output: podSchema(), OutputName: "Pod",
	}
	podsLogs = &Operation{
		Name: "kubernetes.pods.logs", Provider: "kubernetes", Hints: testHints, Resource: "pods", Kind: "Pod", Verb: "logs",
		Description: "Read a pod container's logs as text (tailLines, sinceSeconds, previous terminated container).",
		Input: obj(map[string]*Schema{
			"name": str(), "namespace": str(), "container": str(), "tailLines": integer(), "sinceSeconds": integer(),
			"previous": boolean(), "timestamps": boolean(),
		}, "name"),
		Output: str(),
	}
	deploymentsGet = &Operation{
		Name: "kubernetes.deployments.get", Provider: "kubernetes", Hints: deploymentHints, Group: "apps", Resource: "deployments", Kind: "Deployment", Verb: "get",
		Description: "Get one deployment by name (apps/v1, namespaced).", Input: getInputSchema(), Output: deploymentSchema(), OutputName: "Deployment",
	}
	certificatesList = &Operation{
		Name: "kubernetes.certificates.list", Provider: "kubernetes", Hints: testHints, Group: "cert-manager.io", Resource: "certificates", Kind: "Certificate", Verb: "list",
		Description: "List certificates in a namespace or across all namespaces (cert-manager.io/v1). Returns a plain array; every page is fetched.",
		Input:       listInputSchema(), Output: arr(certificateSchema()), OutputName: "Certificate",
	}
	apiResources = &Operation{
		Name: "kubernetes.api_resources", Provider: "kubernetes", Hints: testHints, Verb: "list",
		Description: "List the API resources the cluster serves (CRDs included) with kind, group, scope, short names and their kubecode operation names.",
		Input:       obj(map[string]*Schema{"group": str(), "namespaced": boolean()}),
		Output: arr(obj(map[string]*Schema{
			"resource": str(), "group": str(), "version": str(), "kind": str(), "namespaced": boolean(),
			"shortNames": arr(str()), "verbs": arr(str()), "operations": arr(str()),
		}, "resource", "version", "kind", "namespaced", "verbs", "operations")),
		OutputName: "APIResource",
	}
)

func TestDeclarationsGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		ops  []*Operation
	}{
		{"pods.list.ts", []*Operation{podsList}},
		{"pods.logs.ts", []*Operation{podsLogs}},
		{"deployments.get.ts", []*Operation{deploymentsGet}},
		{"certificates.list.ts", []*Operation{certificatesList}},
		{"api_resources.ts", []*Operation{apiResources}},
		{"search-hits.ts", []*Operation{podsList, podsLogs, podsGet, deploymentsGet, apiResources}},
	} {
		t.Run(c.name, func(t *testing.T) {
			golden.Check(t, c.name, []byte(Declarations(c.ops)))
		})
	}
}

// TestCompleteDeclarations: the type check's declarations show every
// field, each object type an interface of its own named by its Title or
// where it sits, the same type declared once and a different one of the
// same name numbered; they parse.
func TestCompleteDeclarations(t *testing.T) {
	ops := append([]*Operation{podsList, podsGet, deploymentsGet, certificatesList}, oddOperations()...)
	status := podsGet.Output.Properties["status"]
	status.Title = "PodStatus"
	defer func() { status.Title = "" }()
	got := NewDeclarer(&DeclarerOptions{Complete: true}).Declarations(ops)
	golden.Check(t, "complete.ts", []byte(got))
	tstest.Parse(t, got)
	if strings.Contains(got, more) && strings.Count(got, more) != strings.Count(got, "Record<") {
		for _, line := range strings.Split(got, "\n") {
			if strings.Contains(line, more) {
				t.Logf("%s", line)
			}
		}
	}
	for _, want := range []string{
		"interface PodStatus {",                  // its Title
		"interface CertificateSpecIssuerRef {",   // where it sits
		"interface DeploymentSpecTemplateSpec {", // nested deeper
		"interface PodStatusContainerStatuses {", // items of an array, under their titled parent
		"list(input?: { namespace?: string; allNamespaces?: boolean; fieldSelector?: string; labelSelector?: string; limit?: number }): Promise<Pod[]>;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if n := strings.Count(got, "interface PodStatus {"); n != 1 {
		t.Errorf("PodStatus declared %d times", n)
	}
}

// TestDeclarationsParse checks that what the model reads is valid
// TypeScript: esbuild parses it as declarations.
func TestDeclarationsParse(t *testing.T) {
	ops := append([]*Operation{podsList, podsGet, podsLogs, deploymentsGet, certificatesList, apiResources}, oddOperations()...)
	for _, op := range ops {
		t.Run(op.Name, func(t *testing.T) { tstest.Parse(t, Declaration(op)) })
	}
	t.Run("all", func(t *testing.T) { tstest.Parse(t, Declarations(ops)) })
}

// oddOperations exercise the corners of the mapping to TypeScript.
func oddOperations() []*Operation {
	return []*Operation{
		{Name: "kubernetes.widgets_example_com.delete", Verb: "delete", Description: "Delete */ one widget.",
			Input: obj(map[string]*Schema{"name": str(), "my-field": integer(), "mode": enum("a", "b\"c", 3.0)}, "name")},
		{Name: "helm.releases.list", Verb: "list", Input: nil, Output: nil},
		{Name: "kubernetes.things.get", Verb: "get", Input: obj(nil),
			Output: &Schema{Type: "array", Items: &Schema{IntOrString: true}}},
		{Name: "kubernetes.maps.get", Verb: "get", Input: obj(nil), OutputName: "3d map",
			Output: obj(map[string]*Schema{"data": {Type: "object", AdditionalProperties: obj(map[string]*Schema{"x": {}})}, "free": {}, "any": {Type: "object"}})},
		{Name: "kubernetes.events_events_k8s_io.list", Group: "events.k8s.io", Kind: "Event", Verb: "list", OutputName: "Event",
			Output: arr(obj(map[string]*Schema{"note": str(), "regarding": obj(map[string]*Schema{"name": str()})}))},
		{Name: "kubernetes.events.list", Kind: "Event", Verb: "list", OutputName: "Event",
			Output: arr(obj(map[string]*Schema{"message": str(), "involvedObject": obj(map[string]*Schema{"name": str()})}))},
	}
}

func TestDeclarationsShareTypes(t *testing.T) {
	got := Declarations([]*Operation{podsList, podsGet})
	for _, decl := range []string{"interface Pod ", "interface ObjectMeta "} {
		if n := strings.Count(got, decl); n != 1 {
			t.Errorf("%q declared %d times, want once:\n%s", decl, n, got)
		}
	}
	odd := Declarations(oddOperations())
	for _, want := range []string{"Promise<Event[]>", "Promise<EventCore[]>"} {
		if !strings.Contains(odd, want) {
			t.Errorf("clashing Event types: no %s in\n%s", want, odd)
		}
	}
}

// Hints as an adapter would publish them: which fields lead, which matter
// anywhere, and which paths a kind always shows.
var (
	testHints = &Hints{
		Leading:   []string{"apiVersion", "kind", "metadata", "name", "namespace", "allNamespaces", "type", "spec", "status"},
		Important: []string{"name", "namespace", "type", "status", "phase", "reason", "message", "ready", "replicas", "conditions", "image", "state"},
	}
	podHints = &Hints{Leading: testHints.Leading, Important: testHints.Important, Keep: []string{
		"spec.nodeName", "spec.containers.name", "spec.containers.image", "spec.containers.resources.limits",
		"status.phase", "status.conditions.type", "status.conditions.status", "status.containerStatuses.name",
		"status.containerStatuses.restartCount", "status.containerStatuses.state.waiting.reason",
		"status.containerStatuses.lastState.terminated.reason",
	}}
	deploymentHints = &Hints{Leading: testHints.Leading, Important: testHints.Important, Keep: []string{
		"spec.replicas", "spec.template.spec.containers.image", "status.availableReplicas", "status.conditions.type",
	}}
)

// TestDeclarationForms: unions, tuples, nullable values and constants as
// TypeScript.
func TestDeclarationForms(t *testing.T) {
	num := &Schema{Type: "number"}
	path := obj(map[string]*Schema{"path": str()}, "path")
	for _, c := range []struct {
		name    string
		in, out *Schema
		want    string // the operation's line
		types   string // the lines after the block
	}{
		{name: "union", in: obj(map[string]*Schema{"src": {AnyOf: []*Schema{str(), path}}}, "src"),
			want: "read(input: { src: string | { path: string } }): Promise<unknown>;"},
		{name: "union with shared properties", in: obj(map[string]*Schema{"src": {Type: "object", Properties: map[string]*Schema{"mode": str()},
			AnyOf: []*Schema{{Properties: map[string]*Schema{"path": str()}, Required: []string{"path"}}, {Properties: map[string]*Schema{"url": str()}, Required: []string{"url"}}}}}),
			want: "read(input?: { src?: { path: string; mode?: string } | { url: string; mode?: string } }): Promise<unknown>;"},
		{name: "input union", in: &Schema{AnyOf: []*Schema{path, obj(map[string]*Schema{"url": str()}, "url")}},
			want: "read(input: { path: string } | { url: string }): Promise<unknown>;"},
		{name: "union of equal forms", in: obj(map[string]*Schema{"n": {AnyOf: []*Schema{integer(), num}}}),
			want: "read(input?: { n?: number }): Promise<unknown>;"},
		{name: "union with any", in: obj(map[string]*Schema{"n": {AnyOf: []*Schema{str(), {}}}}),
			want: "read(input?: { n?: unknown }): Promise<unknown>;"},
		{name: "array of unions", in: obj(map[string]*Schema{"xs": arr(&Schema{AnyOf: []*Schema{str(), path}})}),
			want: "read(input?: { xs?: (string | { path: string })[] }): Promise<unknown>;"},
		{name: "nullable", in: obj(map[string]*Schema{"n": {Type: "string", Nullable: true}, "o": {Type: "object", Properties: map[string]*Schema{"a": str()}, Nullable: true}}),
			want: "read(input?: { n?: string | null; o?: { a?: string } | null }): Promise<unknown>;"},
		{name: "array of nullable", in: obj(map[string]*Schema{"xs": arr(&Schema{Type: "string", Nullable: true})}),
			want: "read(input?: { xs?: (string | null)[] }): Promise<unknown>;"},
		{name: "nullable any", in: obj(map[string]*Schema{"x": {Nullable: true}}),
			want: "read(input?: { x?: unknown }): Promise<unknown>;"},
		{name: "tuple", in: obj(map[string]*Schema{"at": {Type: "array", PrefixItems: []*Schema{str(), num}}}),
			want: "read(input?: { at?: [string, number] }): Promise<unknown>;"},
		{name: "tuple with rest", in: obj(map[string]*Schema{"at": {Type: "array", PrefixItems: []*Schema{str()}, Items: &Schema{AnyOf: []*Schema{str(), num}}}}),
			want: "read(input?: { at?: [string, ...(string | number)[]] }): Promise<unknown>;"},
		{name: "enums and constants", in: obj(map[string]*Schema{"mode": enum("r", "w"), "op": enum("add"), "v": {Enum: []any{1.0, "x", nil}}}),
			want: `read(input?: { mode?: "r" | "w"; op?: "add"; v?: 1 | "x" | null }): Promise<unknown>;`},
		{name: "output union", out: &Schema{AnyOf: []*Schema{str(), path}},
			want: "read(): Promise<string | { path: string }>;"},
		{name: "output nullable", out: &Schema{Type: "object", Properties: map[string]*Schema{"a": str()}, Nullable: true},
			want: "read(): Promise<FilesReadResult | null>;", types: "interface FilesReadResult { a?: string }\n"},
		{name: "output union in a result", out: obj(map[string]*Schema{"src": {AnyOf: []*Schema{path, obj(map[string]*Schema{"url": str()})}}}),
			want: "read(): Promise<FilesReadResult>;", types: "interface FilesReadResult { src?: { path: string } | { url?: string } }\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := &Operation{Name: "files.read", Provider: "files", Verb: "read", Input: c.in, Output: c.out}
			got := Declaration(op)
			tstest.Parse(t, got)
			want := "declare const tools: {\n  files: {\n    " + c.want + "\n  };\n};\n" + c.types
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Declaration (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompleteDeclarationForms: the type check's declarations name each
// object form of a union and parse.
func TestCompleteDeclarationForms(t *testing.T) {
	op := &Operation{Name: "files.read", Provider: "files", Verb: "read",
		Output: obj(map[string]*Schema{"src": {Nullable: true, AnyOf: []*Schema{obj(map[string]*Schema{"path": str()}, "path"), obj(map[string]*Schema{"url": str()})}},
			"at": {Type: "array", PrefixItems: []*Schema{obj(map[string]*Schema{"line": integer()})}}})}
	got := NewDeclarer(&DeclarerOptions{Complete: true}).Declarations([]*Operation{op})
	tstest.Parse(t, got)
	want := `declare const tools: {
  files: {
    read(): Promise<FilesReadResult>;
  };
};
interface FilesReadResultAt { line?: number }
interface FilesReadResultSrc { path: string }
interface FilesReadResultSrc3 { url?: string }
interface FilesReadResult { at?: [FilesReadResultAt]; src?: FilesReadResultSrc | FilesReadResultSrc3 | null }
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("complete declarations (-want +got):\n%s", diff)
	}
}

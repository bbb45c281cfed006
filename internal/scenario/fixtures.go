package scenario

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

//go:embed fixtures
var fixturesFS embed.FS

// demoDir holds the demo scenario's fixtures: Kubernetes objects in *.yaml
// (status included, written through the status subresource) and container
// logs in logs.yaml.
const demoDir = "fixtures/demo"

// objects is everything a scenario creates, grouped by kind in creation
// order.
type objects struct {
	namespaces  []*corev1.Namespace
	crds        []*unstructured.Unstructured
	configMaps  []*corev1.ConfigMap
	secrets     []*corev1.Secret
	services    []*corev1.Service
	slices      []*discoveryv1.EndpointSlice
	deployments []*appsv1.Deployment
	replicaSets []*appsv1.ReplicaSet // derived from deployments and pods
	pods        []*corev1.Pod
	custom      []*unstructured.Unstructured // instances of the CRDs
	events      []*corev1.Event
	logs        []containerLogs
}

// containerLogs is one entry of logs.yaml.
type containerLogs struct {
	Namespace string   `json:"namespace"`
	Pod       string   `json:"pod"`
	Container string   `json:"container"`
	Current   []string `json:"current"`
	Previous  []string `json:"previous"`
}

// loadFixtures reads every fixture file of dir in name order.
func loadFixtures(fsys fs.FS, dir string) (*objects, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && path.Ext(e.Name()) == ".yaml" {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	objs := &objects{}
	for _, name := range names {
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if name == "logs.yaml" {
			var logs []containerLogs
			if err := yaml.UnmarshalStrict(b, &logs); err != nil {
				return nil, fmt.Errorf("scenario: %s: %w", name, err)
			}
			objs.logs = append(objs.logs, logs...)
			continue
		}
		if err := objs.decodeFile(b); err != nil {
			return nil, fmt.Errorf("scenario: %s: %w", name, err)
		}
	}
	return objs, nil
}

// decodeFile decodes a multi-document YAML file of Kubernetes objects.
func (o *objects) decodeFile(b []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := o.decode(doc); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
	}
}

// decodeInto appends a new T to list and decodes the document into it.
func decodeInto[T any](list *[]*T, strict func(any) error) error {
	v := new(T)
	*list = append(*list, v)
	return strict(v)
}

func (o *objects) decode(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	if tm.Kind == "" {
		return nil // only comments
	}
	strict := func(v any) error { return yaml.UnmarshalStrict(doc, v) }
	switch tm.GroupVersionKind().GroupKind().String() {
	case "Namespace":
		return decodeInto(&o.namespaces, strict)
	case "ConfigMap":
		return decodeInto(&o.configMaps, strict)
	case "Secret":
		return decodeInto(&o.secrets, strict)
	case "Service":
		return decodeInto(&o.services, strict)
	case "EndpointSlice.discovery.k8s.io":
		return decodeInto(&o.slices, strict)
	case "Deployment.apps":
		return decodeInto(&o.deployments, strict)
	case "Pod":
		return decodeInto(&o.pods, strict)
	case "Event":
		return decodeInto(&o.events, strict)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &u.Object); err != nil {
		return err
	}
	if tm.Kind == "CustomResourceDefinition" {
		o.crds = append(o.crds, u)
	} else {
		o.custom = append(o.custom, u)
	}
	return nil
}

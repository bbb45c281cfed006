package scenario

import (
	"fmt"
	"hash/fnv"
	"io/fs"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// DefaultHealthyPods is the number of generated healthy pods in the demo.
const DefaultHealthyPods = 200

// app is one healthy workload the generator spreads pods over.
type app struct {
	namespace, name, image string
	port                   int32
	logs                   []string // current log lines of each pod
}

// healthyApps are the generated workloads; pod i belongs to
// healthyApps[i%len(healthyApps)].
var healthyApps = []app{
	{"shop", "frontend", "registry.example.com/shop/frontend:5.2.0", 8080, webLogs("frontend")},
	{"shop", "cart", "registry.example.com/shop/cart:2.3.1", 8080, webLogs("cart")},
	{"shop", "catalog", "registry.example.com/shop/catalog:1.14.0", 8080, webLogs("catalog")},
	{"shop", "search", "registry.example.com/shop/search:0.9.7", 9200, webLogs("search")},
	{"payments", "payments-gateway", "registry.example.com/payments/gateway:3.0.2", 8443, webLogs("payments-gateway")},
	{"payments", "fraud-check", "registry.example.com/payments/fraud-check:1.2.0", 9090, webLogs("fraud-check")},
	{"payments", "invoices", "registry.example.com/payments/invoices:2.7.4", 8080, webLogs("invoices")},
	{"monitoring", "prometheus", "quay.io/prometheus/prometheus:v3.1.0", 9090, []string{
		`ts=2026-11-22T08:00:00Z level=info msg="Server is ready to receive web requests."`,
		`ts=2026-11-22T10:00:00Z level=info component=tsdb msg="Head GC completed" duration=41ms`,
	}},
	{"monitoring", "alertmanager", "quay.io/prometheus/alertmanager:v0.28.0", 9093, []string{
		`ts=2026-11-22T08:00:00Z level=info msg="Listening on" address=[::]:9093`,
	}},
	{"monitoring", "grafana", "docker.io/grafana/grafana:11.4.0", 3000, []string{
		`logger=server t=2026-11-22T08:00:00Z level=info msg="HTTP Server Listen" address=[::]:3000`,
	}},
	{"monitoring", "node-exporter", "quay.io/prometheus/node-exporter:v1.8.2", 9100, []string{
		`ts=2026-11-22T08:00:00Z level=info msg="Listening on" address=[::]:9100`,
	}},
	{"monitoring", "loki", "docker.io/grafana/loki:3.3.0", 3100, []string{
		`level=info ts=2026-11-22T08:00:00Z caller=main.go:120 msg="Starting Loki"`,
	}},
	{"data", "postgres", "docker.io/library/postgres:17.2", 5432, []string{
		`2026-11-22 08:00:00.000 UTC [1] LOG:  database system is ready to accept connections`,
		`2026-11-22 10:00:00.000 UTC [77] LOG:  checkpoint complete: wrote 412 buffers (2.5%)`,
	}},
	{"data", "redis", "docker.io/library/redis:7.4", 6379, []string{
		`1:M 22 Nov 2026 08:00:00.000 * Ready to accept connections tcp`,
	}},
	{"data", "kafka", "docker.io/apache/kafka:3.9.0", 9092, []string{
		`[2026-11-22 08:00:00,000] INFO [KafkaServer id=0] started (kafka.server.KafkaServer)`,
	}},
	{"data", "zookeeper", "docker.io/library/zookeeper:3.9", 2181, []string{
		`2026-11-22 08:00:00,000 [myid:1] - INFO  [main:o.a.z.s.ZooKeeperServer@1234] - Started`,
	}},
}

func webLogs(name string) []string {
	return []string{
		fmt.Sprintf(`time=2026-11-22T08:00:00Z level=info msg="starting %s"`, name),
		`time=2026-11-22T08:00:01Z level=info msg="listening" addr=:8080`,
		`time=2026-11-22T10:15:00Z level=info msg="request" method=GET path=/healthz status=200 duration=1ms`,
	}
}

// generate adds n healthy pods spread over healthyApps, with a Deployment,
// Service and EndpointSlices per app. Every 13th pod has restarted once to
// three times (Running again, with lastState terminated) so "pods with
// restarts" is not just the broken ones.
func (o *objects) generate(n int, now time.Time) {
	counts := make([]int, len(healthyApps))
	podsOf := make([][]*corev1.Pod, len(healthyApps))
	for i := range n {
		a := i % len(healthyApps)
		p := healthyPod(healthyApps[a], i, counts[a], now)
		counts[a]++
		podsOf[a] = append(podsOf[a], p)
		o.pods = append(o.pods, p)
		o.logs = append(o.logs, containerLogs{
			Namespace: p.Namespace, Pod: p.Name, Container: healthyApps[a].name,
			Current: healthyApps[a].logs, Previous: previousLogs(p),
		})
	}
	for a, ap := range healthyApps {
		if counts[a] == 0 {
			continue
		}
		o.deployments = append(o.deployments, healthyDeployment(ap, int32(counts[a])))
		o.services = append(o.services, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: ap.name, Namespace: ap.namespace, Labels: map[string]string{"app": ap.name}},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": ap.name},
				Ports:    []corev1.ServicePort{{Name: "main", Port: ap.port}},
			},
		})
		o.slices = append(o.slices, endpointSlices(ap, podsOf[a])...)
	}
}

func healthyPod(a app, i, ordinal int, now time.Time) *corev1.Pod {
	start := metav1.NewTime(now.Add(-time.Duration(1+i%10) * 24 * time.Hour).Truncate(time.Second))
	ip := fmt.Sprintf("10.%d.%d.%d", 244+i/62500, (i/250)%250, i%250+2)
	cs := corev1.ContainerStatus{
		Name: a.name, Image: a.image, ImageID: "", Ready: true, Started: ptr.To(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}},
	}
	if i%13 == 7 {
		cs.RestartCount = int32(1 + (i/13)%3)
		restarted := metav1.NewTime(now.Add(-time.Duration(5+i%50) * time.Minute).Truncate(time.Second))
		cs.State.Running.StartedAt = restarted
		term := &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error",
			StartedAt: start, FinishedAt: metav1.NewTime(restarted.Add(-time.Second)),
		}
		if (i/13)%2 == 0 {
			term.ExitCode, term.Reason = 137, "OOMKilled"
		}
		cs.LastTerminationState = corev1.ContainerState{Terminated: term}
	}
	hash := templateHash(a.name)
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: start}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%s-%s", a.name, hash, suffix(ordinal)),
			Namespace: a.namespace,
			Labels:    map[string]string{"app": a.name, "pod-template-hash": hash},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container(a)}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			StartTime:         &start,
			PodIP:             ip,
			Conditions:        []corev1.PodCondition{cond(corev1.PodScheduled), cond(corev1.PodInitialized), cond(corev1.ContainersReady), cond(corev1.PodReady)},
			ContainerStatuses: []corev1.ContainerStatus{cs},
		},
	}
}

// previousLogs are the logs of the instance before a generated restart.
func previousLogs(p *corev1.Pod) []string {
	t := p.Status.ContainerStatuses[0].LastTerminationState.Terminated
	switch {
	case t == nil:
		return nil
	case t.Reason == "OOMKilled":
		return []string{"level=info msg=\"cache warm-up\" entries=1200000", "level=warn msg=\"memory usage high\" rss_mib=498"}
	default:
		return []string{"level=info msg=\"serving\"", "level=error msg=\"lost connection to upstream, exiting\""}
	}
}

func container(a app) corev1.Container {
	return corev1.Container{
		Name:  a.name,
		Image: a.image,
		Ports: []corev1.ContainerPort{{ContainerPort: a.port}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("128Mi"),
		}},
	}
}

func healthyDeployment(a app, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": a.name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: a.namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{container(a)}},
			},
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 1,
			Replicas:           replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
					Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", a.name+"-"+templateHash(a.name))},
			},
		},
	}
}

// endpointSlices lists pods' IPs, at most 100 per slice as the
// EndpointSlice controller does.
func endpointSlices(a app, pods []*corev1.Pod) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for start := 0; start < len(pods); start += 100 {
		end := min(start+100, len(pods))
		s := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name:      fmt.Sprintf("%s-%s", a.name, suffix(start/100)),
				Namespace: a.namespace,
				Labels: map[string]string{
					discoveryv1.LabelServiceName: a.name,
					discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
				},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("main"), Port: ptr.To(a.port), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
		for _, p := range pods[start:end] {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{p.Status.PodIP},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name},
			})
		}
		out = append(out, s)
	}
	return out
}

// nameAlphabet is the alphabet Kubernetes uses for generated name suffixes.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// templateHash is a stable pod-template-hash-like string for an app.
func templateHash(name string) string {
	h := fnv.New64a()
	h.Write([]byte(name))
	v := h.Sum64()
	b := make([]byte, 9)
	for i := range b {
		b[i] = nameAlphabet[v%uint64(len(nameAlphabet))]
		v /= uint64(len(nameAlphabet))
	}
	return string(b)
}

// suffix is a five-character name suffix, unique for each n < 27^5.
func suffix(n int) string {
	// Spread consecutive numbers so names don't look sequential.
	v := uint64(n) * 2654435761 % 14348907 // 27^5; the factor is coprime with it
	b := make([]byte, 5)
	for i := range b {
		b[i] = nameAlphabet[v%27]
		v /= 27
	}
	return string(b)
}

// imagesFile is the scenario's own part of the simulated registry.
const imagesFile = "fixtures/images.yaml"

// addImages gives the simulated registry the scenario's images: those of
// fixtures/images.yaml, and each generated app's, which serves on its port
// and prints its log lines.
func addImages(sink LogSink) error {
	b, err := fs.ReadFile(fixturesFS, imagesFile)
	if err != nil {
		return err
	}
	if err := sink.AddImages(b); err != nil {
		return err
	}
	type program struct {
		Listens []int32  `json:"listens"`
		Logs    []string `json:"logs"`
	}
	type image struct {
		Repository string             `json:"repository"`
		Tags       []string           `json:"tags"`
		Base       string             `json:"base"`
		Cmd        []string           `json:"cmd"`
		Programs   map[string]program `json:"programs"`
		Memory     string             `json:"memory"`
	}
	var images []image
	for _, a := range healthyApps {
		repo, tag, _ := strings.Cut(a.image, ":")
		images = append(images, image{Repository: repo, Tags: []string{tag}, Base: "alpine", Cmd: []string{a.name},
			Programs: map[string]program{a.name: {Listens: []int32{a.port}, Logs: a.logs}}, Memory: "32Mi"})
	}
	b, err = yaml.Marshal(map[string]any{"images": images})
	if err != nil {
		return err
	}
	return sink.AddImages(b)
}

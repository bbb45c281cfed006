package kubeapi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCreateSummary: what a create makes, kind by kind, as a reviewer
// needs it — a NetworkPolicy's rules, an autoscaler's bounds and target,
// a headless Service as headless, pods' replicas, resources and mounts.
func TestCreateSummary(t *testing.T) {
	for _, tc := range []struct {
		name, obj string
		want      []string
	}{
		{"network policy: default deny in, one rule out", `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","spec":{"podSelector":{"matchLabels":{"app":"db"}},
			"policyTypes":["Ingress","Egress"],"egress":[{"to":[{"namespaceSelector":{"matchLabels":{"team":"shop"}},"podSelector":{"matchLabels":{"app":"api"}}},{"ipBlock":{"cidr":"10.0.0.0/8","except":["10.1.0.0/16"]}}],"ports":[{"port":5432}]}]}}`,
			[]string{"applies to pods app=db", "ingress: denies all traffic in", "egress rule 1: allows to pods app=api in namespaces team=shop; addresses 10.0.0.0/8 except 10.1.0.0/16 on ports 5432/TCP"}},
		{"network policy: all pods, from anywhere", `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","spec":{"podSelector":{},"ingress":[{}]}}`,
			[]string{"applies to pods (all)", "ingress rule 1: allows from anywhere on all ports"}},
		{"autoscaler", `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"minReplicas":2,"maxReplicas":5,
			"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":80}}}]}}`,
			[]string{"scales Deployment web between 2 and 5 replicas on cpu 80% of requests"}},
		{"headless service", `{"apiVersion":"v1","kind":"Service","spec":{"clusterIP":"None","selector":{"app":"db"},"ports":[{"port":5432}]}}`,
			[]string{"service headless (clusterIP None: DNS names the pods, no virtual IP), selects pods app=db, ports 5432→5432/TCP"}},
		{"deployment", `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3,"template":{"spec":{"containers":[
			{"name":"web","image":"nginx:1.27","resources":{"requests":{"cpu":"50m","memory":"64Mi"},"limits":{"memory":"128Mi"}},"volumeMounts":[{"name":"config","mountPath":"/etc/web","readOnly":true}]},
			{"name":"side","image":"busybox"}],"volumes":[{"name":"config","configMap":{"name":"web-config"}}]}}}}`,
			[]string{"replicas 3", "containers: web (nginx:1.27) requests cpu 50m, memory 64Mi limits memory 128Mi mounts config at /etc/web (read-only); side (busybox) no resource requests or limits",
				"reads ConfigMap web-config: volume config"}},
		{"budget", `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{"minAvailable":2,"selector":{"matchLabels":{"app":"web"}}}}`,
			[]string{"minAvailable 2 of pods app=web"}},
		{"claim", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"fast","resources":{"requests":{"storage":"20Gi"}}}}`,
			[]string{"claims 20Gi of storage class fast, ReadWriteOnce"}},
		{"claim of the default class", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","spec":{"accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"1Gi"}}}}`,
			[]string{"claims 1Gi of the cluster's default storage class, ReadWriteMany"}},
		{"quota", `{"apiVersion":"v1","kind":"ResourceQuota","spec":{"hard":{"pods":"10","requests.cpu":"4"}}}`,
			[]string{"allows at most pods 10, requests.cpu 4"}},
		{"limit range", `{"apiVersion":"v1","kind":"LimitRange","spec":{"limits":[{"type":"Container","default":{"memory":"256Mi"},"max":{"cpu":"1"}}]}}`,
			[]string{"each container: default limit memory 256Mi; most cpu 1"}},
		{"config map: values, not only keys", `{"apiVersion":"v1","kind":"ConfigMap","data":{"mode":"fast","url":"http://db:5432"}}`,
			[]string{`data: mode = "fast", url = "http://db:5432"`}},
		{"ingress", `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","spec":{"rules":[{"host":"shop.example","http":{"paths":[{"path":"/api","pathType":"Prefix","backend":{"service":{"name":"api","port":{"number":80}}}}]}}]}}`,
			[]string{"routes shop.example/api to Service api:80"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CreateSummary(&unstructured.Unstructured{Object: obj(t, tc.obj)})
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

package scenario

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// deriveReplicaSets adds the ReplicaSets a deployment controller would have
// made: one per Deployment and pod-template-hash among the pods the
// Deployment selects, named <deployment>-<hash>, with the pods' images and
// ready counts. Pods get an ownerReference to their ReplicaSet and
// ReplicaSets one to their Deployment; the seeder fills in the UIDs.
func (o *objects) deriveReplicaSets() {
	for _, d := range o.deployments {
		sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
		byHash := map[string]*appsv1.ReplicaSet{}
		for _, p := range o.pods {
			hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
			if p.Namespace != d.Namespace || hash == "" || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			rs := byHash[hash]
			if rs == nil {
				rs = replicaSetFor(d, hash, p)
				byHash[hash] = rs
				o.replicaSets = append(o.replicaSets, rs)
			}
			rs.Status.Replicas++
			rs.Status.FullyLabeledReplicas++
			if podReady(p) {
				rs.Status.ReadyReplicas++
				rs.Status.AvailableReplicas++
			}
			rs.Spec.Replicas = ptr.To(rs.Status.Replicas)
			p.OwnerReferences = []metav1.OwnerReference{owner("ReplicaSet", rs.Name)}
		}
	}
}

func replicaSetFor(d *appsv1.Deployment, hash string, p *corev1.Pod) *appsv1.ReplicaSet {
	tmpl := *d.Spec.Template.DeepCopy()
	tmpl.Labels = withLabel(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	for i, c := range tmpl.Spec.Containers {
		for _, pc := range p.Spec.Containers {
			if pc.Name == c.Name {
				tmpl.Spec.Containers[i].Image = pc.Image
			}
		}
	}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			Labels:          tmpl.Labels,
			OwnerReferences: []metav1.OwnerReference{owner("Deployment", d.Name)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: withLabel(d.Spec.Selector.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey, hash)},
			Template: tmpl,
		},
		Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1},
	}
}

// owner is a controller reference whose UID the seeder fills in.
func owner(kind, name string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: map[string]string{"ReplicaSet": "apps/v1", "Deployment": "apps/v1"}[kind],
		Kind:       kind, Name: name,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

func withLabel(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for key, val := range m {
		out[key] = val
	}
	out[k] = v
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

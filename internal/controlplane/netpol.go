package controlplane

import (
	"context"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NetworkPolicies, enforced for the connections an exec's commands make,
// as a network plugin would: a pod selected by an Ingress policy takes
// connections only from the peers and ports one of those policies' rules
// allows; a pod selected by an Egress policy makes them only to such
// peers. A blocked connection times out (its packets are dropped), unlike
// a port nothing listens on, which is refused.

// endpoint is one side of a connection.
type endpoint struct {
	namespace string
	labels    map[string]string
	ip        string
	pod       *corev1.Pod // nil for the cluster DNS
}

// dnsEndpoint is the cluster's DNS server as policies see it.
var dnsEndpoint = endpoint{namespace: "kube-system", labels: map[string]string{"k8s-app": "kube-dns"}, ip: "10.0.0.10"}

func podEndpoint(p *corev1.Pod) endpoint {
	return endpoint{namespace: p.Namespace, labels: p.Labels, ip: p.Status.PodIP, pod: p}
}

// allowed says whether src may reach dst on port (protocol TCP unless
// udp).
func (c *clusterNet) allowed(ctx context.Context, src, dst endpoint, port int32, udp bool) bool {
	proto := corev1.ProtocolTCP
	if udp {
		proto = corev1.ProtocolUDP
	}
	egress, err := c.policies(ctx, src, networkingv1.PolicyTypeEgress)
	if err != nil {
		return true
	}
	if len(egress) > 0 && !slices.ContainsFunc(egress, func(p networkingv1.NetworkPolicy) bool {
		return slices.ContainsFunc(p.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
			return c.peersMatch(ctx, p.Namespace, r.To, dst) && portsMatch(r.Ports, dst, port, proto)
		})
	}) {
		return false
	}
	ingress, err := c.policies(ctx, dst, networkingv1.PolicyTypeIngress)
	if err != nil {
		return true
	}
	return len(ingress) == 0 || slices.ContainsFunc(ingress, func(p networkingv1.NetworkPolicy) bool {
		return slices.ContainsFunc(p.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool {
			return c.peersMatch(ctx, p.Namespace, r.From, src) && portsMatch(r.Ports, dst, port, proto)
		})
	})
}

// policies are the policies of e's namespace that select e for typ.
func (c *clusterNet) policies(ctx context.Context, e endpoint, typ networkingv1.PolicyType) ([]networkingv1.NetworkPolicy, error) {
	if e.pod == nil && e.namespace == dnsEndpoint.namespace {
		return nil, nil // the DNS server takes every query
	}
	list, err := c.n.cs.NetworkingV1().NetworkPolicies(e.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []networkingv1.NetworkPolicy
	for _, p := range list.Items {
		types := p.Spec.PolicyTypes
		if len(types) == 0 {
			types = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
			if len(p.Spec.Egress) > 0 {
				types = append(types, networkingv1.PolicyTypeEgress)
			}
		}
		if !slices.Contains(types, typ) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err == nil && sel.Matches(labels.Set(e.labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

// peersMatch: no peers match everyone; else one peer matches e.
func (c *clusterNet) peersMatch(ctx context.Context, policyNS string, peers []networkingv1.NetworkPolicyPeer, e endpoint) bool {
	if len(peers) == 0 {
		return true
	}
	for _, peer := range peers {
		if peer.IPBlock != nil {
			if ipIn(e.ip, peer.IPBlock) {
				return true
			}
			continue
		}
		if peer.NamespaceSelector != nil {
			nsSel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
			if err != nil || !nsSel.Matches(labels.Set(c.namespaceLabels(ctx, e.namespace))) {
				continue
			}
		} else if e.namespace != policyNS {
			continue
		}
		if peer.PodSelector != nil {
			podSel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
			if err != nil || !podSel.Matches(labels.Set(e.labels)) {
				continue
			}
		}
		return true
	}
	return false
}

func (c *clusterNet) namespaceLabels(ctx context.Context, name string) map[string]string {
	ns, err := c.n.cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return map[string]string{"kubernetes.io/metadata.name": name}
	}
	return ns.Labels
}

func ipIn(ip string, b *networkingv1.IPBlock) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	in := func(cidr string) bool {
		p, err := netip.ParsePrefix(cidr)
		return err == nil && p.Contains(a)
	}
	return in(b.CIDR) && !slices.ContainsFunc(b.Except, in)
}

// portsMatch: no ports match every port; else one matches port (a
// number, a range, or the name of a port of dst's containers).
func portsMatch(ports []networkingv1.NetworkPolicyPort, dst endpoint, port int32, proto corev1.Protocol) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != proto || p.Protocol == nil && proto != corev1.ProtocolTCP {
			continue
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.Type == intstr.Int:
			end := p.Port.IntVal
			if p.EndPort != nil {
				end = *p.EndPort
			}
			if port >= p.Port.IntVal && port <= end {
				return true
			}
		case dst.pod != nil:
			for _, ctr := range dst.pod.Spec.Containers {
				if n, ok := containerPort(&ctr, *p.Port); ok && n == port {
					return true
				}
			}
		case dst.pod == nil && p.Port.StrVal == "dns":
			return true
		}
	}
	return false
}

package catalog

import "testing"

func TestUnservedMatches(t *testing.T) {
	u := Unserved{Name: "kubernetes.pods.portforward", Words: []string{"port forward", "portforward", "top"}}
	for q, want := range map[string]bool{
		"port-forward to a service": true, "PortForward": true, "how do I forward a port": false,
		"kubectl top pods": true, "stop the pods": false, "topology spread": false,
	} {
		if got := u.Matches(q); got != want {
			t.Errorf("Matches(%q) = %v, want %v", q, got, want)
		}
	}
}

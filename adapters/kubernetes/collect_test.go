package kubernetes

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCollectSegmentsAreUnique: names that differ only in case, '_' or '-'
// would collide in the sandbox, so they are qualified or numbered.
func TestCollectSegmentsAreUnique(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "events", Kind: "Event", Verbs: []string{"list"}}}},
		{GroupVersion: "events.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "events", Kind: "Event", Verbs: []string{"list"}}}},
		{GroupVersion: "x.io/v1", APIResources: []metav1.APIResource{
			{Name: "apiresources", Kind: "APIResource", Verbs: []string{"list"}},
			{Name: "foo-bars", Kind: "FooBar", Verbs: []string{"list"}},
			{Name: "foobars", Kind: "Foobar2", Verbs: []string{"list"}},
		}},
		{GroupVersion: "a-b.io/v1", APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Verbs: []string{"list"}}}},
		{GroupVersion: "a.b.io/v1", APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Verbs: []string{"list"}}}},
	}
	var got []string
	for _, r := range collect(lists, nil) {
		got = append(got, r.seg+" "+r.gvr.Group)
	}
	want := []string{
		"apiresources_x_io x.io", "events ", "events_events_k8s_io events.k8s.io", "foo-bars x.io",
		"foobars_x_io x.io", "widgets_a_b_io a-b.io", "widgets_a_b_io_2 a.b.io",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("segments (-want +got):\n%s", d)
	}
}

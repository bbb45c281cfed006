// Package helm implements Helm operations (helm.list, helm.status,
// helm.history, helm.get_values, helm.get_manifest, helm.get_notes,
// helm.template, helm.install, helm.upgrade, helm.rollback, helm.uninstall
// and helm.drift) on Helm's SDK (helm.sh/helm/v3/pkg/action).
//
// The adapter uses the same credentials as the Kubernetes adapter and
// reaches the cluster only through the bridge: its changes are previewed
// (Helm's server dry run, then a per-object account of what the release
// creates, updates and deletes) and judged by the bridge's policy like any
// other change, each object of a release by the rules that judge objects.
//
// Secret values never leave the adapter: Secrets in manifests keep their
// keys only, notes and error messages lose every value a rendered Secret
// holds, release values under secret-looking keys are redacted, and the
// release records Helm keeps (sh.helm.release.v1.* Secrets) are read by
// Helm only.
//
// helm.drift compares each object of a release with the server-side-apply
// dry run of its manifest over the live object ("predicted live", as Argo
// CD and Flux do), so server defaults never show as drift; fields set
// outside the release are found from the live object's managed fields.
package helm

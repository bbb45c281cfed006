declare const tools: {
  kubernetes: {
    widgets: {
      /** List widgets in a namespace or across all namespaces (demo.kubecode.io/v1alpha1). Returns a plain array; every page is fetched. */
      list(input?: { namespace?: string; allNamespaces?: boolean; fieldSelector?: string; labelSelector?: string; limit?: number }): Promise<Widget[]>;
    };
  };
};
interface Widget { metadata: ObjectMeta; apiVersion?: string; kind?: string; spec?: { size: "small" | "medium" | "large"; color?: string; replicas?: number }; status?: { phase?: string } }
interface ObjectMeta { name: string; namespace?: string; annotations?: Record<string, string>; creationTimestamp?: string; deletionTimestamp?: string; generation?: number; labels?: Record<string, string>; ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[]; resourceVersion?: string; uid?: string; [k: string]: unknown }

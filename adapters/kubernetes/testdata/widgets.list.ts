declare const tools: {
  kubernetes: {
    widgets: {
      /** List widgets of one namespace or all (demo.kubecode.io/v1alpha1): a plain array of every page. */
      list(input?: { namespace?: string; allNamespaces?: boolean; fieldSelector?: string; labelSelector?: string; limit?: number }): Promise<Widget[]>;
    };
  };
};
interface Widget { metadata: ObjectMeta; apiVersion?: string; kind?: string; spec?: { size: "small" | "medium" | "large"; color?: string; replicas?: number }; status?: { phase?: string } }
interface ObjectMeta { name: string; namespace?: string; annotations?: Record<string, string>; creationTimestamp?: string; deletionTimestamp?: string; labels?: Record<string, string>; ownerReferences?: { kind: string; name: string; controller?: boolean; [k: string]: unknown }[]; uid?: string; [k: string]: unknown }

declare const tools: {
  kubernetes: {
    pods: {
      /** List pods of one namespace or all (core/v1): a plain array of every page. */
      list(input?: { namespace?: string; allNamespaces?: boolean; fieldSelector?: string; labelSelector?: string; limit?: number }): Promise<Pod[]>;
      /** Get one pod by name (core/v1, namespaced). */
      get(input: { name: string; namespace?: string }): Promise<Pod>;
      /** A pod container's logs as text; previous: the last terminated container's. */
      logs(input: { name: string; namespace?: string; container?: string; previous?: boolean; sinceSeconds?: number; tailLines?: number; timestamps?: boolean }): Promise<string>;
    };
  };
};
interface Pod { metadata: ObjectMeta; apiVersion?: string; kind?: string; spec?: { containers: { name: string; image?: string; resources?: { limits?: Record<string, string>; requests?: Record<string, string>; [k: string]: unknown }; [k: string]: unknown }[]; activeDeadlineSeconds?: number; affinity?: { [k: string]: unknown }; automountServiceAccountToken?: boolean; dnsConfig?: { [k: string]: unknown }; dnsPolicy?: "ClusterFirst" | "ClusterFirstWithHostNet" | "Default" | "None"; enableServiceLinks?: boolean; nodeName?: string; restartPolicy?: "Always" | "Never" | "OnFailure"; serviceAccountName?: string; [k: string]: unknown }; status?: { allocatedResources?: Record<string, string>; conditions?: { type: string; status: string; lastTransitionTime?: string; message?: string; observedGeneration?: number; reason?: string; [k: string]: unknown }[]; containerStatuses?: { name: string; ready: boolean; restartCount: number; image: string; lastState?: { terminated?: { exitCode: number; finishedAt?: string; reason?: string; [k: string]: unknown }; [k: string]: unknown }; state?: { running?: { startedAt?: string }; terminated?: { exitCode: number; reason?: string; [k: string]: unknown }; waiting?: { message?: string; reason?: string } }; [k: string]: unknown }[]; ephemeralContainerStatuses?: { name: string; ready: boolean; image: string; state?: { [k: string]: unknown }; [k: string]: unknown }[]; extendedResourceClaimStatus?: { [k: string]: unknown }; hostIP?: string; hostIPs?: { [k: string]: unknown }[]; message?: string; observedGeneration?: number; phase?: "Failed" | "Pending" | "Running" | "Succeeded" | "Unknown"; podIP?: string; reason?: string; startTime?: string; [k: string]: unknown } }
interface ObjectMeta { name: string; namespace?: string; annotations?: Record<string, string>; creationTimestamp?: string; deletionTimestamp?: string; labels?: Record<string, string>; ownerReferences?: { kind: string; name: string; controller?: boolean; [k: string]: unknown }[]; uid?: string; [k: string]: unknown }

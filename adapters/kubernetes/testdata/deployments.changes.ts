declare const tools: {
  kubernetes: {
    deployments: {
      /** Scale a deployment to a number of replicas (the scale subresource). A change: a dry run, planned, until approved. */
      scale(input: { name: string; replicas: number; namespace?: string }): Promise<Scale>;
      /** Patch fields of one deployment: keep the patch to the fields you mean to change. A change: a dry run, planned, until approved. */
      patch(input: { name: string; patch: unknown; namespace?: string; type?: "strategic" | "merge" | "json" }): Promise<Deployment>;
      /** Server-side apply of a deployment manifest (field manager kubecode): creates it, or sets exactly the fields the manifest names. Conflicts with other managers are reported, not forced. A change: a dry run, planned, until approved. */
      apply(input: { manifest: Record<string, unknown>; namespace?: string; force?: boolean }): Promise<Deployment>;
      /** Delete one deployment (graceful by default). A change: a dry run, planned, until approved. */
      delete(input: { name: string; namespace?: string; force?: boolean; gracePeriodSeconds?: number; propagationPolicy?: "Foreground" | "Background" | "Orphan" }): Promise<Deleted>;
      rollout: {
        /** Whether a deployment's rollout is done, as kubectl rollout status decides it (observed generation, updated and available replicas, progress deadline). Poll it with sleep. */
        status(input: { name: string; namespace?: string }): Promise<RolloutStatus>;
        /** A deployment's revisions, oldest first: ReplicaSet, images, change cause; current marks the live one. */
        history(input: { name: string; namespace?: string }): Promise<Revision[]>;
        /** Roll a deployment back to its previous revision (or toRevision), as kubectl rollout undo does. A change: a dry run, planned, until approved. */
        undo(input: { name: string; namespace?: string; toRevision?: number }): Promise<Deployment>;
      };
    };
  };
};
interface Scale { metadata: ObjectMeta; spec: { replicas?: number }; status?: { replicas?: number; selector?: string } }
interface Deployment { spec: { selector: { matchExpressions?: { key: string; operator: string; values?: string[] }[]; matchLabels?: Record<string, string> }; template: { metadata?: ObjectMeta; spec?: { containers: { name: string; image?: string; [k: string]: unknown }[]; activeDeadlineSeconds?: number; affinity?: { [k: string]: unknown }; automountServiceAccountToken?: boolean; dnsConfig?: { [k: string]: unknown }; dnsPolicy?: "ClusterFirst" | "ClusterFirstWithHostNet" | "Default" | "None"; enableServiceLinks?: boolean; ephemeralContainers?: { name: string; image?: string; [k: string]: unknown }[]; evictionResponders?: { name: string; [k: string]: unknown }[]; hostAliases?: { [k: string]: unknown }[]; hostIPC?: boolean; hostNetwork?: boolean; hostPID?: boolean; hostUsers?: boolean; hostname?: string; nodeName?: string; [k: string]: unknown } }; minReadySeconds?: number; paused?: boolean; progressDeadlineSeconds?: number; replicas?: number; revisionHistoryLimit?: number; strategy?: { type?: "Recreate" | "RollingUpdate"; rollingUpdate?: { maxSurge?: number | string; maxUnavailable?: number | string } } }; metadata: ObjectMeta; apiVersion?: string; kind?: string; status?: { availableReplicas?: number; collisionCount?: number; conditions?: { type?: string; status?: string; lastTransitionTime?: string; lastUpdateTime?: string; message?: string; reason?: string }[]; observedGeneration?: number; readyReplicas?: number; replicas?: number; terminatingReplicas?: number; unavailableReplicas?: number; updatedReplicas?: number } }
interface Deleted { kind: string; name: string; deleted: boolean; namespace?: string; dryRun?: boolean }
interface RolloutStatus { done: boolean; failed: boolean; message: string; available?: number; desired?: number; generation?: number; observedGeneration?: number; ready?: number; updated?: number }
interface Revision { revision: number; replicaSet: string; images: string[]; created: string; current: boolean; changeCause?: string }
interface ObjectMeta { name: string; namespace?: string; annotations?: Record<string, string>; creationTimestamp?: string; deletionTimestamp?: string; labels?: Record<string, string>; ownerReferences?: { kind: string; name: string; controller?: boolean; [k: string]: unknown }[]; uid?: string; [k: string]: unknown }

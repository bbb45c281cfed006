declare const tools: {
  kubernetes: {
    events: {
      /** List events, the record of why things fail (BackOff, FailedScheduling, ...); involvedObject narrows to one object. */
      list(input?: { namespace?: string; allNamespaces?: boolean; fieldSelector?: string; involvedObject?: { kind?: string; name?: string; namespace?: string; uid?: string }; labelSelector?: string; limit?: number }): Promise<Event[]>;
    };
  };
};
interface Event { metadata: ObjectMeta; involvedObject: { apiVersion?: string; kind?: string; name?: string; namespace?: string; fieldPath?: string; resourceVersion?: string; uid?: string }; apiVersion?: string; kind?: string; type?: string; action?: string; count?: number; eventTime?: string; firstTimestamp?: string; lastTimestamp?: string; message?: string; reason?: string; related?: { apiVersion?: string; kind?: string; name?: string; namespace?: string; fieldPath?: string; resourceVersion?: string; uid?: string }; reportingComponent?: string; reportingInstance?: string; series?: { count?: number; lastObservedTime?: string }; source?: { component?: string; host?: string } }
interface ObjectMeta { name: string; namespace?: string; annotations?: Record<string, string>; creationTimestamp?: string; deletionTimestamp?: string; labels?: Record<string, string>; ownerReferences?: { kind: string; name: string; controller?: boolean; [k: string]: unknown }[]; uid?: string; [k: string]: unknown }

declare const tools: {
  kubernetes: {
    pods: {
      /** Read a pod container's logs as text (tailLines, sinceSeconds, previous terminated container). */
      logs(input: { name: string; namespace?: string; container?: string; previous?: boolean; sinceSeconds?: number; tailLines?: number; timestamps?: boolean }): Promise<string>;
    };
  };
};

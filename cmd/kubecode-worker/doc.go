// Command kubecode-worker is the process a kubecode server runs each
// script in: it serves executions over its standard input and output (the
// runtime package's worker protocol) until its input closes. It links the
// sandbox alone (esbuild and goja), no Kubernetes or Helm code and no
// credentials, so it starts in tens of milliseconds in ten megabytes,
// where a kubecode binary re-executed as a worker takes a hundred of each.
// The server finds it beside its own binary, by --worker-binary or
// $KUBECODE_WORKER_BINARY; `kubecode demo` builds it into the cache.
package main

// Command kubecode-worker is the process a kubecode server runs each
// script in: it serves executions over its standard input and output (the
// runtime package's worker protocol) until its input closes. It links the
// sandbox alone (esbuild and goja), no Kubernetes or Helm code and no
// credentials, so it starts in tens of milliseconds in ten megabytes,
// where a kubecode binary re-executed as a worker takes a hundred of each.
// The server finds it beside its own binary, by --worker-binary or
// $KUBECODE_WORKER_BINARY; `kubecode demo` builds it into the cache.
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/kubecode/kubecode/runtime"
)

func main() {
	limit, _ := strconv.ParseInt(os.Getenv(runtime.WorkerMemoryEnv), 10, 64)
	if err := runtime.ServeWorker(os.Stdin, os.Stdout, &runtime.WorkerOptions{MemoryLimit: limit}); err != nil {
		fmt.Fprintln(os.Stderr, "kubecode-worker:", err)
		os.Exit(1)
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/kubecode/kubecode/runtime"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if os.Getenv(runtime.WorkerEnv) != "" {
		// Re-executed as a script worker by the server's pool: serve
		// executions over stdin and stdout, nothing else.
		limit, _ := strconv.ParseInt(os.Getenv(runtime.WorkerMemoryEnv), 10, 64)
		if err := runtime.ServeWorker(os.Stdin, os.Stdout, &runtime.WorkerOptions{MemoryLimit: limit}); err != nil {
			fmt.Fprintln(os.Stderr, "kubecode worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	gcHeadroom(gcHeadroomBytes)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubecode:", err)
		os.Exit(1)
	}
}

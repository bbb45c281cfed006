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

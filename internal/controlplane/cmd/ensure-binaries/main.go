package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/kubecode/kubecode/internal/controlplane"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	bins, err := controlplane.EnsureBinaries(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, p := range []string{bins.Etcd, bins.KubeAPIServer, bins.KubeControllerManager, bins.KubeScheduler, bins.Kwok, bins.Tsgo} {
		fmt.Println(p)
	}
}

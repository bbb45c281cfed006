// Package refservers finds the MCP servers the upstream tests and the
// token benchmark connect to as upstreams: the Model Context Protocol's
// reference servers, which scripts/test installs from npm into the cache.
package refservers

import (
	"fmt"
	"os"
	"path/filepath"
)

// Version is the reference servers' npm version scripts/test installs.
const Version = "2026.8.31"

// Reference servers.
const (
	Everything = "server-everything"
	Filesystem = "server-filesystem"
)

// Dir is where scripts/test installs them, or $KUBECODE_REFSERVERS.
func Dir() string {
	if d := os.Getenv("KUBECODE_REFSERVERS"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "kubecode", "upstreams")
}

// Command is the command that runs a reference server over stdio, with
// args after it.
func Command(server string, args ...string) ([]string, error) {
	script := filepath.Join(Dir(), "node_modules", "@modelcontextprotocol", server, "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("the reference MCP server %s is not installed (scripts/test installs @modelcontextprotocol/%s@%s with npm): %w", server, server, Version, err)
	}
	return append([]string{"node", script}, args...), nil
}

package main

import (
	"runtime/debug"
	"strings"
)

// versionString says which kubecode this is: the version set at build
// time, else the module's version (go install …@v1.2.3), else the commit
// a local build was made from ("devel a0650ba3c1f2, modified", with the
// commit's time), as Go's build information records it.
func versionString() string {
	if version != "dev" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel (built without version control information)"
	}
	out := "devel " + rev[:min(12, len(rev))]
	if modified {
		out += ", modified"
	}
	if at != "" {
		out += ", committed " + at
	}
	return strings.TrimSpace(out)
}

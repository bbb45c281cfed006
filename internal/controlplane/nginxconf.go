package controlplane

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// nginx reads the server blocks its configuration includes
// (/etc/nginx/conf.d/*.conf, as the official image's nginx.conf does):
// the ports they listen on and the locations that answer with return,
// so that a ConfigMap mounted there changes what the simulated nginx
// serves, as it does on a real cluster. Everything else of a location
// (root, proxy_pass, try_files) serves as the image does.

// location is one location block that returns: "location = /readyz {
// return 200 'ok'; }".
type location struct {
	path  string
	exact bool
	code  int
	body  string
}

var (
	listenRE   = regexp.MustCompile(`(?m)^\s*listen\s+(?:[\w.\[\]:]*:)?(\d+)[^;]*;`)
	locationRE = regexp.MustCompile(`location\s+(=\s*|\^~\s*)?(/[^\s{]*)\s*\{([^{}]*)\}`)
	returnRE   = regexp.MustCompile(`return\s+(\d{3})(?:\s+("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^;]+))?\s*;`)
	commentRE  = regexp.MustCompile(`(?m)#.*$`)
)

// nginxConfig reads the .conf files under /etc/nginx/conf.d at t: the
// ports they listen on, and their locations that return. ok is false when
// there is none (the image's own default configuration then).
func (s *sim) nginxConfig(t time.Duration) (ports []int32, locs []location, ok bool) {
	for _, e := range s.fs.list(t, "/etc/nginx/conf.d") {
		if e.dir || !strings.HasSuffix(e.name, ".conf") {
			continue
		}
		ok = true
		conf := commentRE.ReplaceAllString(e.content, "")
		for _, m := range listenRE.FindAllStringSubmatch(conf, -1) {
			if n, err := strconv.ParseInt(m[1], 10, 32); err == nil && n > 0 && n < 65536 {
				ports = append(ports, int32(n))
			}
		}
		for _, m := range locationRE.FindAllStringSubmatch(conf, -1) {
			r := returnRE.FindStringSubmatch(m[3])
			if r == nil {
				continue
			}
			code, _ := strconv.Atoi(r[1])
			body := strings.TrimSpace(r[2])
			if len(body) >= 2 && (body[0] == '"' || body[0] == '\'') && body[len(body)-1] == body[0] {
				body = body[1 : len(body)-1]
			}
			locs = append(locs, location{path: m[2], exact: strings.HasPrefix(strings.TrimSpace(m[1]), "="), code: code, body: body})
		}
	}
	return ports, locs, ok
}

// returnFor is the location of locs that answers path, as nginx picks it
// (an exact match, else the longest prefix), or nil.
func returnFor(locs []location, path string) *location {
	var best *location
	for i := range locs {
		l := &locs[i]
		switch {
		case l.exact && l.path == path:
			return l
		case !l.exact && strings.HasPrefix(path, l.path) && (best == nil || len(l.path) > len(best.path)):
			best = l
		}
	}
	return best
}

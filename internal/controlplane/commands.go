package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"mvdan.cc/sh/v3/interp"
)

// The commands people type in kubectl exec, simulated: ls, env and
// printenv, and the network clients wget, curl, nc and nslookup, which
// reach the Services and pods of the simulated cluster (never the host).

// maxStdin bounds what a simulated command reads from its standard input.
const maxStdin = 1 << 20

// network is the cluster as a container's commands reach it.
type network interface {
	// resolve finds host as the pod's resolver would: a Service's name
	// (short, NAME.NS, NAME.NS.svc[.cluster.local]), a ClusterIP or a pod
	// IP. fqdn is the name it resolved ("" for an address).
	resolve(ctx context.Context, host string) (ip, fqdn string, err error)
	// connect reaches ip:port: the program listening there, or
	// errRefused.
	connect(ctx context.Context, ip string, port int32) (Program, error)
	// address is the pod's own IP, as a server it reaches sees it.
	address() string
}

var (
	errNoHost  = errors.New("no such host")
	errRefused = errors.New("connection refused")
	// errTimeout: a NetworkPolicy drops the packets.
	errTimeout = errors.New("connection timed out")
)

type stdinKey struct{}

// input is the standard input of the command running: its shell's (a
// pipe), else the exec's.
func (s *sim) input(ctx context.Context) io.Reader {
	if r, ok := ctx.Value(stdinKey{}).(io.Reader); ok && r != nil {
		return r
	}
	return s.stdin
}

// ls lists a directory of the container's files (-l long, -a ignored).
func (s *sim) ls(argv []string, stdout, stderr io.Writer) error {
	long := slices.ContainsFunc(argv[1:], func(a string) bool { return strings.HasPrefix(a, "-") && strings.Contains(a, "l") })
	dirs := operands(argv)
	if len(dirs) == 0 {
		dirs = []string{"/"}
	}
	code := 0
	for i, d := range dirs {
		now := s.now()
		if content, ok := s.fs.lookup(now, d); ok {
			s.lsLine(stdout, long, d, content)
			continue
		}
		if !s.fs.isDir(now, d) {
			fmt.Fprintf(stderr, "ls: %s: No such file or directory\n", d)
			code = 1
			continue
		}
		if len(dirs) > 1 {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "%s:\n", d)
		}
		for _, e := range s.fs.list(now, d) {
			if e.dir {
				if long {
					fmt.Fprintf(stdout, "drwxr-xr-x    2 root     root          4096 Jan  1 00:00 %s\n", e.name)
				} else {
					fmt.Fprintln(stdout, e.name)
				}
				continue
			}
			s.lsLine(stdout, long, e.name, e.content)
		}
	}
	return exitCode(code)
}

func (s *sim) lsLine(w io.Writer, long bool, name, content string) {
	if long {
		fmt.Fprintf(w, "-rw-r--r--    1 root     root      %8d Jan  1 00:00 %s\n", len(content), name)
		return
	}
	fmt.Fprintln(w, name)
}

// printenv prints the environment (env, printenv) or one variable's value.
func (s *sim) printenv(argv []string, stdout io.Writer) error {
	env := maps.Clone(s.p.env)
	if env == nil {
		env = map[string]string{}
	}
	env["HOSTNAME"], env["HOME"] = s.p.hostname, "/root"
	env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if names := operands(argv); baseName(argv[0]) == "printenv" && len(names) > 0 {
		code := 0
		for _, n := range names {
			v, ok := env[n]
			if !ok {
				code = 1
				continue
			}
			fmt.Fprintln(stdout, v)
		}
		return exitCode(code)
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(stdout, "%s=%s\n", k, env[k])
	}
	return nil
}

// fetch runs wget, curl or nslookup against the simulated cluster.
func (s *sim) fetch(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	switch baseName(argv[0]) {
	case "nslookup":
		return s.nslookup(ctx, argv, stdout)
	case "wget":
		return s.wget(ctx, argv, stdout, stderr)
	}
	return s.curl(ctx, argv, stdout, stderr)
}

// cmdArgs splits a command's arguments into single-letter flags (with the
// values of those in takes), long flags and operands.
type cmdArgs struct {
	flags    map[string]string // "q" → "", "O" → "-", "max-time" → "3"
	operands []string
}

func parseArgs(args []string, takes, longTakes string) cmdArgs {
	c := cmdArgs{flags: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			c.operands = append(c.operands, args[i+1:]...)
			return c
		case strings.HasPrefix(a, "--"):
			name, value, ok := strings.Cut(a[2:], "=")
			if !ok && slices.Contains(strings.Fields(longTakes), name) && i+1 < len(args) {
				i++
				value = args[i]
			}
			c.flags[name] = value
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				f := a[j : j+1]
				if strings.Contains(takes, f) {
					value := a[j+1:]
					if value == "" && i+1 < len(args) {
						i++
						value = args[i]
					}
					c.flags[f] = value
					break
				}
				c.flags[f] = ""
			}
		default:
			c.operands = append(c.operands, a)
		}
	}
	return c
}

func (c cmdArgs) has(names ...string) bool {
	for _, n := range names {
		if _, ok := c.flags[n]; ok {
			return true
		}
	}
	return false
}

func (c cmdArgs) value(names ...string) (string, bool) {
	for _, n := range names {
		if v, ok := c.flags[n]; ok {
			return v, true
		}
	}
	return "", false
}

// target is a URL as wget and curl take it ("web", "web:8080/x",
// "http://web.shop.svc.cluster.local/").
func target(raw string) (*url.URL, int32, error) {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return nil, 0, fmt.Errorf("bad URL %q", raw)
	}
	port := int32(80)
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 1 || n > 65535 {
			return nil, 0, fmt.Errorf("bad port in %q", raw)
		}
		port = int32(n)
	}
	return u, port, nil
}

// get makes one HTTP GET of u as the container would, as agent (the
// client's User-Agent); a server that logs its requests logs it.
func (s *sim) get(ctx context.Context, u *url.URL, port int32, agent string) (ip string, status int, body string, err error) {
	ip, _, err = s.net.resolve(ctx, u.Hostname())
	if err != nil {
		return "", 0, "", err
	}
	prog, err := s.net.connect(ctx, ip, port)
	if err != nil {
		return ip, 0, "", err
	}
	status, body = prog.answer(u.RequestURI())
	if prog.accessLog && prog.served != nil {
		// nginx's combined format, as its official image prints it.
		prog.served(fmt.Sprintf(`%s - - [%s] "GET %s HTTP/1.1" %d %d "-" "%s" "-"`,
			s.net.address(), time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700"), u.RequestURI(), status, len(body), agent))
	}
	return ip, status, body, nil
}

func statusText(code int) string {
	if code == 404 {
		return "404 Not Found"
	}
	return "200 OK"
}

// wget is busybox's: -q, -O FILE (- for stdout), -T, --spider.
func (s *sim) wget(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	a := parseArgs(argv[1:], "OTUYPeo", "output-document timeout user-agent header tries")
	quiet := a.has("q", "quiet")
	if len(a.operands) == 0 {
		fmt.Fprintln(stderr, "BusyBox v1.36.1 multi-call binary.\n\nUsage: wget [-cqS] [--spider] [-O FILE] [-o LOGFILE] [--header STR] [-T SEC] URL...")
		return interp.ExitStatus(1)
	}
	code := 0
	for _, raw := range a.operands {
		u, port, err := target(raw)
		if err != nil {
			fmt.Fprintf(stderr, "wget: %v\n", err)
			code = 1
			continue
		}
		ip, status, body, err := s.get(ctx, u, port, "Wget")
		switch {
		case errors.Is(err, errNoHost):
			fmt.Fprintf(stderr, "wget: bad address '%s'\n", u.Host)
			code = 1
			continue
		case errors.Is(err, errTimeout):
			fmt.Fprintln(stderr, "wget: download timed out")
			code = 1
			continue
		case err != nil:
			fmt.Fprintf(stderr, "wget: can't connect to remote host (%s): Connection refused\n", ip)
			code = 1
			continue
		}
		if !quiet {
			fmt.Fprintf(stderr, "Connecting to %s (%s:%d)\n", u.Host, ip, port)
		}
		if status >= 400 {
			fmt.Fprintf(stderr, "wget: server returned error: HTTP/1.1 %s\n", statusText(status))
			code = 1
			continue
		}
		if a.has("spider", "s") {
			if !quiet {
				fmt.Fprintln(stderr, "remote file exists")
			}
			continue
		}
		out, _ := a.value("O", "output-document")
		if out == "" {
			out = path.Base(u.Path)
			if out == "/" || out == "." || out == "" {
				out = "index.html"
			}
		}
		if out == "-" {
			if !quiet {
				fmt.Fprintln(stderr, "writing to stdout")
			}
			io.WriteString(stdout, body)
			continue
		}
		if !quiet {
			fmt.Fprintf(stderr, "saving to '%s'\n", out)
		}
		s.fs.write(s.now(), out, body, true)
		if !quiet {
			fmt.Fprintf(stderr, "'%s' saved\n", out)
		}
	}
	return exitCode(code)
}

// curl: -s, -S, -f, -o FILE, -w FORMAT (%{http_code}), -I, -i, -L, -m.
func (s *sim) curl(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	a := parseArgs(argv[1:], "owmHXdueATxr", "output write-out max-time connect-timeout header request data user user-agent retry")
	silent := a.has("s", "silent") && !a.has("S", "show-error")
	fail := func(code int, msg string) error {
		if !silent {
			fmt.Fprintf(stderr, "curl: (%d) %s\n", code, msg)
		}
		return interp.ExitStatus(uint8(code))
	}
	if len(a.operands) == 0 {
		fmt.Fprintln(stderr, "curl: try 'curl --help' or 'curl --manual' for more information")
		return interp.ExitStatus(2)
	}
	u, port, err := target(a.operands[0])
	if err != nil {
		return fail(3, "URL rejected: Malformed input to a URL function")
	}
	_, status, body, err := s.get(ctx, u, port, "curl/8.5.0")
	switch {
	case errors.Is(err, errNoHost):
		return fail(6, "Could not resolve host: "+u.Hostname())
	case errors.Is(err, errTimeout):
		return fail(28, "Connection timed out after 3001 milliseconds")
	case err != nil:
		return fail(7, fmt.Sprintf("Failed to connect to %s port %d after 0 ms: Couldn't connect to server", u.Hostname(), port))
	}
	head := fmt.Sprintf("HTTP/1.1 %s\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n", statusText(status), len(body))
	if a.has("f", "fail") && status >= 400 {
		return fail(22, fmt.Sprintf("The requested URL returned error: %d", status))
	}
	var out string
	switch {
	case a.has("I", "head"):
		out = head
	case a.has("i", "include"):
		out = head + body
	default:
		out = body
	}
	if file, ok := a.value("o", "output"); ok && file != "-" {
		if file != "/dev/null" {
			s.fs.write(s.now(), file, out, true)
		}
	} else {
		io.WriteString(stdout, out)
	}
	if w, ok := a.value("w", "write-out"); ok {
		w = strings.NewReplacer("%{http_code}", strconv.Itoa(status), "%{response_code}", strconv.Itoa(status), `\n`, "\n").Replace(w)
		io.WriteString(stdout, w)
	}
	return nil
}

// nslookup answers as busybox's does, from the cluster's DNS.
func (s *sim) nslookup(ctx context.Context, argv []string, stdout io.Writer) error {
	names := operands(argv)
	if len(names) == 0 {
		return interp.ExitStatus(1)
	}
	fmt.Fprint(stdout, "Server:\t\t10.0.0.10\nAddress:\t10.0.0.10:53\n\n")
	ip, fqdn, err := s.net.resolve(ctx, names[0])
	if errors.Is(err, errTimeout) {
		fmt.Fprintln(stdout, ";; connection timed out; no servers could be reached")
		return interp.ExitStatus(1)
	}
	if err != nil {
		fmt.Fprintf(stdout, "** server can't find %s: NXDOMAIN\n\n", names[0])
		return interp.ExitStatus(1)
	}
	if fqdn == "" {
		fqdn = names[0]
	}
	fmt.Fprintf(stdout, "Name:\t%s\nAddress: %s\n\n", fqdn, ip)
	return nil
}

// nc connects to host port: -z only checks (-v says so); otherwise the
// request read from stdin gets the program's HTTP answer.
func (s *sim) nc(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	a := parseArgs(argv[1:], "wpsiq", "")
	if len(a.operands) < 2 {
		fmt.Fprintln(stderr, "BusyBox v1.36.1 multi-call binary.\n\nUsage: nc [OPTIONS] HOST PORT  - connect")
		return interp.ExitStatus(1)
	}
	host := a.operands[0]
	port, err := strconv.ParseInt(a.operands[1], 10, 32)
	if err != nil || port < 1 || port > 65535 {
		fmt.Fprintf(stderr, "nc: bad port '%s'\n", a.operands[1])
		return interp.ExitStatus(1)
	}
	ip, _, err := s.net.resolve(ctx, host)
	if err != nil {
		fmt.Fprintf(stderr, "nc: bad address '%s'\n", host)
		return interp.ExitStatus(1)
	}
	prog, err := s.net.connect(ctx, ip, int32(port))
	if errors.Is(err, errTimeout) {
		fmt.Fprintln(stderr, "nc: timeout")
		return interp.ExitStatus(1)
	}
	if err != nil {
		fmt.Fprintf(stderr, "nc: %s (%s:%d): Connection refused\n", host, ip, port)
		return interp.ExitStatus(1)
	}
	if a.has("z") {
		if a.has("v") {
			fmt.Fprintf(stderr, "%s (%s:%d) open\n", host, ip, port)
		}
		return nil
	}
	in := s.input(ctx)
	if in == nil {
		return nil
	}
	req, _ := io.ReadAll(io.LimitReader(in, maxStdin))
	line, _, _ := strings.Cut(string(req), "\n")
	if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(f[len(f)-1], "HTTP/") {
		status, body := prog.answer(f[1])
		fmt.Fprintf(stdout, "HTTP/1.1 %s\r\nContent-Length: %d\r\n\r\n%s", statusText(status), len(body), body)
	}
	return nil
}

// texts are the contents a filter reads: its files, or its standard input
// when it names none. Files it cannot open are said on stderr (code 1;
// grep's is 2).
func (s *sim) texts(ctx context.Context, name string, files []string, stderr io.Writer) (out []string, names []string, failed bool) {
	if len(files) == 0 {
		in := s.input(ctx)
		if in == nil {
			return []string{""}, []string{"(standard input)"}, false
		}
		b, _ := io.ReadAll(io.LimitReader(in, maxStdin))
		return []string{string(b)}, []string{"(standard input)"}, false
	}
	for _, f := range files {
		content, ok := s.fs.lookup(s.now(), f)
		if !ok {
			fmt.Fprintf(stderr, "%s: %s: No such file or directory\n", name, f)
			failed = true
			continue
		}
		out, names = append(out, content), append(names, f)
	}
	return out, names, failed
}

// splitLines splits text into lines, each without its newline.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// headTail is head and tail: -n N, -N (10 lines by default), tail -n +N.
func (s *sim) headTail(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	name := baseName(argv[0])
	n, from := 10, false
	var files []string
	args := argv[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-n" && i+1 < len(args):
			i++
			a = "-n" + args[i]
			fallthrough
		case strings.HasPrefix(a, "-n"):
			v := a[2:]
			from = strings.HasPrefix(v, "+")
			k, err := strconv.Atoi(strings.TrimPrefix(v, "+"))
			if err != nil {
				fmt.Fprintf(stderr, "%s: invalid number '%s'\n", name, v)
				return interp.ExitStatus(1)
			}
			n = k
		case len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9':
			k, err := strconv.Atoi(a[1:])
			if err == nil {
				n = k
			}
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			files = append(files, a)
		}
	}
	texts, _, failed := s.texts(ctx, name, files, stderr)
	for _, t := range texts {
		lines := splitLines(t)
		switch {
		case name == "head":
			lines = lines[:min(n, len(lines))]
		case from:
			lines = lines[min(max(n-1, 0), len(lines)):]
		default:
			lines = lines[max(len(lines)-n, 0):]
		}
		for _, l := range lines {
			fmt.Fprintln(stdout, l)
		}
	}
	if failed {
		return interp.ExitStatus(1)
	}
	return nil
}

// grep: -i, -v, -c, -q, -n, -l, -w, -o, -E, -F, -e PATTERN; exit 0 on a
// match, 1 on none, 2 on an error.
func (s *sim) grep(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	a := parseArgs(argv[1:], "efm", "regexp file max-count")
	pattern, ok := a.value("e", "regexp")
	rest := a.operands
	if !ok {
		if len(rest) == 0 {
			fmt.Fprintln(stderr, "Usage: grep [OPTIONS] PATTERN [FILE]...")
			return interp.ExitStatus(2)
		}
		pattern, rest = rest[0], rest[1:]
	}
	expr := pattern
	if a.has("F", "fixed-strings") || baseName(argv[0]) == "fgrep" {
		expr = regexp.QuoteMeta(pattern)
	} else if !a.has("E", "extended-regexp") && baseName(argv[0]) != "egrep" {
		// Basic syntax: \| \( \) \+ \? are the operators; bare ones are
		// literal.
		expr = strings.NewReplacer(`\|`, `|`, `\(`, `(`, `\)`, `)`, `\+`, `+`, `\?`, `?`, `|`, `\|`, `(`, `\(`, `)`, `\)`, `+`, `\+`, `?`, `\?`).Replace(pattern)
	}
	if a.has("w", "word-regexp") {
		expr = `\b(?:` + expr + `)\b`
	}
	if a.has("i", "ignore-case") {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		fmt.Fprintf(stderr, "grep: bad regex '%s'\n", pattern)
		return interp.ExitStatus(2)
	}
	texts, names, failed := s.texts(ctx, "grep", rest, stderr)
	invert, many := a.has("v", "invert-match"), len(names) > 1
	matched := false
	for i, t := range texts {
		count := 0
		for j, l := range splitLines(t) {
			if re.MatchString(l) == invert {
				continue
			}
			matched, count = true, count+1
			if a.has("q", "quiet", "silent") || a.has("c", "count") || a.has("l", "files-with-matches") {
				continue
			}
			prefix := ""
			if many {
				prefix = names[i] + ":"
			}
			if a.has("n", "line-number") {
				prefix += strconv.Itoa(j+1) + ":"
			}
			if a.has("o", "only-matching") && !invert {
				for _, m := range re.FindAllString(l, -1) {
					fmt.Fprintln(stdout, prefix+m)
				}
				continue
			}
			fmt.Fprintln(stdout, prefix+l)
		}
		switch {
		case a.has("q", "quiet", "silent"):
		case a.has("l", "files-with-matches"):
			if count > 0 {
				fmt.Fprintln(stdout, names[i])
			}
		case a.has("c", "count"):
			if many {
				fmt.Fprintf(stdout, "%s:%d\n", names[i], count)
			} else {
				fmt.Fprintln(stdout, count)
			}
		}
	}
	switch {
	case failed && !(matched && a.has("q", "quiet", "silent")):
		return interp.ExitStatus(2)
	case !matched:
		return interp.ExitStatus(1)
	}
	return nil
}

// wc: -l, -w, -c (all three by default).
func (s *sim) wc(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	a := parseArgs(argv[1:], "", "")
	texts, names, failed := s.texts(ctx, "wc", a.operands, stderr)
	all := !a.has("l", "w", "c", "lines", "words", "bytes")
	for i, t := range texts {
		var cols []string
		if all || a.has("l", "lines") {
			cols = append(cols, fmt.Sprintf("%7d", strings.Count(t, "\n")))
		}
		if all || a.has("w", "words") {
			cols = append(cols, fmt.Sprintf("%7d", len(strings.Fields(t))))
		}
		if all || a.has("c", "bytes") {
			cols = append(cols, fmt.Sprintf("%7d", len(t)))
		}
		line := strings.Join(cols, " ")
		if len(a.operands) > 0 {
			line += " " + names[i]
		}
		fmt.Fprintln(stdout, line)
	}
	if failed {
		return interp.ExitStatus(1)
	}
	return nil
}

// dd copies bs×count bytes from if= to of=: without count from /dev/zero
// or /dev/urandom it runs until stopped, a core busy (a CPU burner);
// written into a file, the bytes count toward the container's memory (the
// page cache of its writable layer), which a memory limit below them ends
// in OOMKilled.
func (s *sim) dd(argv []string, stderr io.Writer) error {
	opts := map[string]string{}
	for _, a := range argv[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			opts[k] = v
		}
	}
	bs, err := ddSize(cmp.Or(opts["bs"], "512"))
	if err != nil {
		fmt.Fprintf(stderr, "dd: invalid number '%s'\n", opts["bs"])
		return interp.ExitStatus(1)
	}
	if opts["count"] == "" {
		if in := opts["if"]; in == "/dev/zero" || in == "/dev/urandom" || in == "/dev/random" {
			s.mu.Lock()
			s.busy = true
			s.mu.Unlock()
			return errForever
		}
	}
	count, err := strconv.ParseInt(cmp.Or(opts["count"], "0"), 10, 64)
	if err != nil || count < 0 {
		fmt.Fprintf(stderr, "dd: invalid number '%s'\n", opts["count"])
		return interp.ExitStatus(1)
	}
	if bs > 0 && count > (1<<40)/bs {
		fmt.Fprintln(stderr, "dd: count too large")
		return interp.ExitStatus(1)
	}
	n := bs * count
	if of := opts["of"]; of != "" && of != "/dev/null" {
		s.fs.write(s.now(), of, fmt.Sprintf("(%d bytes written by dd)", n), true)
		s.mu.Lock()
		s.memory += n
		s.mu.Unlock()
	}
	fmt.Fprintf(stderr, "%d+0 records in\n%d+0 records out\n%d bytes (%s) copied, 0.1 s\n", count, count, n, humanBytes(n))
	return nil
}

// ddSize reads 512, 4K, 1M, 1G (and kB, MB, GB as powers of 1000).
func ddSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"kB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"K", 1 << 10}, {"k", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = v, u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > 1<<40/mult {
		return 0, fmt.Errorf("invalid size")
	}
	return n * mult, nil
}

func humanBytes(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d B", n)
}

// startNet is the cluster as a container's own program reaches it: as it
// is when the program starts, each name resolved and each address reached
// once, however often a loop asks (the program's life is simulated at
// once, in simulated time). A server it reaches does not log the request:
// its log would show every request of the program's life at once.
type startNet struct {
	net network

	mu       sync.Mutex
	reached  bool
	waited   time.Duration // real time the cluster took to answer
	names    map[string]resolved
	services map[string]connected
}

type resolved struct {
	ip, fqdn string
	err      error
}

type connected struct {
	prog Program
	err  error
}

func (n *startNet) resolve(ctx context.Context, host string) (string, string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reached = true
	if r, ok := n.names[host]; ok {
		return r.ip, r.fqdn, r.err
	}
	start := time.Now()
	ip, fqdn, err := n.net.resolve(ctx, host)
	n.waited += time.Since(start)
	if n.names == nil {
		n.names = map[string]resolved{}
	}
	n.names[host] = resolved{ip, fqdn, err}
	return ip, fqdn, err
}

func (n *startNet) connect(ctx context.Context, ip string, port int32) (Program, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reached = true
	k := net.JoinHostPort(ip, strconv.Itoa(int(port)))
	if c, ok := n.services[k]; ok {
		return c.prog, c.err
	}
	start := time.Now()
	prog, err := n.net.connect(ctx, ip, port)
	n.waited += time.Since(start)
	prog.served = nil
	if n.services == nil {
		n.services = map[string]connected{}
	}
	n.services[k] = connected{prog, err}
	return prog, err
}

func (n *startNet) address() string { return n.net.address() }

// slow says whether the cluster's answers took a quarter of a script's
// time or more (false for nil).
func (n *startNet) slow() bool {
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.waited >= scriptTimeout/4
}

// used says whether the program reached the cluster (false for nil).
func (n *startNet) used() bool {
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.reached
}

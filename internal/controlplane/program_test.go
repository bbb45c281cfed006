package controlplane

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestImagesLookup(t *testing.T) {
	im := NewImages()
	tests := []struct {
		ref, want string // want: the repository found, "" when it cannot be pulled
	}{
		{"nginx", "docker.io/library/nginx"},
		{"nginx:1.27.3", "docker.io/library/nginx"},
		{"docker.io/library/nginx:1.29-alpine", "docker.io/library/nginx"},
		{"nginx:1.99", ""},
		// The tags k8s-ai-bench's tasks use.
		{"nginx:1.14", "docker.io/library/nginx"},
		{"nginx:1.14.2", "docker.io/library/nginx"},
		{"nginx:1.21", "docker.io/library/nginx"},
		{"nginx:1.22", "docker.io/library/nginx"},
		{"nginx:1.19-alpine", "docker.io/library/nginx"},
		{"python:3.9-slim-buster", "docker.io/library/python"},
		{"python:3.11-slim", "docker.io/library/python"},
		{"node:18-alpine", "docker.io/library/node"},
		{"mysql:8.0.36", "docker.io/library/mysql"},
		{"mysql:8.4.2", "docker.io/library/mysql"},
		{"mysql:5.7", "docker.io/library/mysql"},
		{"nginx:1.27.6", ""},
		{"ngnix:1.27", ""},
		{"nginx@sha256:" + fakeDigest("x"), "docker.io/library/nginx"},
		{"busybox:1.36.1", "docker.io/library/busybox"},
		{"registry.k8s.io/pause:3.10", "registry.k8s.io/pause"},
		{"Not A Reference", ""},
	}
	for _, tt := range tests {
		img, _ := im.Lookup(tt.ref)
		got := ""
		if img != nil {
			got = img.Repository
		}
		if got != tt.want {
			t.Errorf("Lookup(%q) = %q, want %q", tt.ref, got, tt.want)
		}
	}
	// An -alpine tag is built on Alpine: busybox's wget, no bash; the
	// other tags keep their base.
	for ref, want := range map[string][2]bool{"nginx:1.27-alpine": {true, false}, "nginx:alpine": {true, false}, "nginx:1.27": {false, true}, "node:18-alpine": {true, false}} {
		img, _ := im.Lookup(ref)
		if img == nil || img.has("wget") != want[0] || img.has("bash") != want[1] {
			t.Errorf("%s: wget %v, bash %v; want %v, %v", ref, img != nil && img.has("wget"), img != nil && img.has("bash"), want[0], want[1])
		}
	}
	if img, _ := im.Lookup("nginx:1.27-alpine"); img == nil || !img.has("nginx") || !img.has("curl") {
		t.Error("nginx:1.27-alpine lost its own programs and commands")
	}
	if err := im.Add([]byte("images:\n- {repository: shop/cart, tags: ['1'], base: none}\n")); err == nil {
		t.Error("Add accepted a repository that is not normalized")
	}
	if err := im.Add([]byte("images:\n- {repository: docker.io/shop/cart, tags: ['1.{0..2}'], base: none, cmd: [cart], programs: {cart: {listens: [8080]}}}\n")); err != nil {
		t.Fatal(err)
	}
	if img, _ := im.Lookup("shop/cart:1.2"); img == nil {
		t.Error("an added image is not found")
	}
}

// TestSimulate: what a container's program does, in simulated time.
func TestSimulate(t *testing.T) {
	im := NewImages()
	type result struct {
		StartError string
		Forever    bool
		Exit       int
		After      time.Duration
		Listens    []int32
		Lines      []string
		Unknown    string
	}
	tests := []struct {
		name, image   string
		command, args []string
		env           map[string]string
		want          result
	}{
		{"nginx default", "nginx:1.27", nil, nil, nil, result{Forever: true, Listens: []int32{80}, Lines: []string{
			"/docker-entrypoint.sh: Configuration complete; ready for start up", `[notice] 1#1: using the "epoll" event method`, "[notice] 1#1: start worker processes"}}},
		{"busybox default shell ends", "busybox:1.36", nil, nil, nil, result{}},
		{"exit code", "busybox:1.36", []string{"sh", "-c", "echo bye; exit 7"}, nil, nil, result{Exit: 7, Lines: []string{"bye"}}},
		{"false", "alpine:3.20", []string{"/bin/sh", "-c", "false"}, nil, nil, result{Exit: 1}},
		{"sleep then exit", "busybox:1.36", []string{"sh", "-c", "sleep 5 && exit 1"}, nil, nil, result{Exit: 1, After: 5 * time.Second}},
		{"set -e stops", "debian:12", []string{"bash", "-ec", "echo a; false; echo b"}, nil, nil, result{Exit: 1, Lines: []string{"a"}}},
		{"sleep forever", "busybox:1.36", []string{"sleep", "infinity"}, nil, nil, result{Forever: true}},
		{"loop with sleep runs", "busybox:1.36", []string{"sh", "-c", "while true; do echo tick; sleep 10; done"}, nil, nil,
			result{Forever: true, Lines: repeat("tick", maxLines)}},
		{"busy loop runs", "busybox:1.36", []string{"sh", "-c", "while :; do :; done"}, nil, nil, result{Forever: true}},
		{"command not found in the shell", "busybox:1.36", []string{"sh", "-c", "gunicorn app"}, nil, nil, result{Exit: 127, Lines: []string{"sh: gunicorn: not found"}}},
		{"binary not in the image", "nginx:1.27", []string{"gunicorn"}, nil, nil, result{StartError: `exec: "gunicorn": executable file not found in $PATH`}},
		{"distroless has no shell", "registry.k8s.io/pause:3.10", []string{"sh", "-c", "echo hi"}, nil, nil, result{StartError: `exec: "sh": executable file not found in $PATH`}},
		{"env and kubelet expansion", "busybox:1.36", []string{"sh", "-c", "echo $(GREETING) $NAME"}, nil, map[string]string{"GREETING": "hi", "NAME": "bob"},
			result{Lines: []string{"hi bob"}}},
		{"redis port flag", "redis:7.4", nil, []string{"--port", "6380"}, nil, result{Forever: true, Listens: []int32{6380}, Lines: []string{
			"1:C Redis is starting oO0OoO0OoO0Oo", "1:M * Server initialized", "1:M * Ready to accept connections tcp"}}},
		{"postgres needs a password", "postgres:17", nil, nil, nil, result{Exit: 1, Lines: []string{
			"Error: Database is uninitialized and superuser password is not specified.",
			"       You must specify POSTGRES_PASSWORD to a non-empty value for the",
			`       superuser. For example, "-e POSTGRES_PASSWORD=password" on "docker run".`}}},
		{"exec server from a script", "nginx:1.27", []string{"sh", "-c", "echo configuring; exec nginx -g 'daemon off;'"}, nil, nil, result{Forever: true, Listens: []int32{80}, Lines: []string{
			"configuring", "/docker-entrypoint.sh: Configuration complete; ready for start up", `[notice] 1#1: using the "epoll" event method`, "[notice] 1#1: start worker processes"}}},
		{"unknown output", "python:3.12", []string{"sh", "-c", "pip install x; sleep 1"}, nil, nil, result{After: time.Second, Unknown: "the output of pip is not simulated"}},
		{"growing variables stop", "busybox:1.36", []string{"sh", "-c", "a=x; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40; do a=$a$a; done; echo never"}, nil, nil,
			result{Forever: true, Unknown: "the script's variables grow past what is simulated"}},
		{"straight-line growth stops", "busybox:1.36", []string{"sh", "-c", "a=xxxxxxxxxxxxxxxx" + strings.Repeat("; a=$a$a", 40)}, nil, nil,
			result{Forever: true, Unknown: "the script's variables grow past what is simulated"}},
		{"exit status survives the guard", "busybox:1.36", []string{"sh", "-c", "(exit 3); echo $?; false; if true; then echo in; fi"}, nil, nil,
			result{Lines: []string{"3", "in"}}},
		{"files stay in the sandbox", "busybox:1.36", []string{"sh", "-c", "echo x > /etc/passwd; cat /etc/passwd; cat /etc/shadow"}, nil, nil,
			result{Exit: 1, Lines: []string{"x", "cat: can't open '/etc/shadow': No such file or directory"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, _ := im.Lookup(tt.image)
			if img == nil {
				t.Fatalf("no image %s", tt.image)
			}
			env := tt.env
			if env == nil {
				env = map[string]string{}
			}
			r := simulate(containerProc{image: img, argv: argvOf(img, tt.command, tt.args, env), env: env, hostname: "pod-1"})
			got := result{StartError: r.startError, Forever: r.forever, Exit: r.exit, After: r.after, Listens: r.listens, Unknown: r.unknown}
			if r.forever {
				got.After = 0 // how far a loop was followed
			}
			for _, l := range r.lines {
				got.Lines = append(got.Lines, l.text)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestExecProbeSeesFilesOverTime: the liveness example of the Kubernetes
// documentation — the file exists for 30 s, then is removed.
func TestExecProbeSeesFilesOverTime(t *testing.T) {
	img, _ := NewImages().Lookup("registry.k8s.io/busybox")
	if img == nil {
		img, _ = NewImages().Lookup("busybox:1.36")
	}
	p := containerProc{image: img, argv: []string{"/bin/sh", "-c", "touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600"}, env: map[string]string{}}
	r := simulate(p)
	for _, tc := range []struct {
		at   time.Duration
		code int
	}{{5 * time.Second, 0}, {29 * time.Second, 0}, {31 * time.Second, 1}, {300 * time.Second, 1}} {
		if code, out := probeExec(p, r.fs, tc.at, []string{"cat", "/tmp/healthy"}); code != tc.code {
			t.Errorf("probe at %s: exit %d (%q), want %d", tc.at, code, out, tc.code)
		}
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestExpandTag(t *testing.T) {
	got := expandTag("1.{25,26}.{0..1}-alpine")
	want := []string{"1.25.0-alpine", "1.25.1-alpine", "1.26.0-alpine", "1.26.1-alpine"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestSimulatePython: a container's Python program, as far as programs
// in a cluster go — it prints, sleeps, exits and raises as Python does,
// and what it does beyond that is said to be not simulated.
func TestSimulatePython(t *testing.T) {
	img, _ := NewImages().Lookup("python:3.12-slim")
	if img == nil {
		t.Fatal("no python image")
	}
	type result struct {
		Forever, Busy bool
		Exit          int
		After         time.Duration
		Lines         []string
		Unknown       string
	}
	const crashing = `import sys
import time
print("INFO: Starting crashloop test application...")
time.sleep(2)
print("ERROR: Unable to connect to database at db:5432")
sys.exit(1)`
	const missingEnv = `import os, time

def main():
    host = os.environ.get("DB_HOST")
    if not host:
        raise ValueError("DB_HOST is not set")
    while True:
        print(f"connected to {host}", flush=True)
        time.sleep(30)

if __name__ == "__main__":
    main()`
	tests := []struct {
		name string
		argv []string
		env  map[string]string
		want result
	}{
		{"prints, sleeps and exits", []string{"python", "-c", crashing}, nil,
			result{Exit: 1, After: 2 * time.Second, Lines: []string{"INFO: Starting crashloop test application...", "ERROR: Unable to connect to database at db:5432"}}},
		{"an exception nothing catches", []string{"python3", "-u", "-c", missingEnv}, nil,
			result{Exit: 1, Lines: []string{"Traceback (most recent call last):", `  File "<string>", line 12, in <module>`, `  File "<string>", line 6, in main`, "ValueError: DB_HOST is not set"}}},
		{"the same program, configured", []string{"python3", "-c", missingEnv}, map[string]string{"DB_HOST": "db"},
			result{Forever: true, Lines: repeat("connected to db", maxLines)}},
		{"a loop of f-strings and formats", []string{"python", "-c", "for i in range(3):\n    print(f'attempt {i+1}/3: {0.5*i:.2f}s', 'ok', sep=' - ')\nprint('done', file=sys.stderr)"}, nil,
			result{Lines: []string{"attempt 1/3: 0.00s - ok", "attempt 2/3: 0.50s - ok", "attempt 3/3: 1.00s - ok", "done"}}},
		{"a missing key", []string{"python", "-c", "import os\nprint(os.environ['API_KEY'])"}, nil,
			result{Exit: 1, Lines: []string{"Traceback (most recent call last):", `  File "<string>", line 2, in <module>`, "KeyError: 'API_KEY'"}}},
		{"sys.exit with a message", []string{"python", "-c", "import sys; sys.exit('config missing')"}, nil,
			result{Exit: 1, Lines: []string{"config missing"}}},
		{"exit 0", []string{"python", "-c", "print('bye'); exit(0)"}, nil, result{Lines: []string{"bye"}}},
		{"a busy loop runs", []string{"python", "-c", "while True:\n    pass"}, nil, result{Forever: true, Busy: true}},
		{"a loop of short sleeps runs, not busy", []string{"python", "-c", "import time\nwhile True:\n    time.sleep(0.0001)"}, nil, result{Forever: true}},
		{"a busy loop after a sleep", []string{"python", "-c", "import time\ntime.sleep(1)\nn = 0\nwhile True:\n    n += 1"}, nil, result{Forever: true, Busy: true}},
		{"growth stops", []string{"python", "-c", "l = []\nwhile True:\n    l.append('x' * 1000000)"}, nil,
			result{Forever: true, Unknown: "the Python program grows past what is simulated"}},
		{"what is not simulated says so", []string{"python", "-c", "try:\n    import flask\nexcept ImportError:\n    pass"}, nil,
			result{Forever: true, Unknown: "the Python program uses what is not simulated: got try, want primary expression"}},
		{"a module's work is not simulated", []string{"python", "-c", "import requests\nprint(requests.get('http://x').text)"}, nil,
			result{Forever: true, Unknown: "the Python program uses what is not simulated: undefined: requests"}},
		{"an interpreter without a program", []string{"python3"}, nil, result{}},
		{"arithmetic and small repetitions", []string{"python", "-c", "x = 3 * 4\nx *= 2\nprint(x, '-' * 3, [0] * 2, 1.5 * 2)"}, nil,
			result{Lines: []string{"24 --- [0, 0] 3.0"}}},
		{"a large repetition stops", []string{"python", "-c", "print('start')\nbig = 'x' * 900000000"}, nil,
			result{Forever: true, Lines: []string{"start"}, Unknown: "the Python program grows past what is simulated"}},
		{"a large repetition in place stops", []string{"python", "-c", "big = ['x']\nbig *= 900000000"}, nil,
			result{Forever: true, Unknown: "the Python program grows past what is simulated"}},
		{"doubling stops", []string{"python", "-c", "s = 'x' * 1000\nwhile True:\n    s = s + s"}, nil,
			result{Forever: true, Unknown: "the Python program grows past what is simulated"}},
		{"a large range stops", []string{"python", "-c", "l = list(range(100000000))"}, nil,
			result{Forever: true, Unknown: "the Python program grows past what is simulated"}},
		{"a computed replacement is not simulated", []string{"python", "-c", "s = 'ab'\nfor i in range(40):\n    s = s.replace('a', s)"}, nil,
			result{Forever: true, Unknown: "the Python program grows past what is simulated"}},
		{"a join of many references stops", []string{"python", "-c", "s = 'x' * 1000000\nl = []\nfor i in range(1000):\n    l.append(s)\nprint(len(','.join(l)))"}, nil,
			result{Forever: true, Unknown: "the Python program grows past what is simulated"}},
		{"printing a list of many references stops", []string{"python", "-c", "s = 'x' * 1000000\nl = []\nfor i in range(1000):\n    l.append(s)\nprint(l)"}, nil,
			result{Forever: true, Unknown: "the Python program grows past what is simulated"}},
		{"formats nested past the bound stop", []string{"python", "-c", "s = 'x' * 500000\na = '{}{}{}{}'.format(s, s, s, s)\nb = f'{a}{a}'"}, nil,
			result{Forever: true, Unknown: "the Python program grows past what is simulated"}},
		{"squaring an integer stops", []string{"python", "-c", "x = 3\nwhile True:\n    x = x * x"}, nil,
			result{Forever: true, Unknown: "the Python program grows past what is simulated"}},
		{"joins, formats and sums that fit", []string{"python", "-c", "names = ['a', 'b']\nprint(', '.join(names), 'n=%d' % len(names), '{}:{}'.format(*names), 'x' + '|', str([1, 'b']), 1 + 2)"}, nil,
			result{Lines: []string{"a, b n=2 a:b x| [1, \"b\"] 3"}}},
		{"a literal replacement runs", []string{"python", "-c", "print('a-b'.replace('-', '+'))"}, nil, result{Lines: []string{"a+b"}}},
		{"the simulation's own builtins called by hand", []string{"python", "-c", "__binop__(1, 2, 3)"}, nil,
			result{Exit: 1, Lines: []string{"Traceback (most recent call last):", `  File "<string>", line 1, in <module>`, `RuntimeError: __binop__: no operator ""`}}},
		{"the simulation's own builtins called by hand, again", []string{"python", "-c", "__method__('x', 1)"}, nil,
			result{Exit: 1, Lines: []string{"Traceback (most recent call last):", `  File "<string>", line 1, in <module>`, "RuntimeError: __method__: the method's name must be a string"}}},
		{"printing many references at once stops", []string{"python", "-c", "big = 'a' * 1000000\nlst = [big] * 1000\nprint(*lst)"}, nil,
			result{Forever: true, Unknown: "the Python program grows past what is simulated"}},
		{"a checked method taken without a call", []string{"python", "-c", "j = ''.join\nprint(j(['a']))"}, nil,
			result{Forever: true, Unknown: "the Python program uses what is not simulated: .join taken without a call"}},
		{"getattr of a checked method", []string{"python", "-c", "j = getattr('', 'join')"}, nil,
			result{Forever: true, Unknown: "the Python program uses what is not simulated: getattr of .join"}},
		{"a zip of many columns stops", []string{"python", "-c", "l = list(range(1000))\nz = zip(*([l] * 2000))"}, nil,
			result{Forever: true, Unknown: "the Python program grows past what is simulated"}},
		{"+= grows a list in place, by any iterable", []string{"python", "-c", "a = [1]\nb = a\nb += (2, 3)\nb += range(4, 5)\nprint(a)"}, nil,
			result{Lines: []string{"[1, 2, 3, 4]"}}},
		{"a raised message that says has no", []string{"python", "-c", "raise KeyError('user has no role')"}, nil,
			result{Exit: 1, Lines: []string{"Traceback (most recent call last):", `  File "<string>", line 1, in <module>`, "KeyError: user has no role"}}},
		{"an import before a statement with a hash", []string{"python", "-c", "import os; print('#1 item', repr('x'), f'{1!r}')"}, nil,
			result{Lines: []string{`#1 item "x" 1`}}},
		{"odd arguments fail as Python would", []string{"python", "-c", "import random\nprint(random.randint(-9223372036854775808, 9223372036854775807))\n''.join()"}, nil,
			result{Exit: 1, Lines: []string{"-9223372036854775808", "Traceback (most recent call last):", `  File "<string>", line 3, in <module>`, "RuntimeError: join: got 0 arguments, want 1"}}},
		{"a range is lazy", []string{"python", "-c", "import time\nfor i in range(1000000000):\n    time.sleep(3600)"}, nil, result{Forever: true}},
		{"recursion is not simulated", []string{"python", "-c", "def f(n):\n    return f(n + 1)\nf(0)"}, nil,
			result{Forever: true, Unknown: "the Python program uses what is not simulated: function f called recursively"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env == nil {
				env = map[string]string{}
			}
			r := simulate(containerProc{image: img, argv: tt.argv, env: env, hostname: "pod-1"})
			got := result{Forever: r.forever, Busy: r.busy, Exit: r.exit, After: r.after, Unknown: r.unknown}
			if r.forever {
				got.After = 0
			}
			for _, l := range r.lines {
				got.Lines = append(got.Lines, l.text)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

package render

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A render runs untrusted templates and kustomizations, which can allocate without
// bound (`{{ repeat 100000000000 "x" }}`) or loop until killed; Go can neither
// recover from an out-of-memory nor stop a running template. So every render runs
// in a child process: the binary that imports this package, started again with
// childEnv set. The init below turns such a process into a render worker before
// main (or a test's TestMain) runs, so the CLI, the server, and every package's
// test binary can spawn children without wiring of their own.
//
// The parent sets the child's limits with prlimit before sending it the request,
// so the kernel enforces them whatever the child does: memory (RLIMIT_DATA,
// Options.MaxMemoryBytes), CPU time (RLIMIT_CPU, Options.MaxCPUTime),
// no core dumps and no files written. The child runs in its own process group,
// which the parent kills on the wall-clock timeout (Options.Timeout) or when its
// context ends, and which the kernel kills if the parent dies.
//
// Protocol: the parent writes one JSON childRequest on the child's stdin; the
// child writes one JSON childResult on stdout and exits. Its stderr is kept (the
// last few KiB) only to tell what stopped it; it is never shown, since it may
// quote template output.

// childEnv marks a process started as a render child.
const childEnv = "DRIFTPREVIEW_RENDER_CHILD"

func init() {
	if os.Getenv(childEnv) != "1" {
		return
	}
	os.Exit(childMain(os.Stdin, os.Stdout))
}

type childRequest struct {
	Root   string  `json:"root"`
	Target string  `json:"target"`
	Opts   Options `json:"opts"`
}

type childResult struct {
	Objects []childObject `json:"objects,omitempty"`
	Notes   []string      `json:"notes,omitempty"`
	Error   *childError   `json:"error,omitempty"`
}

type childObject struct {
	Key    ObjectKey `json:"key"`
	Source string    `json:"source"`
	// HashSuffix is Object.HashSuffix, the generator hash mark of the render.
	HashSuffix string         `json:"hashSuffix,omitempty"`
	Obj        map[string]any `json:"obj"`
}

type childError struct {
	Render      bool   `json:"render"`                // an *Error (else a plain error)
	Unavailable bool   `json:"unavailable,omitempty"` // an *Unavailable inside it
	File        string `json:"file,omitempty"`
	Line        int    `json:"line,omitempty"`
	Msg         string `json:"msg"`
}

// childMain is the child's whole life: read the request, render, answer.
func childMain(in io.Reader, out io.Writer) int {
	var req childRequest
	dec := json.NewDecoder(io.LimitReader(in, 64<<20))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		fmt.Fprintf(os.Stderr, "render child: reading the request: %v\n", err)
		return 3
	}
	req.Opts.Helm.Values, _ = numbers(req.Opts.Helm.Values).(map[string]any)
	if req.Opts.MaxMemoryBytes > 0 {
		// Let the collector work hard before the kernel's limit makes an
		// allocation fatal; runtime metadata and C memory count there too.
		debug.SetMemoryLimit(req.Opts.MaxMemoryBytes * 3 / 4)
	}
	set, err := renderLocal(context.Background(), req.Root, req.Target, req.Opts)
	var res childResult
	if err != nil {
		res.Error = &childError{Msg: err.Error()}
		if re, ok := errors.AsType[*Error](err); ok {
			res.Error = &childError{Render: true, File: re.File, Line: re.Line, Msg: re.Err.Error()}
		}
		if _, ok := IsUnavailable(err); ok {
			res.Error.Unavailable = true
		}
	} else {
		res.Notes = set.Notes
		res.Objects = make([]childObject, len(set.Objects))
		for i, o := range set.Objects {
			res.Objects[i] = childObject{Key: o.Key, Source: o.Source, HashSuffix: o.HashSuffix, Obj: o.Obj.Object}
		}
	}
	w := bufio.NewWriterSize(out, 1<<16)
	if err := json.NewEncoder(w).Encode(res); err != nil {
		fmt.Fprintf(os.Stderr, "render child: writing the result: %v\n", err)
		return 3
	}
	if err := w.Flush(); err != nil {
		return 3
	}
	return 0
}

// renderChild runs one render in a child process with opts' limits.
func renderChild(ctx context.Context, root, target string, opts Options) (ObjectSet, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return ObjectSet{}, fmt.Errorf("rendering %s: resolving root %s: %w", target, root, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return ObjectSet{}, fmt.Errorf("rendering %s: finding this program to start the render process: %w", target, err)
	}
	req, err := json.Marshal(childRequest{Root: absRoot, Target: target, Opts: opts})
	if err != nil {
		return ObjectSet{}, fmt.Errorf("rendering %s: encoding the request: %w", target, err)
	}
	file := target
	if file == "" {
		file = "."
	}

	cmd := exec.Command(exe)
	// Nothing of the parent's environment (tokens, webhook secrets) reaches the
	// process that runs the PR's templates.
	cmd.Env = []string{childEnv + "=1", "GOTRACEBACK=single"}
	cmd.SysProcAttr = childSysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return ObjectSet{}, fmt.Errorf("rendering %s: %w", target, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return ObjectSet{}, fmt.Errorf("rendering %s: %w", target, err)
	}
	stderr := &tailBuffer{max: 16 << 10}
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return ObjectSet{}, fmt.Errorf("rendering %s: starting the render process: %w", target, err)
	}
	pid := cmd.Process.Pid
	var killOnce sync.Once
	killed := false
	kill := func() {
		killOnce.Do(func() {
			killed = true
			killGroup(pid)
		})
	}
	if err := setChildLimits(pid, opts); err != nil {
		kill()
		_ = cmd.Wait()
		return ObjectSet{}, fmt.Errorf("rendering %s: limiting the render process: %w", target, err)
	}

	tctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	stop := context.AfterFunc(tctx, kill)
	defer stop()

	go func() {
		_, _ = stdin.Write(req)
		_ = stdin.Close()
	}()

	// The result is read as it streams, never more than the output limit (with
	// room for the JSON framing around the manifests).
	outLimit := 2*opts.MaxOutputBytes + 1<<20
	cr := &countingReader{r: io.LimitReader(stdout, outLimit+1)}
	dec := json.NewDecoder(cr)
	dec.UseNumber()
	var res childResult
	decErr := dec.Decode(&res)
	overOutput := cr.n > outLimit
	if decErr != nil || overOutput {
		kill()
	}
	_, _ = io.Copy(io.Discard, stdout)
	waitErr := cmd.Wait()
	// The child is gone; make sure nothing it may have started lingers.
	killGroup(pid)

	switch {
	case ctx.Err() != nil:
		return ObjectSet{}, fmt.Errorf("rendering %s: %w", target, ctx.Err())
	case tctx.Err() != nil && (killed || decErr != nil):
		return ObjectSet{}, &Error{File: file, Err: fmt.Errorf("rendering took longer than %s and was stopped; look for templates or kustomizations that loop or grow without bound", opts.Timeout)}
	case overOutput:
		return ObjectSet{}, &Error{File: file, Err: fmt.Errorf("the target renders more than %d bytes of manifests (the limit per target) and was stopped; split it into smaller targets", opts.MaxOutputBytes)}
	case decErr == nil && waitErr == nil:
		set, err := res.set()
		set.OutputBytes = cr.n
		return set, err
	}
	return ObjectSet{}, childFailure(file, cmd.ProcessState, stderr.String(), opts)
}

// set turns the child's answer back into what Render returns.
func (res childResult) set() (ObjectSet, error) {
	if e := res.Error; e != nil {
		// An *Unavailable crosses the pipe as a flag, so the parent still lists the
		// target as not rendered rather than as a render error.
		var inner error = errors.New(e.Msg)
		if e.Unavailable {
			inner = &Unavailable{Reason: e.Msg}
		}
		if e.Render {
			return ObjectSet{}, &Error{File: e.File, Line: e.Line, Err: inner}
		}
		return ObjectSet{}, inner
	}
	set := ObjectSet{Notes: res.Notes, Objects: make([]Object, len(res.Objects))}
	for i, o := range res.Objects {
		obj, _ := numbers(o.Obj).(map[string]any)
		set.Objects[i] = Object{Key: o.Key, Source: o.Source, HashSuffix: o.HashSuffix, Obj: &unstructured.Unstructured{Object: obj}}
	}
	return set, nil
}

// childFailure explains a child that died without an answer: a kernel limit, or a
// crash. Either way it is the render's fault, so an *Error on the target.
func childFailure(file string, ps *os.ProcessState, stderr string, opts Options) error {
	cpu := time.Duration(0)
	if ps != nil {
		cpu = ps.UserTime() + ps.SystemTime()
	}
	switch {
	case strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") ||
		strings.Contains(stderr, "errno=12"):
		return &Error{File: file, Err: fmt.Errorf("rendering used more than the %d MiB memory limit and was stopped; look for templates that build huge strings or lists", opts.MaxMemoryBytes>>20)}
	case cpu >= opts.MaxCPUTime || cpuSignalled(ps):
		return &Error{File: file, Err: fmt.Errorf("rendering used more than the %s CPU-time limit and was stopped; look for templates or kustomizations that loop or grow without bound", opts.MaxCPUTime)}
	}
	how := "without an answer"
	if ps != nil {
		how = "with " + ps.String()
	}
	return &Error{File: file, Err: fmt.Errorf("the render process ended %s (a crash in driftpreview or a library it uses, or a limit of the machine)", how)}
}

// numbers turns json.Numbers back into int64 (integers) and float64, the types
// the in-process renderers produce, the way apimachinery decodes JSON.
func numbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = numbers(x)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = numbers(x)
		}
		return v
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	}
	return v
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

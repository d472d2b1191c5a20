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
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/driftpreview/driftpreview/render/internal/initgc"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
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
// Protocol: the parent writes one JSON childRequest per line on the child's
// stdin; the child answers each with one JSON childResult line on stdout, and
// exits when stdin ends (pool.go keeps warm children and recycles them). Its stderr is kept (the
// last few KiB) only to tell what stopped it; it is never shown, since it may
// quote template output.

// childEnv marks a process started as a render child.
const childEnv = "DRIFTPREVIEW_RENDER_CHILD"

// The render process's collector (see childMain and childGCPercentFor).
const (
	// childGCPercent is the most GOGC a render process runs with.
	childGCPercent = 800
	// childGCSoftCap is the heap past which a render process's GOGC falls
	// (toward the default, 100) so the heap's goal stays near it.
	childGCSoftCap = 160 << 20
)

func init() {
	// The collector was off while the dependencies were initialized
	// (initgc): on again before anything of driftpreview runs (in a render
	// process, once its heap is reserved for huge pages: hugeheap.go).
	if os.Getenv(childEnv) != "1" {
		initgc.Restore()
		return
	}
	reserveChildHeap()
	initgc.Restore()
	stop := startChildProfile()
	code := childMain(os.Stdin, os.Stdout)
	stop()
	os.Exit(code)
}

type childRequest struct {
	Root string `json:"root"`
	// Checkout is Opts.Checkout, which Options does not encode.
	Checkout string  `json:"checkout,omitempty"`
	Target   string  `json:"target"`
	Opts     Options `json:"opts"`
	// Deps are chart dependencies the parent fetched (prefetch).
	Deps []localDependency `json:"deps,omitempty"`
	// Values are the checkout values files of a remote chart, parsed.
	Values map[string]map[string]any `json:"values,omitempty"`
	// Templates, when set, is a template job (templateJob) instead of a
	// render: see ExecuteTemplates.
	Templates json.RawMessage `json:"templates,omitempty"`
	// WarmUp asks the process to warm up (childWarmUp) instead (Prestart).
	WarmUp bool `json:"warmUp,omitempty"`
}

type childResult struct {
	// Exit says the child ends after this answer.
	Exit    bool          `json:"exit,omitempty"`
	Objects []childObject `json:"objects,omitempty"`
	Notes   []string      `json:"notes,omitempty"`
	Error   *childError   `json:"error,omitempty"`
	// Templates are a template job's outputs (JSON of [][]any).
	Templates json.RawMessage `json:"templates,omitempty"`
	// CPU is the CPU time the process spent on this request.
	CPU time.Duration `json:"cpu,omitempty"`
}

type childObject struct {
	Key    ObjectKey `json:"key"`
	Source string    `json:"source"`
	// HashSuffix is Object.HashSuffix, the generator hash mark of the render.
	HashSuffix string         `json:"hashSuffix,omitempty"`
	Obj        map[string]any `json:"obj"`
}

type childError struct {
	Render      bool            `json:"render"`                // an *Error (else a plain error)
	Unavailable bool            `json:"unavailable,omitempty"` // an *Unavailable inside it
	Remote      string          `json:"remote,omitempty"`      // its Remote
	Chart       *KustomizeChart `json:"chart,omitempty"`       // its Chart
	File        string          `json:"file,omitempty"`
	Line        int             `json:"line,omitempty"` // or a template job's parameter set
	Tree        int             `json:"tree,omitempty"` // a template job's tree
	Msg         string          `json:"msg"`
}

// childMain is the child's whole life: read a request, render, answer, until the
// parent closes stdin. A child that had to abandon a render (a timeout, a crash
// the render recovered from) says so in its answer and exits: what it left
// running must not share the process with the next render.
func childMain(in io.Reader, out io.Writer) int {
	// A kustomize build allocates about 10 MiB and keeps little of it, so with
	// the default GOGC the collector runs every few milliseconds: a quarter of a
	// render's CPU time (BenchmarkRenderBenchTarget, GOGC 100 → 400). The live
	// heap of a render process is small (about 10 MiB between renders of the
	// bench repository), so GOGC 800: at 400 its collections still took about
	// a tenth of a render process's CPU on make bench's PR-wide at T=200
	// (gctrace of 240 bench kustomize renders: 65 collections and 0.53 s of
	// collector CPU at 400, 34 and 0.28 s at 800). What the process keeps
	// between renders grows with the checkout (its cache of the checkout's
	// files, up to 2 × 16 MiB), so after each render the percent is set for
	// the live heap the last collection found (childGCPercentFor): the heap's
	// goal stays near childGCSoftCap. The memory limit (SetMemoryLimit in
	// childServe, and the kernel's RLIMIT_DATA) still bounds it.
	debug.SetGCPercent(childGCPercent)
	gcSample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	dec := json.NewDecoder(bufio.NewReaderSize(in, 1<<16))
	dec.UseNumber()
	w := bufio.NewWriterSize(out, 1<<16)
	for {
		var req childRequest
		if err := dec.Decode(&req); err == io.EOF {
			return 0
		} else if err != nil {
			fmt.Fprintf(os.Stderr, "render child: reading the request: %v\n", err)
			return 3
		}
		start := processCPU()
		var res childResult
		switch {
		case req.WarmUp:
			childWarmUp()
		case req.Templates != nil:
			res = serveTemplates(req.Templates)
		default:
			res = childServe(req)
		}
		res.CPU = processCPU() - start
		if err := json.NewEncoder(w).Encode(res); err != nil {
			fmt.Fprintf(os.Stderr, "render child: writing the result: %v\n", err)
			return 3
		}
		if err := w.Flush(); err != nil {
			return 3
		}
		if res.Exit {
			return 0
		}
		metrics.Read(gcSample)
		if gcSample[0].Value.Kind() == metrics.KindUint64 {
			debug.SetGCPercent(childGCPercentFor(gcSample[0].Value.Uint64()))
		}
	}
}

// childWarmUp does ahead what a process's first kustomize render would do
// first: kyaml parses its built-in OpenAPI schema (about 70 ms of CPU) on
// the first lookup of a kind's schema, which strategic merge patches,
// namespaces and name references make. It is the same global, parsed once
// per process whoever asks first; a kustomization with its own openapi
// field still replaces it (kustomize's SetSchema with reset).
func childWarmUp() {
	openapi.SchemaForResourceType(yaml.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"})
}

// childGCPercentFor is a render process's GOGC for a live heap of live bytes:
// childGCPercent while the heap's goal stays under childGCSoftCap, less as the
// live heap grows (the goal at childGCSoftCap), never under the default 100.
func childGCPercentFor(live uint64) int {
	if live == 0 {
		return childGCPercent
	}
	if live >= childGCSoftCap/2 {
		return 100
	}
	return int(min(childGCPercent, (childGCSoftCap-live)*100/live))
}

// childServe runs one request in the child.
func childServe(req childRequest) childResult {
	req.Opts.Helm.Values, _ = numbers(req.Opts.Helm.Values).(map[string]any)
	req.Opts.Helm.deps = req.Deps
	for k, v := range req.Values {
		req.Values[k], _ = numbers(v).(map[string]any)
	}
	req.Opts.Helm.checkoutValues = req.Values
	req.Opts.Checkout = req.Checkout
	if req.Opts.MaxMemoryBytes > 0 {
		// Let the collector work hard before the kernel's limit makes an
		// allocation fatal; runtime metadata and C memory count there too.
		debug.SetMemoryLimit(req.Opts.MaxMemoryBytes * 3 / 4)
	}
	set, abandoned, err := renderLocalStatus(context.Background(), req.Root, req.Target, req.Opts)
	res := childResult{Exit: abandoned}
	if err != nil {
		res.Error = &childError{Msg: err.Error()}
		if re, ok := errors.AsType[*Error](err); ok {
			res.Error = &childError{Render: true, File: re.File, Line: re.Line, Msg: re.Err.Error()}
		}
		if _, ok := IsUnavailable(err); ok {
			res.Error.Unavailable = true
			res.Error.Remote, _ = RemoteNeeded(err)
			if c, ok := ChartNeeded(err); ok {
				res.Error.Chart = &c
			}
		}
		return res
	}
	res.Notes = set.Notes
	res.Objects = make([]childObject, len(set.Objects))
	for i, o := range set.Objects {
		res.Objects[i] = childObject{Key: o.Key, Source: o.Source, HashSuffix: o.HashSuffix, Obj: o.Obj.Object}
	}
	return res
}

// renderChild runs one render in a render process with opts' limits: a warm
// one from the pool when there is one.
func renderChild(ctx context.Context, root, target string, opts Options) (ObjectSet, error) {
	b := opts.Budget
	cut := false
	if b != nil {
		left := b.Left()
		if left <= 0 {
			return ObjectSet{}, &Error{File: target, Err: &BudgetExceeded{Total: b.total}}
		}
		if left < opts.Timeout {
			opts.Timeout, cut = left, true
		}
	}
	start := time.Now()
	set, err := renderChildIn(ctx, root, target, opts)
	if b != nil {
		// The render process's own CPU time for this render; the wall time
		// when it gave no answer (it was killed).
		used := set.CPUTime
		if used <= 0 {
			used = time.Since(start)
		}
		b.charge(used)
	}
	if cut && err != nil && ctx.Err() == nil && !IsBudgetExceeded(err) && (b.Left() <= 0 || time.Since(start) >= opts.Timeout) {
		// Stopped at the timeout the budget set: the budget is spent (the
		// render waited for a CPU part of that time, but it had it).
		b.charge(b.Left())
		err = &Error{File: target, Err: &BudgetExceeded{Total: b.total}}
	}
	return set, err
}

func renderChildIn(ctx context.Context, root, target string, opts Options) (ObjectSet, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return ObjectSet{}, fmt.Errorf("rendering %s: resolving root %s: %w", target, root, err)
	}
	file := target
	if file == "" {
		file = "."
	}
	res, err := childDo(ctx, childRequest{Root: absRoot, Checkout: opts.Checkout, Target: target, Opts: opts, Deps: opts.Helm.deps, Values: opts.Helm.checkoutValues}, file, opts)
	if err != nil {
		return ObjectSet{}, err
	}
	set, err := res.set()
	set.OutputBytes, set.CPUTime = res.size, res.CPU
	if err == nil {
		set.encoded = encodedAnswer(res.line)
	}
	return set, err
}

// childAnswer is a render process's answer, its size on the pipe and the
// answer itself (its line, newline included).
type childAnswer struct {
	childResult
	size int64
	line []byte
}

// encodedAnswer returns a render process's answer line as EncodeSet writes the
// set it decodes to, or nil when it is not the answer of a rendered set. The
// process encodes its answer as EncodeSet encodes a set (the same childResult,
// by the same encoder), with the CPU time it spent as the last field: the
// answer without that field is EncodeSet's encoding of what the parent decodes
// from it (TestRenderEncoded), in a slice of its own exactly its size.
func encodedAnswer(line []byte) []byte {
	body, ok := bytes.CutSuffix(line, []byte("}\n"))
	if !ok || !bytes.HasPrefix(body, []byte("{")) || bytes.HasPrefix(body, []byte(`{"exit"`)) {
		return nil
	}
	if i := bytes.LastIndex(body, []byte(`"cpu":`)); i > 0 && (body[i-1] == ',' || body[i-1] == '{') {
		digits := body[i+len(`"cpu":`):]
		if len(digits) == 0 || strings.Trim(string(digits), "0123456789") != "" {
			return nil
		}
		body = body[:i]
		if body[i-1] == ',' {
			body = body[:i-1]
		}
	}
	out := make([]byte, 0, len(body)+2)
	out = append(out, body...)
	return append(out, '}', '\n')
}

// childDo sends one request to a render process with opts' limits (a warm one
// from the pool when there is one) and reads its answer. A request that a
// reused process could not finish (it died, or hit a kernel limit that counts
// its earlier requests too) is sent once more to a new process, so every
// request gets what a process of its own would give it. file names the request
// in errors.
func childDo(ctx context.Context, cr childRequest, file string, opts Options) (childAnswer, error) {
	req, err := json.Marshal(cr)
	if err != nil {
		return childAnswer{}, fmt.Errorf("rendering %s: encoding the request: %w", file, err)
	}
	req = append(req, '\n')
	key := poolKey{mem: opts.MaxMemoryBytes, cpu: opts.MaxCPUTime}
	for attempt := 0; ; attempt++ {
		w, err := renderers.get(key, attempt > 0)
		if err != nil {
			return childAnswer{}, fmt.Errorf("rendering %s: %w", file, err)
		}
		reused := w.served > 0
		renderers.sent.Add(1)
		res, reusable, died, err := w.do(ctx, req, file, opts)
		if died && reused && attempt == 0 && ctx.Err() == nil {
			// It may have died of what its earlier renders used: again, fresh.
			renderers.discard(key, w)
			continue
		}
		renderers.put(key, w, reusable)
		return res, err
	}
}

// do sends one request to the worker and reads its answer. reusable reports
// whether the worker can take another request; died whether it ended without
// an answer (a limit or a crash, not a timeout).
func (w *worker) do(ctx context.Context, req []byte, file string, opts Options) (ans childAnswer, reusable, died bool, err error) {
	w.stderr.Reset()
	tctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	var timedOut atomic.Bool
	stop := context.AfterFunc(tctx, func() {
		timedOut.Store(true)
		w.kill()
	})
	defer stop()

	writeErr := make(chan error, 1)
	go func() {
		_, err := w.stdin.Write(req)
		writeErr <- err
	}()

	// The result is read as it streams, never more than the output limit (with
	// room for the JSON framing around the manifests). One answer is one line.
	outLimit := 2*opts.MaxOutputBytes + 1<<20
	lr := &lineReader{r: w.stdout}
	line, decErr := io.ReadAll(io.LimitReader(lr, outLimit+1))
	n := int64(len(line))
	overOutput := n > outLimit
	var res childResult
	if decErr == nil && !overOutput {
		if !lr.done {
			decErr = errors.New("answer not followed by a newline")
		} else {
			decErr = decodeResult(line, &res)
		}
	}
	if decErr != nil || overOutput {
		w.kill()
	}
	if werr := <-writeErr; werr != nil && decErr == nil {
		decErr = werr
	}
	w.served++
	stop()

	switch {
	case ctx.Err() != nil:
		w.kill()
		return childAnswer{}, false, false, fmt.Errorf("rendering %s: %w", file, ctx.Err())
	case timedOut.Load() && decErr != nil:
		return childAnswer{}, false, false, &Error{File: file, Err: fmt.Errorf("rendering took longer than %s and was stopped; look for templates or kustomizations that loop or grow without bound", opts.Timeout)}
	case overOutput:
		return childAnswer{}, false, false, &Error{File: file, Err: fmt.Errorf("the target renders more than %d bytes of manifests (the limit per target) and was stopped; split it into smaller targets", opts.MaxOutputBytes)}
	case decErr == nil:
		return childAnswer{childResult: res, size: n, line: line}, !res.Exit && !timedOut.Load(), false, nil
	}
	// No answer: the process died (or is killed now). Wait for it, to tell why.
	w.kill()
	<-w.exited
	return childAnswer{}, false, true, childFailure(file, w.cmd.ProcessState, w.stderr.String(), opts)
}

// set turns the child's answer back into what Render returns.
func (res childResult) set() (ObjectSet, error) {
	if e := res.Error; e != nil {
		// An *Unavailable crosses the pipe as a flag, so the parent still lists the
		// target as not rendered rather than as a render error.
		var inner error = errors.New(e.Msg)
		if e.Unavailable {
			inner = &Unavailable{Reason: e.Msg, Remote: e.Remote, Chart: e.Chart}
		}
		if e.Render {
			return ObjectSet{}, &Error{File: e.File, Line: e.Line, Err: inner}
		}
		return ObjectSet{}, inner
	}
	set := ObjectSet{Notes: res.Notes, Objects: make([]Object, len(res.Objects))}
	for i, o := range res.Objects {
		set.Objects[i] = Object{Key: o.Key, Source: o.Source, HashSuffix: o.HashSuffix, Obj: &unstructured.Unstructured{Object: o.Obj}}
	}
	return set, nil
}

// decodeResult reads one answer (or disk cache entry), its numbers as int64
// when they are integers that fit and float64 otherwise: the types the
// renderers produce, read the way apimachinery reads JSON
// (sigs.k8s.io/json, which is what numbers does after a UseNumber decode, in
// one pass). Keys match the struct's tags exactly: they are ours.
func decodeResult(data []byte, res *childResult) error {
	return sigsjson.UnmarshalCaseSensitivePreserveInts(data, res)
}

// EncodeSet writes set as a render process answers with it (one JSON line), so a
// cache on disk keeps renders the way they cross the pipe. Sets with fetched
// charts (Charts) are not meant for it: those are not kept.
func EncodeSet(w io.Writer, set ObjectSet) error {
	res := childResult{Notes: set.Notes, Objects: make([]childObject, len(set.Objects))}
	for i, o := range set.Objects {
		res.Objects[i] = childObject{Key: o.Key, Source: o.Source, HashSuffix: o.HashSuffix, Obj: o.Obj.Object}
	}
	return json.NewEncoder(w).Encode(res)
}

// DecodeSet reads what EncodeSet wrote; OutputBytes is its size, as for a
// render process's answer.
func DecodeSet(data []byte) (ObjectSet, error) {
	var res childResult
	if err := decodeResult(data, &res); err != nil {
		return ObjectSet{}, err
	}
	if res.Error != nil || res.Exit {
		return ObjectSet{}, errors.New("not a rendered object set")
	}
	set, err := res.set()
	set.OutputBytes = int64(len(data))
	return set, err
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
		strings.Contains(stderr, "errno=12") || threadFailed(stderr) && nearMemoryLimit(ps, opts):
		return &Error{File: file, Err: fmt.Errorf("rendering used more than the %d MiB memory limit and was stopped; look for templates that build huge strings or lists", opts.MaxMemoryBytes>>20)}
	case strings.Contains(stderr, "stack exceeds") || strings.Contains(stderr, "stack overflow"):
		return &Error{File: file, Err: errors.New("rendering recursed too deep and was stopped; look for a template that calls itself")}
	case cpu >= opts.MaxCPUTime || cpuSignalled(ps):
		return &Error{File: file, Err: fmt.Errorf("rendering used more than the %s CPU-time limit and was stopped; look for templates or kustomizations that loop or grow without bound", opts.MaxCPUTime)}
	}
	how := "without an answer"
	if ps != nil {
		how = "with " + ps.String()
	}
	return &Error{File: file, Err: fmt.Errorf("the render process ended %s (a crash in driftpreview or a library it uses, or a limit of the machine)", how)}
}

// threadFailed reports whether the process died because it could not start an
// OS thread: with cgo, "runtime/cgo: pthread_create failed" and SIGABRT;
// without, "failed to create new OS thread". A thread's stack is private
// writable memory, so under RLIMIT_DATA this is how a render that has used
// nearly all its memory dies when the runtime wants one more thread (seen under
// load, when the collector starts its workers), rather than with "out of
// memory".
func threadFailed(stderr string) bool {
	return strings.Contains(stderr, "pthread_create failed") || strings.Contains(stderr, "failed to create new OS thread")
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

// stderrBuffer keeps the first head and the last tail bytes written to a
// render process's stderr. Both ends matter: a Go runtime fatal error says what
// happened on its first line ("fatal error: runtime: out of memory") and then
// prints every goroutine's stack, easily more than the tail keeps, while a
// panic's cause can sit at either end.
type stderrBuffer struct {
	mu        sync.Mutex
	head      []byte // the first bytes, up to cap(head)
	tail      bytes.Buffer
	max       int  // bytes of tail kept
	truncated bool // bytes were dropped between head and tail
}

func newStderrBuffer(head, tail int) *stderrBuffer {
	return &stderrBuffer{head: make([]byte, 0, head), max: tail}
}

func (t *stderrBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := cap(t.head) - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head = append(t.head, p[:k]...)
		p = p[k:]
	}
	t.tail.Write(p)
	if over := t.tail.Len() - t.max; over > 0 {
		t.tail.Next(over)
		t.truncated = true
	}
	return n, nil
}

// Reset forgets what was written so far.
func (t *stderrBuffer) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.head = t.head[:0]
	t.tail.Reset()
	t.truncated = false
}

func (t *stderrBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	sep := ""
	if t.truncated {
		sep = "\n[…]\n"
	}
	return string(t.head) + sep + t.tail.String()
}

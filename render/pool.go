package render

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Starting a render process costs about 70 ms of CPU, and a kustomize render
// pays about 160 ms more the first time in a process (kustomize parses its
// OpenAPI schema, Helm builds its engine): more than the render itself. So the
// processes are kept warm: a pool of render processes, each serving several
// renders over its stdin and stdout, each with the same kernel limits a process
// per render had (set once at its start; see setChildLimits).
//
// A process leaves the pool after maxServed renders, after idleTTL unused, and
// at once after any render that did not end with a clean answer (a limit, a
// crash, a timeout, an abandoned render, a cancelled context). CPU time and the
// memory limit count a process's whole life, so a render that a reused process
// could not finish is run once more in a new process (renderChild): it fails
// only if it fails on its own, and it fails no other render.

// poolKey sets apart processes by the kernel limits they were started with.
type poolKey struct {
	mem int64
	cpu time.Duration
}

const (
	// maxServed is how many renders one process serves before it is replaced:
	// it bounds what earlier renders can leave behind (heap, CPU time used).
	// A new process costs about 230 ms of CPU before its first kustomize
	// render is done (start, OpenAPI schema), so 64 cost PR-wide at T=200
	// (400 renders) about 2 s of CPU in restarts. 256 renders of about 50 ms
	// stay far under the 60 s CPU-time limit, and a render a worn process
	// cannot finish runs again in a new one.
	maxServed = 256
	// idleTTL is how long an idle process is kept.
	idleTTL = 30 * time.Second
	// coldWait is how long a render waits for a busy process to come back
	// before it starts one of its own (get): a start costs about 20 ms of
	// CPU, and a kustomize render about 50 ms more the first time in a
	// process. A small pull request renders a few small targets at base
	// and head at the same time, each a few milliseconds in a warm
	// process: one process serves them one after the other for less CPU
	// and about the same wall clock. A long render makes the next wait
	// this long once.
	coldWait = 75 * time.Millisecond
	// warmWait bounds a render's wait for a process warming up (get).
	warmWait = time.Second
)

type pool struct {
	mu   sync.Mutex
	idle map[poolKey][]*worker
	// busy counts the processes of each kind out serving a render (or
	// warming up: Prestart), warming those warming up, waiting the renders
	// waiting for one of them to come back (get), and returned is closed
	// (and replaced) whenever one comes back or ends.
	busy, warming, waiting map[poolKey]int
	returned               chan struct{}
	// warmedUp is signalled (with mu) whenever a warm-up ends; Shutdown
	// waits on it until none is under way.
	warmedUp *sync.Cond
	// started counts the processes started, sent the requests sent to them
	// (warm-ups aside), warmUps the warm-ups, for tests and benchmarks.
	started, sent, warmUps atomic.Int64
}

var renderers = newPool()

func newPool() *pool {
	p := &pool{idle: map[poolKey][]*worker{}, busy: map[poolKey]int{}, warming: map[poolKey]int{}, waiting: map[poolKey]int{}, returned: make(chan struct{})}
	p.warmedUp = sync.NewCond(&p.mu)
	return p
}

// maxIdle is how many idle processes of one kind are kept: the pipeline renders
// one target per CPU, base and head.
func maxIdle() int { return 2 * max(1, runtime.GOMAXPROCS(0)) }

// get returns an idle process for key, or starts one; fresh always starts one.
// With none idle, it first waits up to coldWait for a busy one to come back,
// unless as many renders already wait as processes are busy. A process
// warming up (Prestart) takes two waiters, and the wait lasts while it warms
// up and coldWait more once it is warm (at most warmWait in all): it is ready
// sooner than a new process would be, and serves the second render right
// after the first.
func (p *pool) get(key poolKey, fresh bool) (*worker, error) {
	if !fresh {
		start := time.Now()
		deadline := start.Add(coldWait)
		sawWarming := false
		p.mu.Lock()
		for {
			if ws := p.idle[key]; len(ws) > 0 {
				w := ws[len(ws)-1]
				p.idle[key] = ws[:len(ws)-1]
				w.timer.Stop()
				p.busy[key]++
				p.mu.Unlock()
				return w, nil
			}
			switch {
			case p.warming[key] > 0:
				deadline, sawWarming = time.Now().Add(coldWait), true
			case sawWarming:
				// Warm now, and serving the render that waited first.
				deadline, sawWarming = time.Now().Add(coldWait), false
			}
			if limit := start.Add(warmWait); deadline.After(limit) {
				deadline = limit
			}
			left := time.Until(deadline)
			if left <= 0 || p.waiting[key] >= p.busy[key]+p.warming[key] {
				break
			}
			p.waiting[key]++
			back := p.returned
			p.mu.Unlock()
			t := time.NewTimer(left)
			select {
			case <-back:
			case <-t.C:
			}
			t.Stop()
			p.mu.Lock()
			p.waiting[key]--
		}
		p.mu.Unlock()
	}
	w, err := p.start(key)
	if err == nil {
		p.mu.Lock()
		p.busy[key]++
		p.mu.Unlock()
	}
	return w, err
}

// discard ends w, a process get gave out, instead of putting it back.
func (p *pool) discard(key poolKey, w *worker) { p.putBack(key, w, false, false) }

// back counts a process get gave out as no longer busy and wakes the renders
// waiting for one. p.mu is held.
func (p *pool) back(key poolKey) {
	p.busy[key]--
	p.wake()
}

// wake wakes the renders waiting for a process to come back. p.mu is held.
func (p *pool) wake() {
	close(p.returned)
	p.returned = make(chan struct{})
}

// Prestart starts render processes with opts' limits (the defaults for those
// unset) until n of that kind are idle or warming up in the pool (at most
// maxIdle), and returns once they are started, before they are ready. Each
// then warms up (childWarmUp: kustomize's OpenAPI schema, about 70 ms of
// CPU, the largest part of a process's first kustomize render) and joins
// the idle ones; a render that finds none idle waits for one warming up
// (get). A preview starts one while it checks the pull request out (one
// without the warm-up, PrestartCold, when the pull request changes only
// documentation; bot/preview): start and warm-up overlap the checkout and
// discovery instead of delaying the first render. An idle process started
// by PrestartCold that has served nothing does not count towards n. They serve the next renders with the same limits like any idle
// process; unused, they end after idleTTL or at Shutdown, reaped. An error
// starting one is not reported: the render that would have used it starts
// its own and reports it.
func Prestart(opts Options, n int) {
	opts = withDefaults(opts)
	renderers.prestart(poolKey{mem: opts.MaxMemoryBytes, cpu: opts.MaxCPUTime}, n, opts, true)
}

// PrestartCold is Prestart without the warm-up: the processes start (the
// exec and the binary's init, about 20 ms) and join the idle ones at once;
// the first kustomize render of each warms it up as it would without
// Prestart. For a preview whose renders are unlikely but possible (a pull
// request of documentation, whose discovery still renders a Flux
// Kustomization that patches what it deploys): the start overlaps the
// checkout, and unused, the process costs its start, not the warm-up's
// 70 ms of CPU.
func PrestartCold(opts Options, n int) {
	opts = withDefaults(opts)
	renderers.prestart(poolKey{mem: opts.MaxMemoryBytes, cpu: opts.MaxCPUTime}, n, opts, false)
}

// warmUpRequest is the request that makes a render process warm up.
var warmUpRequest = []byte("{\"warmUp\":true}\n")

func (p *pool) prestart(key poolKey, n int, opts Options, warmUp bool) {
	p.mu.Lock()
	idle := len(p.idle[key])
	if warmUp {
		// An idle process PrestartCold started has served nothing and is
		// not warmed up: it does not count for a Prestart.
		idle = 0
		for _, w := range p.idle[key] {
			if w.served > 0 {
				idle++
			}
		}
	}
	want := min(n, maxIdle()) - idle - p.warming[key]
	// Each is busy, warming up, until put in the pool.
	p.busy[key] += max(0, want)
	p.warming[key] += max(0, want)
	p.mu.Unlock()
	for i := range want {
		w, err := p.start(key)
		if err != nil {
			p.mu.Lock()
			p.busy[key] -= want - i
			p.warming[key] -= want - i
			p.warmedUp.Broadcast()
			p.wake()
			p.mu.Unlock()
			return
		}
		if !warmUp {
			p.putBack(key, w, true, true)
			continue
		}
		p.warmUps.Add(1)
		go func() {
			_, reusable, _, _ := w.do(context.Background(), warmUpRequest, "the render process's warm-up", opts)
			p.putBack(key, w, reusable, true)
		}()
	}
}

// put returns w, a process get gave out, to the pool, or ends it when it may
// not serve again.
func (p *pool) put(key poolKey, w *worker, reusable bool) { p.putBack(key, w, reusable, false) }

// putBack is put, of a process that warmed up (prestart) when warmed: it is
// counted as warming no more in the same step as it is made idle, so a
// render never sees it neither warming nor idle.
func (p *pool) putBack(key poolKey, w *worker, reusable, warmed bool) {
	done := func() {
		if warmed {
			p.warming[key]--
			p.warmedUp.Broadcast()
		}
		p.back(key)
	}
	if !reusable || w.served >= maxServed {
		w.close()
		p.mu.Lock()
		done()
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	defer done()
	if len(p.idle[key]) >= maxIdle() {
		go w.close()
		return
	}
	p.idle[key] = append(p.idle[key], w)
	w.timer = time.AfterFunc(idleTTL, func() {
		p.mu.Lock()
		i := slices.Index(p.idle[key], w)
		if i >= 0 {
			p.idle[key] = slices.Delete(p.idle[key], i, i+1)
		}
		p.mu.Unlock()
		if i >= 0 {
			w.close()
		}
	})
}

// ProcessesStarted counts the render processes this process started so far
// (for tests and benchmarks: a preview starts them only when it renders).
func ProcessesStarted() int64 { return renderers.started.Load() }

// RequestsSent counts the renders and template jobs this process sent to
// render processes so far, warm-ups aside (for tests: a preview whose
// renders are all cached sends none).
func RequestsSent() int64 { return renderers.sent.Load() }

// WarmUpsSent counts the warm-ups this process asked of the render processes
// it started ahead (Prestart; PrestartCold asks none), for tests.
func WarmUpsSent() int64 { return renderers.warmUps.Load() }

// Shutdown ends the idle render processes and waits until they have exited
// (each ends at the end of its input); a program calls it before it exits, so
// the processes are reaped and their CPU time and memory count as its
// children's (rusage), as a process per render did. Renders started after it
// start new processes.
func Shutdown() { renderers.shutdown() }

func (p *pool) shutdown() {
	p.mu.Lock()
	// Processes warming up are idle ones a moment later.
	for p.warmingNow() > 0 {
		p.warmedUp.Wait()
	}
	var all []*worker
	for _, ws := range p.idle {
		all = append(all, ws...)
	}
	p.idle = map[poolKey][]*worker{}
	p.mu.Unlock()
	// Busy ones are not waited for: their renders end them or put them back.
	for _, w := range all {
		w.timer.Stop()
		_ = w.stdin.Close()
	}
	for _, w := range all {
		select {
		case <-w.exited:
		case <-time.After(5 * time.Second):
			w.kill()
			<-w.exited
		}
		_ = w.outFile.Close()
	}
}

// warmingNow counts the processes warming up, of every kind. p.mu is held.
func (p *pool) warmingNow() int {
	n := 0
	for _, k := range p.warming {
		n += k
	}
	return n
}

// worker is one render process.
type worker struct {
	cmd     *exec.Cmd
	pid     int
	stdin   *os.File
	stdout  *bufio.Reader
	outFile *os.File
	stderr  *stderrBuffer
	exited  chan struct{} // closed once the process is reaped
	served  int           // requests sent to it
	timer   *time.Timer   // ends it when idle too long
	killed  sync.Once
}

// start starts a render process: this same program with childEnv set, and
// nothing else of this process's environment (tokens, webhook secrets never
// reach the process that runs the PR's templates). Its limits are set before
// it is sent any work.
func (p *pool) start(key poolKey) (*worker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to start the render process: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting the render process: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("starting the render process: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{childEnv + "=1", "GOTRACEBACK=single"}
	if n := childHeapReserve(key.mem); n > 0 {
		cmd.Env = append(cmd.Env, heapReserveEnv+"="+strconv.FormatInt(n, 10))
	}
	if dir := profiling(); dir != "" {
		cmd.Env = append(cmd.Env, childProfileEnv+"="+dir)
	}
	if checkSourceMarkers {
		cmd.Env = append(cmd.Env, checkMarkersEnv+"=1")
	}
	cmd.SysProcAttr = childSysProcAttr()
	cmd.Stdin, cmd.Stdout = inR, outW
	stderr := newStderrBuffer(4<<10, 16<<10)
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting the render process: %w", err)
	}
	w := &worker{cmd: cmd, pid: cmd.Process.Pid, stdin: inW, stdout: bufio.NewReaderSize(outR, 1<<16),
		outFile: outR, stderr: stderr, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(w.exited)
	}()
	if err := setChildLimits(w.pid, Options{MaxMemoryBytes: key.mem, MaxCPUTime: key.cpu}, profiling() != ""); err != nil {
		w.close()
		return nil, fmt.Errorf("limiting the render process: %w", err)
	}
	p.started.Add(1)
	return w, nil
}

// kill kills the process and anything it started (its process group), unless
// it is already gone.
func (w *worker) kill() {
	w.killed.Do(func() {
		select {
		case <-w.exited:
		default:
			killGroup(w.pid)
		}
	})
}

// close ends the process and releases its pipes.
func (w *worker) close() {
	_ = w.stdin.Close()
	if profiling() != "" {
		// Let it end at the end of its input and write its profile.
		select {
		case <-w.exited:
		case <-time.After(5 * time.Second):
		}
	}
	w.kill()
	go func() {
		<-w.exited
		_ = w.outFile.Close()
	}()
}

// lineReader reads one line (one answer) from r, then reports io.EOF, so the
// JSON decoder of one answer never reads into the next.
type lineReader struct {
	r       *bufio.Reader
	pending []byte
	atEnd   bool // pending ends with the newline
	done    bool
	err     error
}

func (l *lineReader) Read(p []byte) (int, error) {
	for len(l.pending) == 0 {
		if l.done {
			return 0, io.EOF
		}
		if l.err != nil {
			return 0, l.err
		}
		line, err := l.r.ReadSlice('\n')
		switch {
		case err == nil:
			l.atEnd = true
		case errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF:
			l.err = io.ErrUnexpectedEOF // the process ended inside an answer
		default:
			l.err = err
		}
		l.pending = line
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	if len(l.pending) == 0 && l.atEnd {
		l.done = true
	}
	return n, nil
}

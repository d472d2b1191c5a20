package render

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestPoolWaitsForABusyProcess: with no idle render process, a render waits
// up to coldWait for a busy one to come back instead of starting its own (a
// start and a first kustomize render cost more CPU than a small render);
// one render waits per busy process, the others start their own at once; a
// render whose wait runs out starts its own (issue 25).
func TestPoolWaitsForABusyProcess(t *testing.T) {
	p := newPool()
	defer p.shutdown()
	key := poolKey{mem: DefaultOptions().MaxMemoryBytes, cpu: 57 * time.Second}
	waiting := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.waiting[key]
	}
	get := func() *worker {
		t.Helper()
		w, err := p.get(key, false)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w1 := get()
	if n := p.started.Load(); n != 1 {
		t.Fatalf("first render: %d processes started, want 1", n)
	}

	// Back within coldWait: the waiting render gets it.
	go func() {
		time.Sleep(coldWait / 5)
		p.put(key, w1, true)
	}()
	if w := get(); w != w1 || p.started.Load() != 1 {
		t.Fatalf("a render while the only process was busy for %v got a new process (%d started), want the busy one back", coldWait/5, p.started.Load())
	}

	// One render waits for w1; the next does not wait too: it starts one.
	got := make(chan *worker, 1)
	go func() {
		w, err := p.get(key, false)
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	for waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	w2 := get()
	if w2 == w1 || p.started.Load() != 2 {
		t.Fatalf("a second render while one waits for the only busy process: %d started, want a new one", p.started.Load())
	}
	if waiting() != 1 {
		t.Fatalf("the second render did not return before the first's wait ended (%v)", time.Since(start))
	}
	p.put(key, w2, true)
	if w := <-got; w != w2 {
		t.Errorf("the waiting render did not get the process that came back")
	}

	// Nothing comes back: the wait ends after coldWait with a process of its own.
	start = time.Now()
	w3 := get()
	if took := time.Since(start); w3 == w1 || w3 == w2 || p.started.Load() != 3 || took < coldWait {
		t.Errorf("with both processes busy, a render got a process after %v (%d started), want a new one after coldWait %v", took, p.started.Load(), coldWait)
	}
	for _, w := range []*worker{w1, w2, w3} {
		p.put(key, w, true)
	}
	p.mu.Lock()
	busy := p.busy[key]
	p.mu.Unlock()
	if busy != 0 {
		t.Errorf("all processes back: %d counted busy, want 0", busy)
	}
}

// TestPoolWaitsForAWarmingProcess: a process started ahead (prestart) takes
// two waiting renders while it warms up (up to warmWait), and serves both one
// after the other, the first for a while: no second process is started. Shutdown
// waits for a warm-up under way and reaps the process (issue 25).
func TestPoolWaitsForAWarmingProcess(t *testing.T) {
	p := newPool()
	defer p.shutdown()
	opts := DefaultOptions()
	opts.MaxCPUTime = 56 * time.Second
	key := poolKey{mem: opts.MaxMemoryBytes, cpu: opts.MaxCPUTime}
	p.prestart(key, 1, opts, true)
	p.mu.Lock()
	warming, busy := p.warming[key], p.busy[key]
	p.mu.Unlock()
	if p.started.Load() != 1 || warming != 1 || busy != 1 {
		t.Fatalf("prestart: %d started, %d warming, %d busy; want 1, 1, 1", p.started.Load(), warming, busy)
	}
	p.prestart(key, 1, opts, true) // one is warming up already
	if n := p.started.Load(); n != 1 {
		t.Fatalf("a second prestart of one started %d processes in all, want 1", n)
	}
	got := make(chan *worker, 2)
	for range 2 {
		go func() {
			w, err := p.get(key, false)
			if err != nil {
				t.Error(err)
			}
			got <- w
			// A render shorter than coldWait: the other waiter, whose wait
			// runs coldWait past the warm-up, gets the process next.
			time.Sleep(coldWait / 2)
			p.put(key, w, true)
		}()
	}
	w1, w2 := <-got, <-got
	if w1 == nil || w1 != w2 || p.started.Load() != 1 {
		t.Fatalf("two renders while the only process warmed up: %d processes started, want both served by the warmed one", p.started.Load())
	}
	if w1.served != 1 {
		t.Errorf("the warmed process was sent %d requests, want 1 (its warm-up)", w1.served)
	}

	// Shut down during a warm-up: waited for, then ended and reaped (its CPU
	// time, the warm-up's, is added to the children's).
	q := newPool()
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
	q.prestart(key, 1, opts, true)
	q.shutdown()
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
	q.mu.Lock()
	warming, idle := q.warming[key], len(q.idle[key])
	q.mu.Unlock()
	if warming != 0 || idle != 0 {
		t.Fatalf("after shutdown: %d warming, %d idle, want none", warming, idle)
	}
	if after.Utime.Nano()+after.Stime.Nano() <= before.Utime.Nano()+before.Stime.Nano() {
		t.Errorf("no children's CPU time was added: the process warming up was not reaped by shutdown")
	}
}

// TestChildWarmUp: a render process answers a warm-up request (Prestart's)
// with an empty answer and serves a render after it, as if the warm-up had
// not been asked.
func TestChildWarmUp(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "k"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\npatches:\n- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: c}\n    data: {b: \"2\"}\n",
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: \"1\"}\n",
	} {
		if err := os.WriteFile(filepath.Join(root, "k", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	req, err := json.Marshal(childRequest{Root: root, Target: "k", Opts: DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	in := strings.NewReader(string(warmUpRequest) + string(req) + "\n")
	var out bytes.Buffer
	if code := childMain(in, &out); code != 0 {
		t.Fatalf("childMain exited %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d answers, want 2 (the warm-up's and the render's):\n%s", len(lines), out.String())
	}
	var warm, res childResult
	if err := json.Unmarshal([]byte(lines[0]), &warm); err != nil {
		t.Fatal(err)
	}
	if warm.Exit || warm.Error != nil || len(warm.Objects) != 0 {
		t.Errorf("warm-up answer %s, want an empty one", lines[0])
	}
	// The warm-up parsed kyaml's schema: a lookup after it parses nothing
	// (a parse allocates hundreds of thousands of objects).
	openapi.ResetOpenAPI()
	childWarmUp()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if openapi.SchemaForResourceType(yaml.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}) == nil {
		t.Fatal("no schema for apps/v1 Deployment")
	}
	runtime.ReadMemStats(&after)
	if n := after.Mallocs - before.Mallocs; n > 10_000 {
		t.Errorf("a schema lookup after the warm-up allocated %d objects: the warm-up did not parse the schema", n)
	}
	if err := json.Unmarshal([]byte(lines[1]), &res); err != nil {
		t.Fatal(err)
	}
	if res.Error != nil || len(res.Objects) != 1 || !strings.Contains(lines[1], `"b":"2"`) || !strings.Contains(lines[1], `"a":"1"`) {
		t.Errorf("render after the warm-up answered %s, want the patched ConfigMap", lines[1])
	}
}

package render

import (
	"testing"
	"time"
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

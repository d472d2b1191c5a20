package hosttext

import "sync"

// Locks hands out one mutex per key (a pull or merge request), so an adapter runs
// its comment upserts for one request one at a time inside this process and two
// jobs finishing together cannot both create the sticky comment. The zero value is
// ready to use; it is safe for concurrent use.
type Locks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

// For returns key's mutex, the same one on every call.
func (l *Locks) For(key string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	m, ok := l.m[key]
	if !ok {
		if l.m == nil {
			l.m = map[string]*sync.Mutex{}
		}
		m = &sync.Mutex{}
		l.m[key] = m
	}
	return m
}

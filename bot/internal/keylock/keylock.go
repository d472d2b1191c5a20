package keylock

import "sync"

// Locks hands out one mutex per key (a pull request, a mirror directory), so work
// on one key runs one at a time inside this process: two jobs finishing together
// cannot both create the sticky comment. The zero value is ready to use; it is
// safe for concurrent use.
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

package metrics

import (
	"sync"
	"sync/atomic"
)

// cache maps a small, slowly growing key set (stages, topics) to
// pre-curried collectors. Reads are one atomic load and a map lookup, with
// no lock and no allocation; a miss copies the map under a lock. It suits
// keys that are few and stable, which label values here must be anyway.
type cache[K comparable, V any] struct {
	m  atomic.Pointer[map[K]V]
	mu sync.Mutex
	mk func(K) V
}

func newCache[K comparable, V any](mk func(K) V) *cache[K, V] {
	return &cache[K, V]{mk: mk}
}

// get returns the value for k, making it on first use.
func (c *cache[K, V]) get(k K) V {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
	}
	next := make(map[K]V, 1+lenOf(old))
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	v := c.mk(k)
	next[k] = v
	c.m.Store(&next)
	return v
}

func lenOf[K comparable, V any](m *map[K]V) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

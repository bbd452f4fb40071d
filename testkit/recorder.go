package testkit

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// recorder is what [DeadLetters] and [Producer] share: the items they
// accepted, in order, how many calls handed them one, a failure function
// that may refuse an item, and a channel closed on every accepted item,
// for Wait. Its methods are safe for concurrent use.
type recorder[T any] struct {
	mu      sync.Mutex
	items   []T
	calls   int
	fail    func(T) error
	changed chan struct{} // closed and replaced on every recorded item
	timeout time.Duration
}

func newRecorder[T any]() recorder[T] {
	return recorder[T]{changed: make(chan struct{}), timeout: WaitTimeout}
}

// accept counts a call, then asks the failure function, if any, outside
// the lock: its error is returned and v is not recorded; otherwise v is
// recorded and accept returns nil.
func (r *recorder[T]) accept(v T) error {
	r.mu.Lock()
	r.calls++
	fail := r.fail
	r.mu.Unlock()
	if fail != nil {
		if err := fail(v); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, v)
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

func (r *recorder[T]) failWith(fn func(T) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = fn
}

// recorded returns a copy of the items, in the order they were accepted.
func (r *recorder[T]) recorded() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.items)
}

// counts returns how many items were recorded and how many calls were
// made, refused ones included.
func (r *recorder[T]) counts() (recorded, calls int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.items), r.calls
}

// recordedLen returns how many items were recorded.
func (r *recorder[T]) recordedLen() int {
	n, _ := r.counts()
	return n
}

// callCount returns how many calls were made, refused ones included.
func (r *recorder[T]) callCount() int {
	_, calls := r.counts()
	return calls
}

// collect returns what pick makes of each recorded item it keeps, in
// arrival order (nil when it keeps none).
func collect[T, V any](r *recorder[T], pick func(T) (V, bool)) []V {
	var out []V
	for _, item := range r.recorded() {
		if v, ok := pick(item); ok {
			out = append(out, v)
		}
	}
	return out
}

// wait blocks until at least n items were recorded and returns a copy of
// them. After r.timeout it fails t with "testkit: <what is recorded>
// after <timeout>, waiting for n"; a negative n fails t at once, naming
// method.
func (r *recorder[T]) wait(t testing.TB, n int, method string, describe func() string) []T {
	t.Helper()
	if n < 0 {
		t.Fatalf("testkit: %s(%d): n must not be negative", method, n)
		return nil
	}
	timer := time.NewTimer(r.timeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		got, changed := len(r.items), r.changed
		r.mu.Unlock()
		if got >= n {
			return r.recorded()
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("testkit: %s after %v, waiting for %d", describe(), r.timeout, n)
			return nil
		}
	}
}

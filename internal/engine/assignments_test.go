package engine

import (
	"errors"
	"slices"
	"sync"
	"testing"
)

type worker struct {
	key    string
	mu     *sync.Mutex
	events *[]string
}

func (w worker) Drain() { w.mu.Lock(); *w.events = append(*w.events, "drain "+w.key); w.mu.Unlock() }
func (w worker) Kill()  { w.mu.Lock(); *w.events = append(*w.events, "kill "+w.key); w.mu.Unlock() }

func newTestAssignments() (*assignments[string, worker], *[]string, *[]string) {
	var mu sync.Mutex
	var events, started []string
	m := newAssignments(func(k string) (worker, error) {
		if k == "bad" {
			return worker{}, errors.New("cannot build bad")
		}
		started = append(started, k)
		return worker{key: k, mu: &mu, events: &events}, nil
	})
	return m, &started, &events
}

func TestAssignStartsEachKeyOnce(t *testing.T) {
	m, started, _ := newTestAssignments()
	if err := m.Assign([]string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Assign([]string{"b", "c"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(*started, []string{"a", "b", "c"}) || !slices.Equal(m.Owned(), []string{"a", "b", "c"}) {
		t.Fatalf("started %v, owned %v", *started, m.Owned())
	}
}

func TestAssignStopsAtTheFirstFailureKeepingWhatStarted(t *testing.T) {
	m, _, _ := newTestAssignments()
	err := m.Assign([]string{"a", "bad", "c"})
	if err == nil || !slices.Equal(m.Owned(), []string{"a"}) {
		t.Fatalf("err %v, owned %v; want an error with only a owned", err, m.Owned())
	}
}

func TestRevokeDrainsOnlyOwnedKeysAndForgetsThem(t *testing.T) {
	m, _, events := newTestAssignments()
	_ = m.Assign([]string{"a", "b", "c"})
	keys, ws := m.Revoke([]string{"c", "x", "a"})
	if !slices.Equal(keys, []string{"c", "a"}) || len(ws) != 2 {
		t.Fatalf("revoked %v", keys)
	}
	slices.Sort(*events)
	if !slices.Equal(*events, []string{"drain a", "drain c"}) {
		t.Fatalf("events %v", *events)
	}
	if !slices.Equal(m.Owned(), []string{"b"}) {
		t.Fatalf("owned %v, want [b]", m.Owned())
	}
	if _, ok := m.Worker("a"); ok {
		t.Fatal("a still has a worker")
	}
}

func TestLoseKillsAndShutdownDrainsTheRest(t *testing.T) {
	m, _, events := newTestAssignments()
	_ = m.Assign([]string{"a", "b", "c"})
	if ws := m.Lose([]string{"b"}); len(ws) != 1 {
		t.Fatalf("lost %d workers", len(ws))
	}
	keys, _ := m.Shutdown()
	if !slices.Equal(keys, []string{"a", "c"}) || len(m.Owned()) != 0 {
		t.Fatalf("shut down %v, owned %v", keys, m.Owned())
	}
	slices.Sort(*events)
	if !slices.Equal(*events, []string{"drain a", "drain c", "kill b"}) {
		t.Fatalf("events %v", *events)
	}
	// Re-assigning a revoked key starts a new worker.
	if err := m.Assign([]string{"a"}); err != nil || !slices.Equal(m.Owned(), []string{"a"}) {
		t.Fatalf("re-assign: %v %v", err, m.Owned())
	}
}

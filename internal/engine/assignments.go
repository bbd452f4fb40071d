package engine

import (
	"iter"
	"sync"
)

// This file is the assignment state machine: which partitions are owned,
// and what assigning, revoking, losing and shutting down do to the graph
// that runs each one (the Group's Assign, Revoke, Lose and Shutdown).
//
// It is driven by one goroutine (the source's poll loop). Workers of
// several partitions are stopped concurrently, and every call returns only
// after the workers it stopped have fully exited, so once Revoke, Lose or
// Shutdown returns, nothing of those partitions runs any more, except a
// user function abandoned because it ignored its context (abandon.go),
// which can no longer change what is committed.

// stoppable runs one owned partition (a *graph).
type stoppable interface {
	// Drain stops input, lets in-flight work finish within the worker's
	// drain deadline, and returns after every goroutine of the worker
	// exited or was abandoned.
	Drain()
	// Kill cancels the worker at once and returns after every goroutine of
	// the worker exited or was abandoned. Nothing it did afterwards may be
	// committed.
	Kill()
}

// assignments tracks owned keys (partitions) and their workers. The zero
// value is not usable; use newAssignments. Methods must not be called
// concurrently.
type assignments[K comparable, W stoppable] struct {
	start func(K) (W, error)
	owned map[K]W
	order []K // assignment order, for deterministic iteration
}

// newAssignments returns assignments that call start to create the worker
// of every newly assigned key.
func newAssignments[K comparable, W stoppable](start func(K) (W, error)) *assignments[K, W] {
	return &assignments[K, W]{start: start, owned: make(map[K]W)}
}

// Assign starts a worker for each key not owned yet, in order. Keys
// already owned are ignored. On the first start error it stops and returns
// it; keys started before the error stay owned.
func (m *assignments[K, W]) Assign(keys []K) error {
	for _, k := range keys {
		if _, ok := m.owned[k]; ok {
			continue
		}
		w, err := m.start(k)
		if err != nil {
			return err
		}
		m.owned[k] = w
		m.order = append(m.order, k)
	}
	return nil
}

// Revoke drains the workers of the owned keys among keys, concurrently,
// and returns those keys (in the given order) with their workers once all
// have exited. Keys not owned are ignored.
func (m *assignments[K, W]) Revoke(keys []K) ([]K, []W) {
	ks, ws := m.remove(keys)
	each(ws, W.Drain)
	return ks, ws
}

// Lose kills the workers of the owned keys among keys, concurrently, and
// returns them once all have exited.
func (m *assignments[K, W]) Lose(keys []K) []W {
	_, ws := m.remove(keys)
	each(ws, W.Kill)
	return ws
}

// Shutdown revokes every owned key, like Revoke.
func (m *assignments[K, W]) Shutdown() ([]K, []W) {
	return m.Revoke(m.Owned())
}

// Owned returns the owned keys in assignment order.
func (m *assignments[K, W]) Owned() []K {
	return append([]K(nil), m.order...)
}

// All yields the owned keys with their workers in assignment order,
// without copying them (Owned does); the assignments must not change
// during the iteration.
func (m *assignments[K, W]) All() iter.Seq2[K, W] {
	return func(yield func(K, W) bool) {
		for _, k := range m.order {
			if !yield(k, m.owned[k]) {
				return
			}
		}
	}
}

// Worker returns the worker of an owned key.
func (m *assignments[K, W]) Worker(k K) (W, bool) {
	w, ok := m.owned[k]
	return w, ok
}

func (m *assignments[K, W]) remove(keys []K) ([]K, []W) {
	var ks []K
	var ws []W
	for _, k := range keys {
		w, ok := m.owned[k]
		if !ok {
			continue
		}
		delete(m.owned, k)
		ks = append(ks, k)
		ws = append(ws, w)
	}
	if len(ks) > 0 {
		kept := m.order[:0]
		for _, k := range m.order {
			if _, ok := m.owned[k]; ok {
				kept = append(kept, k)
			}
		}
		clear(m.order[len(kept):])
		m.order = kept
	}
	return ks, ws
}

// each runs stop on every worker concurrently and waits for all.
func each[W stoppable](ws []W, stop func(W)) {
	if len(ws) == 1 {
		stop(ws[0])
		return
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { stop(w) })
	}
	wg.Wait()
}

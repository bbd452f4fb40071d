package txsinktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink/txsink"
)

// MemStore is an in-memory txsink.Store with the semantics a database
// gives: a transaction's values and positions become visible together at
// Commit; a StoreOffset locks the partition's position until its
// transaction ends, and a Claim waits for that lock (as a row lock in
// SQL), so a member fenced by a Claim either committed before it or
// cannot commit at all. It is the reference the conformance suite is
// checked against, and a store for tests of a graph ending in a
// txsink.Writer that need no database. Safe for concurrent use.
type MemStore[T any] struct {
	// Refuse, when not nil, returns a non-nil error for a value the store
	// refuses (as a constraint would): Write and WriteOne return it
	// marked with sluice.Invalid. Set it before use.
	Refuse func(T) error

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when a lock is released
	rows    []T
	pos     map[memKey]txsink.Position
	locks   map[memKey]*memTx[T]
	fail    []error // injected errors for the next Commits
	lost    []error // injected errors reported after the next Commits applied
	commits int

	failReads  []error         // injected errors for the next Reads
	failClaims []error         // injected errors for the next Claims
	failBegins []error         // injected errors for the next Begins
	commitGate chan chan error // HoldCommits: each Commit waits here
}

type memKey struct {
	group string
	tp    sluice.TopicPartition
}

// NewMemStore returns an empty store.
func NewMemStore[T any]() *MemStore[T] {
	return &MemStore[T]{changed: make(chan struct{}), pos: map[memKey]txsink.Position{}, locks: map[memKey]*memTx[T]{}}
}

var _ txsink.Store[int] = (*MemStore[int])(nil)

// Rows returns the committed values, in commit order.
func (m *MemStore[T]) Rows() []T {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.rows)
}

// Commits returns how many transactions committed.
func (m *MemStore[T]) Commits() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.commits
}

// push queues errs for the calls that take them (takeErr).
func (m *MemStore[T]) push(q *[]error, errs []error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	*q = append(*q, errs...)
}

// FailCommits makes the next len(errs) Commits fail with errs, in order,
// without committing (a transient error, unless marked otherwise).
func (m *MemStore[T]) FailCommits(errs ...error) {
	m.push(&m.fail, errs)
}

// LoseCommitReplies makes the next len(errs) Commits apply and then fail
// with errs, as when the connection drops after the database committed:
// the caller cannot tell whether the transaction committed.
func (m *MemStore[T]) LoseCommitReplies(errs ...error) {
	m.push(&m.lost, errs)
}

// FailReads makes the next len(errs) Reads fail with errs, in order (as
// when the connection is still down after a commit's reply was lost).
func (m *MemStore[T]) FailReads(errs ...error) {
	m.push(&m.failReads, errs)
}

// FailClaims makes the next len(errs) Claims fail with errs, in order,
// without raising any epoch.
func (m *MemStore[T]) FailClaims(errs ...error) {
	m.push(&m.failClaims, errs)
}

// FailBegins makes the next len(errs) Begins fail with errs, in order.
func (m *MemStore[T]) FailBegins(errs ...error) {
	m.push(&m.failBegins, errs)
}

// HoldCommits makes every later Commit wait, before it applies, until the
// test takes it from the returned channel: the test receives a reply
// channel, and the Commit goes on (and applies) once the test sends nil,
// or fails with the error sent without applying. The Commit's caller
// keeps the partitions it locked meanwhile.
func (m *MemStore[T]) HoldCommits() <-chan chan error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commitGate = make(chan chan error)
	return m.commitGate
}

// takeErr pops the first of errs; m.mu is held.
func takeErr(errs *[]error) error {
	if len(*errs) == 0 {
		return nil
	}
	err := (*errs)[0]
	*errs = (*errs)[1:]
	return err
}

// Position returns the stored position of tp in group.
func (m *MemStore[T]) Position(group string, tp sluice.TopicPartition) (txsink.Position, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pos[memKey{group, tp}]
	p.Invalid = slices.Clone(p.Invalid)
	return p, ok
}

// Claim implements txsink.Store.
func (m *MemStore[T]) Claim(ctx context.Context, group string, tps []sluice.TopicPartition) (map[sluice.TopicPartition]txsink.Position, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := takeErr(&m.failClaims); err != nil {
		return nil, err
	}
	if err := m.waitUnlocked(ctx, group, tps...); err != nil {
		return nil, err
	}
	out := make(map[sluice.TopicPartition]txsink.Position, len(tps))
	for _, tp := range tps {
		k := memKey{group, tp}
		p, ok := m.pos[k]
		if !ok {
			p = txsink.Position{Next: -1, Written: -1}
		}
		p.Epoch++
		m.pos[k] = p
		p.Invalid = slices.Clone(p.Invalid)
		out[tp] = p
	}
	return out, nil
}

// Read implements txsink.Store: it waits, as Claim does, for a
// transaction that stored the position to end.
func (m *MemStore[T]) Read(ctx context.Context, group string, tp sluice.TopicPartition) (txsink.Position, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := takeErr(&m.failReads); err != nil {
		return txsink.Position{}, false, err
	}
	if err := m.waitUnlocked(ctx, group, tp); err != nil {
		return txsink.Position{}, false, err
	}
	p, ok := m.pos[memKey{group, tp}]
	p.Invalid = slices.Clone(p.Invalid)
	return p, ok, nil
}

// waitUnlocked returns once no open transaction holds the position of
// any of tps in group (StoreOffset locks it until the transaction ends),
// or with ctx's error. m.mu is held, and released while it waits.
func (m *MemStore[T]) waitUnlocked(ctx context.Context, group string, tps ...sluice.TopicPartition) error {
	for {
		held := false
		for _, tp := range tps {
			if m.locks[memKey{group, tp}] != nil {
				held = true
			}
		}
		if !held {
			return nil
		}
		if err := m.awaitChange(ctx); err != nil {
			return err
		}
	}
}

// awaitChange waits until a lock is released, or ctx is done (its error).
// m.mu is held, and released while it waits.
func (m *MemStore[T]) awaitChange(ctx context.Context) error {
	ch := m.changed
	m.mu.Unlock()
	defer m.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Begin implements txsink.Store.
func (m *MemStore[T]) Begin(context.Context) (txsink.Tx[T], error) {
	m.mu.Lock()
	err := takeErr(&m.failBegins)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &memTx[T]{m: m, pos: map[memKey]txsink.Position{}}, nil
}

// memTx is one MemStore transaction.
type memTx[T any] struct {
	m      *MemStore[T]
	rows   []T
	pos    map[memKey]txsink.Position
	broken error // a Write failed: only Rollback is allowed
	ended  bool
}

var errTxEnded = errors.New("txsinktest: transaction already ended")

func (t *memTx[T]) usable() error {
	if t.ended {
		return errTxEnded
	}
	return t.broken
}

// Write implements txsink.Tx.
func (t *memTx[T]) Write(_ context.Context, values []T) error {
	if err := t.usable(); err != nil {
		return err
	}
	for i, v := range values {
		if err := t.refused(v); err != nil {
			t.broken = fmt.Errorf("txsinktest: transaction aborted by value %d of the batch: %w", i, err)
			return err
		}
	}
	t.rows = append(t.rows, values...)
	return nil
}

// WriteOne implements txsink.Tx.
func (t *memTx[T]) WriteOne(_ context.Context, v T) error {
	if err := t.usable(); err != nil {
		return err
	}
	if err := t.refused(v); err != nil {
		return err
	}
	t.rows = append(t.rows, v)
	return nil
}

func (t *memTx[T]) refused(v T) error {
	if t.m.Refuse == nil {
		return nil
	}
	if err := t.m.Refuse(v); err != nil {
		return sluice.Invalid(err)
	}
	return nil
}

// StoreOffset implements txsink.Tx.
func (t *memTx[T]) StoreOffset(ctx context.Context, group string, tp sluice.TopicPartition, p txsink.Position) error {
	if err := t.usable(); err != nil {
		return err
	}
	m, k := t.m, memKey{group, tp}
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.locks[k] != nil && m.locks[k] != t {
		if err := m.awaitChange(ctx); err != nil {
			return err
		}
	}
	if cur, ok := m.pos[k]; !ok || cur.Epoch != p.Epoch {
		t.broken = txsink.ErrFenced
		return fmt.Errorf("%w: %s[%d] epoch %d", txsink.ErrFenced, tp.Topic, tp.Partition, p.Epoch)
	}
	m.locks[k] = t
	p.Invalid = slices.Clone(p.Invalid)
	t.pos[k] = p
	return nil
}

// Commit implements txsink.Tx.
func (t *memTx[T]) Commit(context.Context) error {
	if err := t.usable(); err != nil {
		return err
	}
	m := t.m
	m.mu.Lock()
	gate := m.commitGate
	m.mu.Unlock()
	var held error
	if gate != nil {
		reply := make(chan error)
		gate <- reply
		held = <-reply
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t.ended = true
	defer t.unlockLocked()
	if held != nil {
		return held
	}
	if len(m.fail) > 0 {
		err := m.fail[0]
		m.fail = m.fail[1:]
		return err
	}
	m.rows = append(m.rows, t.rows...)
	for k, p := range t.pos {
		m.pos[k] = p
	}
	m.commits++
	if len(m.lost) > 0 {
		err := m.lost[0]
		m.lost = m.lost[1:]
		return err
	}
	return nil
}

// Rollback implements txsink.Tx.
func (t *memTx[T]) Rollback(context.Context) error {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	t.ended = true
	t.unlockLocked()
	return nil
}

// unlockLocked releases the partitions t locked; m.mu is held.
func (t *memTx[T]) unlockLocked() {
	released := false
	for k := range t.pos {
		if t.m.locks[k] == t {
			delete(t.m.locks, k)
			released = true
		}
	}
	if released {
		close(t.m.changed)
		t.m.changed = make(chan struct{})
	}
}

package stages

import (
	"context"
	"reflect"
	"sync"

	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Limiter bounds how many calls run at once across every partition of a
// consumer: a limit for the whole consumer, where the workers of [Pool]
// and [PoolByKey] are a limit for each partition alone (a consumer with
// eight partitions and Pool(in, 16, fn) makes up to 128 calls at once).
// Create it once, before pipeline.Run, and give it as an option to Map,
// FlatMap, Pool, PoolByKey or Each in every partition's graph:
//
//	scoring := stages.NewLimiter(16) // 16 calls at once in this consumer
//	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
//		...
//		scored := stages.Pool(orders, 16, score, scoring)
//	}
//
// A call takes a slot before fn runs and gives it back when fn returns,
// for each attempt: a call waiting for its retry's backoff holds no slot.
// Waiting for a slot ends with the partition's context (the partition was
// lost, its drain timed out): the value is then left uncommitted, as any
// value in hand when that context ends. A graceful revoke waits for its
// values' slots like for their calls, within the drain timeout. The wait
// counts in the stage's call time (sluice.HookStageCall) and for the
// stuck detector. Waiters take free slots in the order they came.
//
// One Limiter may serve several stages and several Runs (one limit on a
// service for the whole process). A Limiter created by the builder, so a
// different one in each partition's graph, is a limit per partition: the
// build fails naming the stage when another partition's graph of the same
// Run and topic has a different Limiter at the same place. A Limiter
// given to a stage that does not take it (sink.Produce, SharedBatcher)
// fails the build too, and does not compile on Filter, Route, Tee,
// Batch, Unbatch and Discard, which call no function of yours.
type Limiter struct {
	n     int
	slots chan struct{}
}

// NewLimiter returns a [Limiter] of n calls at once. With n < 1, every
// stage given it fails the build saying so.
func NewLimiter(n int) *Limiter {
	l := &Limiter{n: n}
	if n >= 1 {
		l.slots = make(chan struct{}, n)
	}
	return l
}

func (l *Limiter) applyToCall(cs *callSpec) {
	switch {
	case l == nil:
		problem(&cs.StageSpec, "the *stages.Limiter is nil; create it with stages.NewLimiter")
		return
	case l.n < 1:
		problem(&cs.StageSpec, "stages.NewLimiter(%d): n must be at least 1", l.n)
	case cs.lim != nil && cs.lim != l:
		problem(&cs.StageSpec, "two stages.Limiters given to one stage; give it one")
	}
	cs.lim = l
}

// acquire takes a slot, waiting until one is free or ctx ends (then it
// returns ctx's cause).
func (l *Limiter) acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (l *Limiter) release() { <-l.slots }

// KeyLock runs one call at a time per key across every partition of a
// consumer: a lock for the whole consumer, where [PoolByKey] keeps one key
// in order within each partition alone (one account whose records land
// on two partitions is called from both at once). Create it once, before
// pipeline.Run, and give it as an option in every partition's graph:
// directly to PoolByKey, which locks the key it is given; to Map, FlatMap,
// Pool or Each through [LockKey], which says what the key is.
//
//	accounts := stages.NewKeyLock() // one call at a time per account in this consumer
//	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
//		...
//		charged := stages.PoolByKey(orders, 16, account, charge, accounts)
//	}
//
// A call holds its key's lock while fn runs, for each attempt (not during
// a retry's backoff). Calls for one key from several partitions take
// turns in the order they came; within a partition, PoolByKey, Map,
// FlatMap and Each make them in offset order, Pool in no particular
// order. Waiting ends with the partition's context, and counts in the
// stage's call time and for the stuck detector, as for a [Limiter]. Given
// with a Limiter, a call waits for its key first, then for a slot, so a
// call waiting for its key holds no slot. A panic of the key function
// stops Run naming the value.
//
// Like a Limiter, one KeyLock may serve several stages and Runs; one
// created by the builder fails the build when another partition's graph
// of the same Run and topic has a different KeyLock at the same place.
// Memory: one entry per key being called or waited for, none for idle
// keys.
type KeyLock struct {
	mu    sync.Mutex
	turns map[string]*keyTurn
	free  []*keyTurn // entries of keys nobody holds, for reuse
}

// keyTurn is one key's lock: ch holds a token while a call holds it, refs
// counts the calls holding or waiting for it.
type keyTurn struct {
	ch   chan struct{}
	refs int
}

// NewKeyLock returns an empty [KeyLock] (as the zero KeyLock is).
func NewKeyLock() *KeyLock { return &KeyLock{} }

func (k *KeyLock) applyToCall(cs *callSpec) {
	switch {
	case k == nil:
		problem(&cs.StageSpec, "the *stages.KeyLock is nil; create it with stages.NewKeyLock")
		return
	case cs.keys != nil && cs.keys != k:
		problem(&cs.StageSpec, "two stages.KeyLocks given to one stage; give it one")
	}
	cs.keys = k
}

// lock takes key's lock, waiting until it is free or ctx ends (then it
// returns ctx's cause and holds nothing).
func (k *KeyLock) lock(ctx context.Context, key string) (*keyTurn, error) {
	k.mu.Lock()
	if k.turns == nil {
		k.turns = make(map[string]*keyTurn)
	}
	t := k.turns[key]
	if t == nil {
		if n := len(k.free); n > 0 {
			t = k.free[n-1]
			k.free = k.free[:n-1]
		} else {
			t = &keyTurn{ch: make(chan struct{}, 1)}
		}
		k.turns[key] = t
	}
	t.refs++
	k.mu.Unlock()
	select {
	case t.ch <- struct{}{}:
		return t, nil
	default:
	}
	select {
	case t.ch <- struct{}{}:
		return t, nil
	case <-ctx.Done():
		k.leave(key, t)
		return nil, context.Cause(ctx)
	}
}

// unlock gives back the lock taken by lock.
func (k *KeyLock) unlock(key string, t *keyTurn) {
	<-t.ch
	k.leave(key, t)
}

// leave drops a reference to key's entry, forgetting the key when nobody
// holds or waits for it.
func (k *KeyLock) leave(key string, t *keyTurn) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if t.refs--; t.refs == 0 {
		delete(k.turns, key)
		if len(k.free) < 64 {
			k.free = append(k.free, t)
		}
	}
}

// keyOption is the option [LockKey] returns.
type keyOption struct {
	keys *KeyLock
	key  any
}

func (o keyOption) applyToCall(cs *callSpec) {
	o.keys.applyToCall(cs)
	switch {
	case o.key == nil:
		problem(&cs.StageSpec, "stages.LockKey: key is nil")
	case cs.key != nil:
		problem(&cs.StageSpec, "two stages.LockKey options given to one stage; give it one")
	}
	cs.key = o.key
}

// LockKey is the option that gives keys, a [KeyLock], to Map, FlatMap,
// Pool, PoolByKey or Each with the key of each value: calls for values
// with the same key never overlap, in any partition of the consumer. T
// must be the type of the stage's input values, or the build fails naming
// the stage and both types. Given to PoolByKey it locks this key instead
// of the pool's own.
func LockKey[T any](keys *KeyLock, key func(T) string) CallOption {
	var k any
	if key != nil {
		k = key
	}
	return keyOption{keys: keys, key: k}
}

// limits are the consumer-wide limits of one stage's calls.
type limits[In any] struct {
	lim  *Limiter
	keys *KeyLock
	key  func(In) string
}

// limitsOf resolves cs's limits for a stage of input type In, recording a
// problem in cs when they do not fit: ownKey is the stage's own key
// (PoolByKey's), nil for the others. It also declares them in
// cs.Uses, for the build-time check of a limit created by the builder.
func limitsOf[In any](cs *callSpec, fname string, ownKey func(In) string) limits[In] {
	l := limits[In]{lim: cs.lim, keys: cs.keys}
	if l.lim != nil {
		cs.Uses = append(cs.Uses, stagekit.Use{Kind: "Limiter", Object: l.lim})
	}
	if l.keys == nil {
		return l
	}
	cs.Uses = append(cs.Uses, stagekit.Use{Kind: "KeyLock", Object: l.keys})
	switch key := cs.key.(type) {
	case func(In) string:
		l.key = key
	case nil:
		if ownKey == nil {
			problem(&cs.StageSpec, "stages.%s: a KeyLock needs the key of each value: give stages.LockKey(keys, key) instead", fname)
			l.keys = nil
			return l
		}
		l.key = ownKey
	default:
		problem(&cs.StageSpec, "stages.LockKey: key is a %T; this stage's values are %s, so it must be a func(%[2]s) string", key, typeName[In]())
		l.keys = nil
	}
	return l
}

// typeName names T as its user spells it ("sluice.Record").
func typeName[T any]() string { return reflect.TypeFor[T]().String() }

// limitedFn returns fn, the function of the calling stage fname, wrapped
// in the limits cs gives it (key is the stage's own key function, if
// any). A nil fn is a build problem of the stage.
func limitedFn[In, Out any](cs *callSpec, fname string, key func(In) string, fn func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	if fn == nil {
		problem(&cs.StageSpec, "stages.%s: fn is nil", fname)
	}
	return wrap(limitsOf(cs, fname, key), fn)
}

// wrap returns fn calling the user's function under the limits: its key's
// lock first, then a slot. Without limits it returns fn itself.
func wrap[In, Out any](l limits[In], fn func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	if fn == nil || (l.lim == nil && l.keys == nil) {
		return fn
	}
	return func(ctx context.Context, v In) (out Out, err error) {
		if l.keys != nil {
			key := l.key(v)
			t, err := l.keys.lock(ctx, key)
			if err != nil {
				return out, err
			}
			defer l.keys.unlock(key, t)
		}
		if l.lim != nil {
			if err := l.lim.acquire(ctx); err != nil {
				return out, err
			}
			defer l.lim.release()
		}
		return fn(ctx, v)
	}
}

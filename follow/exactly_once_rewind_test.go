package follow_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/internal/exactlyonce"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// simTxn is a transactional producer and a group's committed offsets in
// memory, for a simulated consumer (simSource): produce adds an output to
// the open transaction, Commit makes its outputs visible and its offsets
// the group's, Abort drops them, Rewind moves the simulated consumer's
// positions back to the committed offsets.
type simTxn struct {
	src *simSource // Rewind moves its positions (on the poll goroutine)

	mu        sync.Mutex
	open      bool
	pending   []string
	visible   []string
	committed map[int32]int64
	misplaced []string // outputs produced with no transaction open
	failNext  bool     // the next Commit fails (the transaction stays open)
	aborts    int
	rewinds   int
}

func (s *simTxn) Begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open {
		return errors.New("sim: Begin with a transaction open")
	}
	s.open = true
	return nil
}

func (s *simTxn) Commit(_ context.Context, offs []sluice.Offset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return errors.New("sim: Commit without a transaction")
	}
	if s.failNext {
		s.failNext = false
		return errors.New("sim: the commit failed")
	}
	s.open = false
	s.visible = append(s.visible, s.pending...)
	s.pending = nil
	for _, o := range offs {
		s.committed[o.Partition] = o.Next
	}
	return nil
}

func (s *simTxn) Abort(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open = false
	s.pending = nil
	s.aborts++
	return nil
}

func (s *simTxn) Rewind(_ context.Context, tps []sluice.TopicPartition) ([]sluice.TopicPartition, error) {
	s.mu.Lock()
	s.rewinds++
	s.mu.Unlock()
	for _, tp := range tps {
		s.src.pos[tp.Partition] = s.committedOf(tp.Partition)
	}
	return nil, nil
}

func (s *simTxn) committedOf(p int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed[p] // 0 when none: the start
}

func (s *simTxn) produce(out string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		s.misplaced = append(s.misplaced, out)
		return
	}
	s.pending = append(s.pending, out)
}

// failNextCommit makes the next Commit fail while the source's chaos
// lasts (checked under the lock calm takes).
func (s *simTxn) failNextCommit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.src.chaos.Load() {
		s.failNext = true
	}
}

func (s *simTxn) snapshot() (visible []string, committed map[int32]int64, misplaced []string, aborts, rewinds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := make(map[int32]int64, len(s.committed))
	for p, o := range s.committed {
		c[p] = o
	}
	return slices.Clone(s.visible), c, slices.Clone(s.misplaced), s.aborts, s.rewinds
}

// simSource is a consumer of the partitions 0..parts-1 of "orders" (each
// of size records) running exactly-once through simTxn: its poll loop,
// driven by rng, fetches from each partition not paused at its position
// and delivers, pauses a partition Deliver asked to pause until Resumable
// lists it, calls Polled after each poll, Offsets at random, makes a
// commit fail at random, and revokes or loses a partition at random and
// assigns it again at once (from the committed offset, as its next owner
// would start). Rewind moves its positions back.
type simSource struct {
	txn    *simTxn
	rng    *rand.Rand
	parts  int32
	size   int64
	batch  int64       // records a delivery at most
	chaos  atomic.Bool // fail commits, revoke and lose partitions
	pos    map[int32]int64
	paused map[int32]bool
}

func (s *simSource) Run(ctx context.Context, g sluice.Group) error {
	feed, eg := exactlyonce.Insert(ctx, g, s.txn, exactlyonce.Config{})
	var all []sluice.TopicPartition
	for p := range s.parts {
		all = append(all, tp("orders", p))
		s.pos[p] = s.txn.committedOf(p)
	}
	if err := feed.Assign(all); err != nil {
		return err
	}
	for {
		if ctx.Err() != nil {
			feed.Shutdown()
			return eg.Err()
		}
		switch n := s.rng.IntN(100); {
		case n < 50:
			s.poll(feed)
		case n < 65:
			s.resume(feed)
		case n < 80:
			feed.Offsets()
		case !s.chaos.Load():
		case n < 85:
			s.txn.failNextCommit()
		case n < 90:
			p := s.rng.Int32N(s.parts)
			feed.Revoke([]sluice.TopicPartition{tp("orders", p)})
			s.reassign(feed, p)
		case n < 93:
			p := s.rng.Int32N(s.parts)
			feed.Lose([]sluice.TopicPartition{tp("orders", p)})
			s.reassign(feed, p)
		}
		if err := eg.Err(); err != nil {
			feed.Shutdown()
			return err
		}
		select {
		case <-feed.Wake():
			s.resume(feed)
		case <-time.After(time.Millisecond): // the poll's timeout
		case <-ctx.Done():
		}
	}
}

// reassign assigns p again after a revoke or loss, from the committed
// offset, as its next owner starts.
func (s *simSource) reassign(feed sluice.Group, p int32) {
	delete(s.paused, p)
	s.pos[p] = s.txn.committedOf(p)
	_ = feed.Assign([]sluice.TopicPartition{tp("orders", p)})
}

// poll delivers up to batch records of every partition not paused.
func (s *simSource) poll(feed sluice.Group) {
	for p := range s.parts {
		if s.paused[p] || s.pos[p] >= s.size {
			continue
		}
		n := min(s.size-s.pos[p], 1+s.rng.Int64N(s.batch))
		var recs []sluice.Record
		for o := s.pos[p]; o < s.pos[p]+n; o++ {
			recs = append(recs, sluice.Record{Topic: "orders", Partition: p, Offset: o, Value: fmt.Appendf(nil, "%d", o)})
		}
		s.pos[p] += n
		if feed.Deliver(tp("orders", p), recs) {
			s.paused[p] = true
		}
	}
	feed.Polled()
}

func (s *simSource) resume(feed sluice.Group) {
	for _, t := range feed.Resumable() {
		delete(s.paused, t.Partition)
	}
}

// TestFollowExactlyOnceSimulated runs a follower over a simulated
// exactly-once consumer (simSource) whose leaders advance at random, with
// commits failing (an abort and a rewind in place, told to the follower)
// and partitions revoked and lost at random while the follower holds
// records of them or of the others. Once the leaders committed
// everything and the group committed the ends, every record's two outputs
// must be visible exactly once, none produced outside a transaction, and
// no record processed before the leaders committed it.
func TestFollowExactlyOnceSimulated(t *testing.T) {
	for seed := range uint64(16) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { simulate(t, simSmall, seed, false) })
		})
	}
}

// TestFollowExactlyOnceSimulatedRestart is TestFollowExactlyOnceSimulated
// with the consumer shut down mid-stream, while the follower holds records
// and a commit may be due (the transactional group holding records
// handed on meanwhile), then started again from the committed offsets:
// the shutdown commits what was processed and nothing past it, and across
// both runs every record's two outputs are visible exactly once.
func TestFollowExactlyOnceSimulatedRestart(t *testing.T) {
	for seed := range uint64(16) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { simulate(t, simSmall, seed, true) })
		})
	}
}

const simParts = 3

// TestFollowExactlyOnceSimulatedHoldPause is TestFollowExactlyOnceSimulated
// with large deliveries and a large in-flight budget: while a commit is
// due the transactional group holds more than holdPause records of a
// partition and asks the follower to pause it, the follower holding the
// next records behind them until the commit let them go (the odd seeds
// also shut down and start again mid-stream, as
// TestFollowExactlyOnceSimulatedRestart).
func TestFollowExactlyOnceSimulatedHoldPause(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { simulate(t, simLarge, seed, seed%2 == 1) })
		})
	}
}

// simShape is the size of a simulation: records a partition, records a
// delivery at most, the runtime's in-flight budget, the leaders' step at
// most.
type simShape struct {
	size, batch, step int64
	inFlight          int
}

// simSmall keeps the transactional group's holding small; simLarge makes
// it hold past holdPause while a commit is due, so that it asks the
// follower to pause partitions.
var (
	simSmall = simShape{size: 300, batch: 7, step: 4, inFlight: 16}
	simLarge = simShape{size: 4000, batch: 128, step: 60, inFlight: 4000}
)

// simRun is one run of a follower over a simSource.
type simRun struct {
	src *simSource
	run *testkit.Running
}

func startSim(t *testing.T, sh simShape, seed uint64, txn *simTxn, leaders *stubLeaders, rec *simRecorder) *simRun {
	src := &simSource{txn: txn, rng: rand.New(rand.NewPCG(seed, 2)), parts: simParts, size: sh.size, batch: sh.batch,
		pos: map[int32]int64{}, paused: map[int32]bool{}}
	src.chaos.Store(true)
	txn.mu.Lock()
	txn.src = src
	txn.mu.Unlock()
	f := newFollower(t, src, leaders, follow.WithInterval(5*time.Millisecond))
	run := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		outs := stages.FlatMap(in, func(_ context.Context, r sluice.Record) ([]string, error) {
			rec.check(r, leaders.get(tp(r.Topic, r.Partition)))
			if r.Offset%5 == 0 {
				time.Sleep(3 * time.Millisecond) // work: records in flight at commit points
			}
			return []string{fmt.Sprintf("%d-%d-a", r.Partition, r.Offset), fmt.Sprintf("%d-%d-b", r.Partition, r.Offset)}, nil
		})
		return stages.Each(outs, func(_ context.Context, out string) error {
			txn.produce(out)
			return nil
		})
	}, pipeline.WithMaxInFlight(sh.inFlight))
	return &simRun{src: src, run: run}
}

// calm ends the chaos: no commit fails from now on.
func (r *simRun) calm() {
	r.src.chaos.Store(false)
	r.src.txn.mu.Lock()
	r.src.txn.failNext = false
	r.src.txn.mu.Unlock()
}

// simRecorder records the records processed before the leaders committed
// them.
type simRecorder struct {
	mu    sync.Mutex
	early []string
}

func (s *simRecorder) check(r sluice.Record, lead int64) {
	if r.Offset < lead {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.early = append(s.early, fmt.Sprintf("%d@%d (leaders at %d)", r.Partition, r.Offset, lead))
}

// advance moves the leaders of every partition on by less than sh.step
// records, steps times, every 2ms.
func advance(sh simShape, rng *rand.Rand, leaders *stubLeaders, lead map[int32]int64, steps int) {
	for range steps {
		time.Sleep(2 * time.Millisecond) // the leaders' pace
		for p := range int32(simParts) {
			lead[p] = min(sh.size, lead[p]+rng.Int64N(sh.step))
			leaders.set("orders", p, lead[p])
		}
	}
}

func simulate(t *testing.T, sh simShape, seed uint64, restart bool) {
	rng := rand.New(rand.NewPCG(seed, 1))
	txn := &simTxn{committed: map[int32]int64{}}
	leaders := newStubLeaders()
	rec := &simRecorder{}
	lead := map[int32]int64{}
	r := startSim(t, sh, seed, txn, leaders, rec)
	if restart {
		advance(sh, rng, leaders, lead, 60+rng.IntN(60))
		r.calm()
		time.Sleep(time.Duration(rng.IntN(8)) * time.Millisecond) // stop at a random point of the poll loop
		if err := r.run.Stop(t); err != nil {
			t.Fatalf("the first run = %v, want nil", err)
		}
		_, c, _, _, _ := txn.snapshot()
		t.Logf("the first run committed %v (leaders at %v)", c, lead)
		for p, o := range c {
			if o > lead[p] {
				t.Errorf("partition %d committed at %d, past the leaders at %d", p, o, lead[p])
			}
		}
		r = startSim(t, sh, seed+1000, txn, leaders, rec)
	}
	advance(sh, rng, leaders, lead, 200)
	for p := range int32(simParts) {
		leaders.set("orders", p, sh.size)
	}
	r.calm()
	deadline := time.Now().Add(time.Minute)
	for {
		_, c, _, _, _ := txn.snapshot()
		done := len(c) == simParts
		for _, o := range c {
			done = done && o == sh.size
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute the group committed %v, want every partition at %d", c, sh.size)
		}
		select {
		case <-r.run.Done():
			t.Fatalf("Run returned %v before the group committed the ends", r.run.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := r.run.Stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	visible, committed, misplaced, aborts, rewinds := txn.snapshot()
	t.Logf("aborts %d, rewinds %d", aborts, rewinds)
	counts := map[string]int{}
	for _, v := range visible {
		counts[v]++
	}
	var bad []string
	for p := range int32(simParts) {
		for o := range int64(sh.size) {
			for _, s := range []string{"a", "b"} {
				k := fmt.Sprintf("%d-%d-%s", p, o, s)
				if counts[k] != 1 {
					bad = append(bad, fmt.Sprintf("%s x%d", k, counts[k]))
				}
				delete(counts, k)
			}
		}
	}
	for k, n := range counts {
		bad = append(bad, fmt.Sprintf("%s x%d (unexpected)", k, n))
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("%d outputs not committed exactly once (aborts %d, rewinds %d, committed %v), first: %v",
			len(bad), aborts, rewinds, committed, bad[:min(10, len(bad))])
	}
	if len(misplaced) > 0 {
		t.Errorf("outputs produced outside a transaction: %v", misplaced[:min(10, len(misplaced))])
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.early) > 0 {
		t.Errorf("records processed before the leaders committed them: %v", rec.early[:min(10, len(rec.early))])
	}
}

package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/internal/goroutinetest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// These tests attack the partition's dead-letter goroutine started with
// its first dead letter, and the end of a graph that the last of its
// goroutines signals (graph.exitOne, graph.endOne): dead letters queued
// as the last stage exits, by a goroutine of another partition (a
// shared batch's writer), by the poll goroutine (share mode), a
// dead-letter goroutine that returns before the stages exit, and
// abandoned graphs.

var tpA, tpB = sluice.TopicPartition{Topic: "t", Partition: 0}, sluice.TopicPartition{Topic: "t", Partition: 1}

// dlRecorder records the dead letters delivered, per partition, and
// whether one of them came twice.
type dlRecorder struct {
	mu   sync.Mutex
	got  map[sluice.TopicPartition][]int64
	dups []string
}

func (r *dlRecorder) add(dl sluice.DeadLetter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got = map[sluice.TopicPartition][]int64{}
	}
	tp := sluice.TopicPartition{Topic: dl.Record.Topic, Partition: dl.Record.Partition}
	if slices.Contains(r.got[tp], dl.Record.Offset) {
		r.dups = append(r.dups, fmt.Sprintf("%v@%d", tp, dl.Record.Offset))
	}
	r.got[tp] = append(r.got[tp], dl.Record.Offset)
}

// of returns the offsets of tp dead-lettered, in delivery order.
func (r *dlRecorder) of(tp sluice.TopicPartition) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got[tp])
}

// destination returns the dead-letter option recording into r; with a
// gate, each delivery first waits for it to close.
func (r *dlRecorder) destination(gate <-chan struct{}) pipeline.Option {
	return pipeline.WithDeadLetter(func(_ context.Context, dl sluice.DeadLetter) error {
		if gate != nil {
			<-gate
		}
		r.add(dl)
		return nil
	})
}

// checkOnce fails t if a dead letter was delivered twice, and forgets
// what was delivered.
func (r *dlRecorder) checkOnce(t *testing.T) {
	t.Helper()
	if dups := r.reset(); len(dups) > 0 {
		t.Errorf("dead-lettered twice: %v", dups)
	}
}

// reset forgets what was delivered and returns the duplicates seen.
func (r *dlRecorder) reset() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	dups := r.dups
	r.got, r.dups = nil, nil
	return dups
}

// bubbleDeadLetterGoroutines counts the goroutines running a partition's
// dead-letter loop in the caller's synctest bubble (goroutines of other
// tests may still be on their way out).
func bubbleDeadLetterGoroutines() int {
	return goroutinetest.CountInBubble(deadLetterLoop)
}

func recordsFrom(tp sluice.TopicPartition, from, to int64) []sluice.Record {
	var out []sluice.Record
	for o := from; o < to; o++ {
		out = append(out, sluice.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: o})
	}
	return out
}

func sortedOffsets(offs []sluice.Offset) []sluice.Offset {
	offs = slices.Clone(offs)
	slices.SortFunc(offs, func(a, b sluice.Offset) int { return int(a.Partition - b.Partition) })
	return offs
}

// A batch closed by the drain is written (and found invalid) by the last
// stage as it exits, the partition's first dead letters: the revoke waits
// until they were all delivered and commits past them, each delivered
// once.
func TestRevokeWaitsForDeadLettersOfABatchFlushedByTheDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		open := sync.OnceFunc(func() { close(gate) })
		var dls dlRecorder
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			defer open()
			if err := g.Assign([]sluice.TopicPartition{tpA}); err != nil {
				return err
			}
			g.Deliver(tpA, recordsOf(tpA, 10))
			synctest.Wait() // the ten records wait in the open batch
			if n := bubbleDeadLetterGoroutines(); n != 0 {
				t.Errorf("%d dead-letter goroutines before anything was invalid, want 0", n)
			}
			revoked := make(chan []sluice.Offset, 1)
			go func() { revoked <- g.Revoke([]sluice.TopicPartition{tpA}) }()
			synctest.Wait() // the drain flushed the batch, Each failed it, its first dead letter waits at the gate
			select {
			case offs := <-revoked:
				t.Errorf("Revoke returned %v before the batch's dead letters were delivered", offs)
				return nil
			default:
			}
			if n := bubbleDeadLetterGoroutines(); n != 1 {
				t.Errorf("%d dead-letter goroutines while the batch's dead letters wait, want 1", n)
			}
			open()
			if offs, want := <-revoked, []sluice.Offset{{TopicPartition: tpA, Next: 10}}; !slices.Equal(offs, want) {
				t.Errorf("Revoke = %v, want %v", offs, want)
			}
			if got, want := dls.of(tpA), offsetsFrom(0, 10); !slices.Equal(got, want) {
				t.Errorf("dead-lettered %v, want %v", got, want)
			}
			synctest.Wait() // the goroutine that ended the graph may still be returning
			if n := bubbleDeadLetterGoroutines(); n != 0 {
				t.Errorf("%d dead-letter goroutines after the revoke, want 0", n)
			}
			return nil
		})
		err := pipeline.Run(t.Context(), src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(stages.Batch(in, 100, time.Hour), func(context.Context, []sluice.Record) error {
				return sluice.Invalid(errors.New("bad batch"))
			})
		}, dls.destination(gate))
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		dls.checkOnce(t)
	})
}

// Under real scheduling, with -race: eight partitions whose last stage
// finds a batch flushed by the drain invalid as it exits (the odd ones),
// revoked together, assigned again twenty times; the dead-letter
// destination delivers in the call, defers a ready outcome or one set
// later on another goroutine. Each revoke returns the end of what was
// delivered, after every dead letter of the odd partitions was
// delivered exactly once, and the even ones dead-letter nothing.
func TestDeadLettersQueuedAsTheLastStageExitsAreDeliveredOnceBeforeTheRevokeReturns(t *testing.T) {
	const parts, n, rounds = 8, 50, 20
	var tps []sluice.TopicPartition
	for p := range int32(parts) {
		tps = append(tps, sluice.TopicPartition{Topic: "t", Partition: p})
	}
	var (
		dls     dlRecorder
		seen    sync.WaitGroup // records past the Map stage
		mode    atomic.Int32   // 0 deliver in the call, 1 defer a ready outcome, 2 defer an outcome set later
		pending sync.WaitGroup // the goroutines setting outcomes later
	)
	src := scriptSource(func(ctx context.Context, g sluice.Group) error {
		defer g.Shutdown()
		for round := range rounds {
			mode.Store(int32(round % 3))
			seen.Add(parts * n)
			if err := g.Assign(tps); err != nil {
				return err
			}
			for _, tp := range tps {
				g.Deliver(tp, recordsOf(tp, n))
			}
			seen.Wait() // every record waits in its partition's open batch
			offs := sortedOffsets(g.Revoke(tps))
			var want []sluice.Offset
			for _, tp := range tps {
				want = append(want, sluice.Offset{TopicPartition: tp, Next: n})
			}
			if !slices.Equal(offs, want) {
				t.Errorf("round %d: Revoke = %v, want %v", round, offs, want)
			}
			for _, tp := range tps {
				var want []int64
				if tp.Partition%2 == 1 {
					want = offsetsFrom(0, n)
				}
				if got := dls.of(tp); !slices.Equal(got, want) {
					t.Errorf("round %d: %v dead-lettered %v by the time Revoke returned, want %v", round, tp, got, want)
				}
			}
			if dups := dls.reset(); len(dups) > 0 {
				t.Errorf("round %d: dead-lettered twice: %v", round, dups)
			}
		}
		return nil
	})
	err := pipeline.Run(t.Context(), src, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		counted := stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
			seen.Done()
			return r, nil
		})
		return stages.Each(stages.Batch(counted, 2*n, time.Hour), func(_ context.Context, b []sluice.Record) error {
			if p.Partition%2 == 1 {
				return sluice.Invalid(errors.New("bad batch"))
			}
			return nil
		})
	}, pipeline.WithDeadLetter(func(ctx context.Context, dl sluice.DeadLetter) error {
		switch mode.Load() {
		case 1:
			o := &laterOutcome{res: make(chan error, 1)}
			o.res <- nil
			if engine.DeferDeadLetter(ctx, o) {
				dls.add(dl)
				return nil
			}
		case 2:
			o := &laterOutcome{res: make(chan error, 1)}
			if engine.DeferDeadLetter(ctx, o) {
				dls.add(dl)
				pending.Go(func() {
					runtime.Gosched()
					o.res <- nil
				})
				return nil
			}
		}
		runtime.Gosched()
		dls.add(dl)
		return nil
	}), quiet)
	pending.Wait()
	goroutinetest.AwaitGone(t, deadLetterLoop)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// laterOutcome is a deferred dead letter whose outcome comes on res.
type laterOutcome struct{ res chan error }

func (o *laterOutcome) Ready() bool { return len(o.res) > 0 }
func (o *laterOutcome) Wait() error { return <-o.res }

// quiet discards Run's log, which has every goroutine's stack when a
// graph is abandoned.
var quiet = pipeline.WithLogger(slog.New(slog.DiscardHandler))

// sharedBuild ends every partition's graph with b.
func sharedBuild(b *stages.SharedBatcher[sluice.Record]) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End { return b.Feed(in) }
}

// A shared batch with values of partitions A and B, written by A's Feed
// stage while B is revoked (B's Feed waits for its values), is found
// invalid: A's goroutine queues B's first dead letters and so starts B's
// dead-letter goroutine. B's revoke returns only once they were
// delivered, and commits past them; each record is dead-lettered once.
func TestSharedBatchWriterStartsTheDeadLetterGoroutineOfARevokedPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		writeGate, dlGate := make(chan struct{}), make(chan struct{})
		openWrite, openDL := sync.OnceFunc(func() { close(writeGate) }), sync.OnceFunc(func() { close(dlGate) })
		var dls dlRecorder
		batcher := stages.NewSharedBatcher(func(context.Context, []sluice.Record) error {
			<-writeGate
			return sluice.Invalid(errors.New("bad batch"))
		}, 4, time.Hour)
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			defer openDL()
			defer openWrite()
			if err := g.Assign([]sluice.TopicPartition{tpA, tpB}); err != nil {
				return err
			}
			g.Deliver(tpB, recordsOf(tpB, 2))
			synctest.Wait()
			g.Deliver(tpA, recordsOf(tpA, 2))
			synctest.Wait() // A closed the batch of four and writes it, at the write gate
			revoked := make(chan []sluice.Offset, 1)
			go func() { revoked <- g.Revoke([]sluice.TopicPartition{tpB}) }()
			synctest.Wait() // B's Feed waits for its values in A's write
			if n := bubbleDeadLetterGoroutines(); n != 0 {
				t.Errorf("%d dead-letter goroutines before the write failed, want 0", n)
			}
			openWrite()
			synctest.Wait() // A queued the four dead letters, two of them B's
			select {
			case offs := <-revoked:
				t.Errorf("Revoke of B returned %v before its dead letters were delivered", offs)
				return nil
			default:
			}
			if n := bubbleDeadLetterGoroutines(); n != 2 {
				t.Errorf("%d dead-letter goroutines with both partitions' dead letters waiting, want 2", n)
			}
			openDL()
			if offs, want := <-revoked, []sluice.Offset{{TopicPartition: tpB, Next: 2}}; !slices.Equal(offs, want) {
				t.Errorf("Revoke of B = %v, want %v", offs, want)
			}
			if got, want := dls.of(tpB), offsetsFrom(0, 2); !slices.Equal(got, want) {
				t.Errorf("B dead-lettered %v by its revoke, want %v", got, want)
			}
			if offs, want := g.Revoke([]sluice.TopicPartition{tpA}), []sluice.Offset{{TopicPartition: tpA, Next: 2}}; !slices.Equal(offs, want) {
				t.Errorf("Revoke of A = %v, want %v", offs, want)
			}
			if got, want := dls.of(tpA), offsetsFrom(0, 2); !slices.Equal(got, want) {
				t.Errorf("A dead-lettered %v, want %v", got, want)
			}
			return nil
		})
		err := pipeline.Run(t.Context(), src, sharedBuild(batcher), dls.destination(dlGate))
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		dls.checkOnce(t)
	})
}

// B is lost while A writes a shared batch holding B's values; the write
// then fails as invalid. B's graph exited with the loss: nothing of B is
// dead-lettered after Lose returned (no dead-letter goroutine of B starts
// then), and A's records are, once each.
func TestSharedBatchFailedAfterAPartitionWasLostDeadLettersNothingOfIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		writeGate := make(chan struct{})
		openWrite := sync.OnceFunc(func() { close(writeGate) })
		var dls dlRecorder
		batcher := stages.NewSharedBatcher(func(context.Context, []sluice.Record) error {
			<-writeGate
			return sluice.Invalid(errors.New("bad batch"))
		}, 4, time.Hour)
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			defer openWrite()
			if err := g.Assign([]sluice.TopicPartition{tpA, tpB}); err != nil {
				return err
			}
			g.Deliver(tpB, recordsOf(tpB, 2))
			synctest.Wait()
			g.Deliver(tpA, recordsOf(tpA, 2))
			synctest.Wait() // A writes the batch of four, at the write gate
			start := time.Now()
			g.Lose([]sluice.TopicPartition{tpB})
			if d := time.Since(start); d != 0 {
				t.Errorf("Lose of B took %v while another partition wrote its values, want 0", d)
			}
			openWrite()
			synctest.Wait()
			if got := dls.of(tpB); len(got) > 0 {
				t.Errorf("B dead-lettered %v after it was lost", got)
			}
			if n := bubbleDeadLetterGoroutines(); n != 1 {
				t.Errorf("%d dead-letter goroutines once A's dead letters were delivered, want 1 (A's, until A's stages exit)", n)
			}
			if offs, want := g.Revoke([]sluice.TopicPartition{tpA}), []sluice.Offset{{TopicPartition: tpA, Next: 2}}; !slices.Equal(offs, want) {
				t.Errorf("Revoke of A = %v, want %v", offs, want)
			}
			if got, want := dls.of(tpA), offsetsFrom(0, 2); !slices.Equal(got, want) {
				t.Errorf("A dead-lettered %v, want %v", got, want)
			}
			synctest.Wait() // the goroutine that ended the graph may still be returning
			if n := bubbleDeadLetterGoroutines(); n != 0 {
				t.Errorf("%d dead-letter goroutines after A's revoke, want 0", n)
			}
			return nil
		})
		err := pipeline.Run(t.Context(), src, sharedBuild(batcher), dls.destination(nil))
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		dls.checkOnce(t)
	})
}

// Under real scheduling, with -race: B is lost while A's write of a
// shared batch holding B's values fails as invalid, the two at once.
// Whichever comes first, a dead letter of B is delivered before Lose
// returns or never (a dead-letter goroutine the writer started for B in
// the last moment is waited for), and A's are delivered once each.
func TestSharedBatchFailedWhileAPartitionIsLostRace(t *testing.T) {
	const rounds = 50
	var (
		dls       dlRecorder
		lostAt    atomic.Bool // B's Lose returned
		afterLoss atomic.Int32
		writeGate chan struct{}
		gateMu    sync.Mutex
		bDead     int // rounds in which B's values were dead-lettered
	)
	gateOf := func() chan struct{} {
		gateMu.Lock()
		defer gateMu.Unlock()
		return writeGate
	}
	writing := make(chan struct{}, 1)
	batcher := stages.NewSharedBatcher(func(ctx context.Context, _ []sluice.Record) error {
		select {
		case writing <- struct{}{}:
		default:
		}
		select {
		case <-gateOf():
		case <-ctx.Done(): // the writer's partition was lost: the batch goes back to the queue
			return ctx.Err()
		}
		return sluice.Invalid(errors.New("bad batch"))
	}, 4, time.Hour)
	src := scriptSource(func(ctx context.Context, g sluice.Group) error {
		defer g.Shutdown()
		for round := range rounds {
			gateMu.Lock()
			writeGate = make(chan struct{})
			gateMu.Unlock()
			lostAt.Store(false)
			select {
			case <-writing: // an orphaned batch written in the round before
			default:
			}
			if err := g.Assign([]sluice.TopicPartition{tpA, tpB}); err != nil {
				return err
			}
			g.Deliver(tpB, recordsOf(tpB, 2))
			g.Deliver(tpA, recordsOf(tpA, 2))
			<-writing // the batch of four is being written by A or B
			lost := make(chan struct{})
			go func() {
				defer close(lost)
				g.Lose([]sluice.TopicPartition{tpB})
				lostAt.Store(true)
			}()
			if round%2 == 0 {
				runtime.Gosched()
			}
			close(gateOf())
			<-lost
			// A's values are dead-lettered by A's write, by B's before
			// B was lost, or by A's write of the batch B's loss put back.
			offs := g.Revoke([]sluice.TopicPartition{tpA})
			if want := []sluice.Offset{{TopicPartition: tpA, Next: 2}}; !slices.Equal(offs, want) {
				t.Errorf("round %d: Revoke of A = %v, want %v", round, offs, want)
			}
			if got := dls.of(tpA); !slices.Equal(got, offsetsFrom(0, 2)) {
				t.Errorf("round %d: A dead-lettered %v, want [0 1]", round, got)
			}
			if len(dls.of(tpB)) > 0 {
				bDead++
			}
			if dups := dls.reset(); len(dups) > 0 {
				t.Errorf("round %d: dead-lettered twice: %v", round, dups)
			}
		}
		t.Logf("B dead-lettered before its loss in %d of %d rounds", bDead, rounds)
		return nil
	})
	err := pipeline.Run(t.Context(), src, sharedBuild(batcher), pipeline.WithDeadLetter(func(_ context.Context, dl sluice.DeadLetter) error {
		if dl.Record.Partition == tpB.Partition && lostAt.Load() {
			afterLoss.Add(1)
		}
		dls.add(dl)
		return nil
	}), pipeline.WithDrainTimeout(time.Minute), quiet)
	goroutinetest.AwaitGone(t, deadLetterLoop)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if n := afterLoss.Load(); n > 0 {
		t.Errorf("%d dead letters of B delivered after its Lose returned", n)
	}
}

// Share mode: the poll goroutine's DeadLetterRecord is a partition's
// first dead letter and starts its dead-letter goroutine; a revoke right
// after waits for it and the record is accepted once stored.
func TestShareModeRevokeWaitsForTheFirstDeadLetterFromThePollGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		open := sync.OnceFunc(func() { close(gate) })
		var dls dlRecorder
		got := map[int64]sluice.AckOutcome{}
		src := ackSource(tpA, func(ag sluice.AckGroup) error {
			defer open()
			ag.Deliver(tpA, shareRecords(0, 1, 2))
			synctest.Wait()
			if n := bubbleDeadLetterGoroutines(); n != 0 {
				t.Errorf("%d dead-letter goroutines before DeadLetterRecord, want 0", n)
			}
			if !ag.DeadLetterRecord(tpA, shareRecords(3)[0], errors.New("delivered too often")) {
				t.Errorf("DeadLetterRecord refused an assigned partition")
			}
			revoked := make(chan []sluice.Offset, 1)
			go func() { revoked <- ag.Revoke([]sluice.TopicPartition{tpA}) }()
			synctest.Wait()
			select {
			case <-revoked:
				t.Errorf("Revoke returned before the dead letter of DeadLetterRecord was stored")
				return nil
			default:
			}
			if n := bubbleDeadLetterGoroutines(); n != 1 {
				t.Errorf("%d dead-letter goroutines while DeadLetterRecord's waits, want 1", n)
			}
			open()
			<-revoked
			collectAcks(t, ag, got)
			if want := acceptedAll([]int64{0, 1, 2, 3}); !maps.Equal(got, want) {
				t.Errorf("outcomes %v, want %v", got, want)
			}
			return nil
		})
		err := pipeline.Run(t.Context(), src, (&ranGraph{}).build, dls.destination(gate))
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		if got := dls.of(tpA); !slices.Equal(got, []int64{3}) {
			t.Errorf("dead-lettered %v, want [3]", got)
		}
	})
}

// Share mode without a destination: an invalid record and one handed to
// DeadLetterRecord are rejected at once, and no dead-letter goroutine
// starts; the revoke returns with every outcome known.
func TestShareModeRejectionsStartNoDeadLetterGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := map[int64]sluice.AckOutcome{}
		src := ackSource(tpA, func(ag sluice.AckGroup) error {
			ag.Deliver(tpA, shareRecords(0, 1, 2))
			if !ag.DeadLetterRecord(tpA, shareRecords(3)[0], errors.New("delivered too often")) {
				t.Errorf("DeadLetterRecord refused an assigned partition")
			}
			synctest.Wait()
			if n := bubbleDeadLetterGoroutines(); n != 0 {
				t.Errorf("%d dead-letter goroutines without a destination, want 0", n)
			}
			ag.Revoke([]sluice.TopicPartition{tpA})
			collectAcks(t, ag, got)
			want := map[int64]sluice.AckOutcome{0: sluice.AckAccepted, 1: sluice.AckRejected, 2: sluice.AckAccepted, 3: sluice.AckRejected}
			if !maps.Equal(got, want) {
				t.Errorf("outcomes %v, want %v", got, want)
			}
			return nil
		})
		err := pipeline.Run(t.Context(), src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if r.Offset == 1 {
					return sluice.Invalid(errors.New("bad record"))
				}
				return nil
			})
		})
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}

// The dead-letter goroutine returns before the stages exit, on a
// delivery that failed for good: Run stops with ErrNotDeadLettered, the
// records found invalid afterwards start no second goroutine and are not
// delivered, the shutdown returns (the graph's end is signalled once) and
// commits nothing past the record not dead-lettered.
func TestDeadLetterGoroutineEndedByAFinalFailureBeforeTheStagesExit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dls dlRecorder
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			if err := g.Assign([]sluice.TopicPartition{tpA}); err != nil {
				return err
			}
			g.Deliver(tpA, recordsOf(tpA, 10))
			synctest.Wait() // 3 failed for good; Run stops
			if n := bubbleDeadLetterGoroutines(); n != 0 {
				t.Errorf("%d dead-letter goroutines after a final failure, want 0", n)
			}
			g.Deliver(tpA, recordsFrom(tpA, 10, 20))
			synctest.Wait()
			if n := bubbleDeadLetterGoroutines(); n != 0 {
				t.Errorf("%d dead-letter goroutines after more invalid records, want 0", n)
			}
			if offs, want := g.Shutdown(), []sluice.Offset{{TopicPartition: tpA, Next: 3}}; !slices.Equal(offs, want) {
				t.Errorf("Shutdown = %v, want %v", offs, want)
			}
			return nil
		})
		err := pipeline.Run(t.Context(), src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, invalidAt(3, 7, 15))
		}, pipeline.WithDeadLetter(func(_ context.Context, dl sluice.DeadLetter) error {
			dls.add(dl)
			return sluice.Permanent(errors.New("dead-letter topic gone"))
		}))
		if !errors.Is(err, sluice.ErrNotDeadLettered) {
			t.Fatalf("Run = %v, want ErrNotDeadLettered", err)
		}
		if got := dls.of(tpA); !slices.Equal(got, []int64{3}) {
			t.Errorf("destination called for %v, want [3]", got)
		}
	})
}

// A stage stuck past the drain timeout and the exit grace is abandoned,
// with or without a dead letter delivered before: the revoke returns at
// the stuck record, Run stops with ErrAbandoned, and when the stage
// returns later finding the record invalid, nothing is dead-lettered and
// no dead-letter goroutine starts.
func TestAbandonedStageFindingItsRecordInvalidLaterDeadLettersNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []int64 // offsets found invalid (and dead-lettered) before the stuck one
	}{
		{"first dead letter", nil},
		{"after a dead letter", []int64{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var dls dlRecorder
				src := scriptSource(func(ctx context.Context, g sluice.Group) error {
					defer g.Shutdown()
					if err := g.Assign([]sluice.TopicPartition{tpA}); err != nil {
						return err
					}
					g.Deliver(tpA, recordsOf(tpA, 10))
					synctest.Wait() // the stage is stuck at 5
					if offs, want := g.Revoke([]sluice.TopicPartition{tpA}), []sluice.Offset{{TopicPartition: tpA, Next: 5}}; !slices.Equal(offs, want) {
						t.Errorf("Revoke = %v, want %v", offs, want)
					}
					synctest.Wait()
					if n := bubbleDeadLetterGoroutines(); n != 0 {
						t.Errorf("%d dead-letter goroutines after the abandon, want 0", n)
					}
					return nil
				})
				err := pipeline.Run(t.Context(), src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Each(in, func(_ context.Context, r sluice.Record) error {
						switch {
						case r.Offset == 5:
							<-release // ignores its context
							return sluice.Invalid(errors.New("bad record"))
						case slices.Contains(tc.before, r.Offset):
							return sluice.Invalid(errors.New("bad record"))
						}
						return nil
					})
				}, pipeline.WithDrainTimeout(4*time.Second), quiet, dls.destination(nil))
				if !errors.Is(err, sluice.ErrAbandoned) {
					t.Errorf("Run = %v, want ErrAbandoned", err)
				}
				close(release)
				synctest.Wait()
				if n := bubbleDeadLetterGoroutines(); n != 0 {
					t.Errorf("%d dead-letter goroutines once the abandoned stage returned, want 0", n)
				}
				if got := dls.of(tpA); !slices.Equal(got, tc.before) {
					t.Errorf("dead-lettered %v, want %v", got, tc.before)
				}
			})
		})
	}
}

// A dead-letter destination that ignores its context, holding the dead
// letter of the last record after the stages exited, is abandoned as
// "dead letter": the revoke commits up to that record, Run stops with
// ErrAbandoned naming it, and once the destination returns the
// goroutine ends without anything else happening.
func TestAbandonedDeadLetterDestinationHoldingTheLastRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			if err := g.Assign([]sluice.TopicPartition{tpA}); err != nil {
				return err
			}
			g.Deliver(tpA, recordsOf(tpA, 10))
			synctest.Wait()
			if offs, want := g.Revoke([]sluice.TopicPartition{tpA}), []sluice.Offset{{TopicPartition: tpA, Next: 9}}; !slices.Equal(offs, want) {
				t.Errorf("Revoke = %v, want %v", offs, want)
			}
			return nil
		})
		err := pipeline.Run(t.Context(), src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, invalidAt(9))
		}, pipeline.WithDrainTimeout(4*time.Second), quiet, pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error {
			<-release // ignores its context
			return nil
		}))
		var se *sluice.StageError
		if !errors.Is(err, sluice.ErrAbandoned) || !errors.As(err, &se) || se.Stage != "dead letter" || se.Offset != 9 {
			t.Errorf("Run = %v, want ErrAbandoned naming the dead letter at offset 9", err)
		}
		if n := bubbleDeadLetterGoroutines(); n != 1 {
			t.Errorf("%d dead-letter goroutines while the abandoned destination runs, want 1", n)
		}
		close(release)
		synctest.Wait()
		if n := bubbleDeadLetterGoroutines(); n != 0 {
			t.Errorf("%d dead-letter goroutines once the destination returned, want 0", n)
		}
	})
}

// A partition lost while its first dead letter is in the destination
// (which honours its context): Lose returns at once, nothing is
// committed or abandoned, and Run goes on.
func TestLoseWithTheFirstDeadLetterInTheDestination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			if err := g.Assign([]sluice.TopicPartition{tpA}); err != nil {
				return err
			}
			g.Deliver(tpA, recordsOf(tpA, 10))
			synctest.Wait()
			start := time.Now()
			g.Lose([]sluice.TopicPartition{tpA})
			if d := time.Since(start); d != 0 {
				t.Errorf("Lose took %v, want 0", d)
			}
			synctest.Wait() // the goroutine that ended the graph may still be returning
			if n := bubbleDeadLetterGoroutines(); n != 0 {
				t.Errorf("%d dead-letter goroutines after Lose, want 0", n)
			}
			return nil
		})
		err := pipeline.Run(t.Context(), src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, invalidAt(4))
		}, pipeline.WithDeadLetter(func(ctx context.Context, _ sluice.DeadLetter) error {
			calls.Add(1)
			<-ctx.Done()
			return ctx.Err()
		}))
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("destination called %d times, want 1", n)
		}
	})
}

// A stage ignoring its context returns, finding its record invalid, at
// the very moment the exit grace ends: the dead letter is queued just
// before or just after the graph is abandoned. Either way the revoke
// returns, the commit passes the record only if its dead letter was
// delivered, and nothing is delivered twice or left running.
func TestDeadLetterQueuedAsTheGraphIsAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const drain = 4 * time.Second
		grace := max(drain/4, time.Second)
		var dls dlRecorder
		var offs []sluice.Offset
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			if err := g.Assign([]sluice.TopicPartition{tpA}); err != nil {
				return err
			}
			g.Deliver(tpA, recordsOf(tpA, 10))
			synctest.Wait()
			offs = g.Revoke([]sluice.TopicPartition{tpA})
			return nil
		})
		runErr := pipeline.Run(t.Context(), src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if r.Offset == 5 {
					time.Sleep(drain + grace) // ignores its context until the grace ends
					return sluice.Invalid(errors.New("bad record"))
				}
				return nil
			})
		}, pipeline.WithDrainTimeout(drain), quiet, dls.destination(nil))
		synctest.Wait()
		got := dls.of(tpA)
		t.Logf("Revoke = %v, dead letters %v, abandoned %v", offs, got, errors.Is(runErr, sluice.ErrAbandoned))
		switch {
		case len(offs) != 1:
			t.Errorf("Revoke = %v, want one offset", offs)
		case offs[0].Next == 5:
		case offs[0].Next == 6:
			if !slices.Equal(got, []int64{5}) {
				t.Errorf("Revoke committed past 5 (%v) with dead letters %v", offs, got)
			}
		default:
			t.Errorf("Revoke = %v, want 5 or 6", offs)
		}
		if len(got) > 1 {
			t.Errorf("dead-lettered %v, want at most [5]", got)
		}
		if n := bubbleDeadLetterGoroutines(); n != 0 {
			t.Errorf("%d dead-letter goroutines at the end, want 0", n)
		}
	})
}

// A Pool whose calls block now and then (so that the hedge hands chunks
// to workers and relief dispatchers) finds records invalid on whichever
// goroutine makes the call; the revoke comes while calls are in flight.
// It drains what was fed, returns once every dead letter of a record
// before its commit was delivered, and nothing is delivered twice.
func TestPoolDeadLettersFromWorkersAndReliefsBeforeTheRevokeReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		var dls dlRecorder
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			defer g.Shutdown()
			if err := g.Assign([]sluice.TopicPartition{tpA}); err != nil {
				return err
			}
			g.Deliver(tpA, recordsOf(tpA, n))
			synctest.Wait() // calls in flight, on the dispatcher or the workers
			offs := g.Revoke([]sluice.TopicPartition{tpA})
			if len(offs) != 1 || offs[0].Next < 10 {
				t.Errorf("Revoke = %v, want past the first chunk", offs)
				return nil
			}
			t.Logf("Revoke = %v with %d dead letters", offs, len(dls.of(tpA)))
			checkDeadLettersBefore(t, "", offs[0].Next, dls.of(tpA), func(o int64) bool { return o%10 == 3 })
			return nil
		})
		err := pipeline.Run(t.Context(), src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			checked := stages.Pool(in, 4, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
				switch r.Offset % 10 {
				case 3:
					time.Sleep(5 * time.Millisecond)
					return r, sluice.Invalid(errors.New("bad record"))
				case 7:
					time.Sleep(5 * time.Millisecond)
				}
				return r, nil
			})
			return stages.Discard(checked)
		}, dls.destination(nil))
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		dls.checkOnce(t)
	})
}

// checkDeadLettersBefore checks that got, the offsets dead-lettered when
// a revoke committed next, starts with every offset before next that
// invalid selects, in order (records at or past next may have been
// dead-lettered too).
func checkDeadLettersBefore(t *testing.T, round string, next int64, got []int64, invalid func(int64) bool) {
	t.Helper()
	var want []int64
	for o := range next {
		if invalid(o) {
			want = append(want, o)
		}
	}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Errorf("%scommitted %d with dead letters %v, want %v first", round, next, got, want)
	}
	for _, o := range got[min(len(got), len(want)):] {
		if o < next || !invalid(o) {
			t.Errorf("%sdead letter of %d past the commit %d is not an invalid record", round, o, next)
		}
	}
}

// Under real scheduling, with -race: the two branches of a Tee find the
// same records invalid at once, the first of them the partition's first
// dead letter (both branches may start its goroutine); each record is
// dead-lettered once, and each revoke returns after that, committing
// everything.
func TestTeeBranchesQueueTheFirstDeadLetterAtOnce(t *testing.T) {
	const n, rounds = 64, 50
	var dls dlRecorder
	bad := func(_ context.Context, r sluice.Record) error {
		if r.Offset%8 == 5 {
			return sluice.Invalid(errors.New("bad record"))
		}
		return nil
	}
	src := scriptSource(func(ctx context.Context, g sluice.Group) error {
		defer g.Shutdown()
		for round := range rounds {
			if err := g.Assign([]sluice.TopicPartition{tpA}); err != nil {
				return err
			}
			g.Deliver(tpA, recordsOf(tpA, n))
			if round%2 == 0 {
				runtime.Gosched()
			}
			offs := g.Revoke([]sluice.TopicPartition{tpA})
			// Records not fed before the revoke are dropped: the commit
			// stops at the first of them.
			next := int64(0)
			if len(offs) == 1 {
				next = offs[0].Next
			}
			checkDeadLettersBefore(t, fmt.Sprintf("round %d: ", round), next, dls.of(tpA), func(o int64) bool { return o%8 == 5 })
			if dups := dls.reset(); len(dups) > 0 {
				t.Errorf("round %d: dead-lettered twice: %v", round, dups)
			}
		}
		return nil
	})
	err := pipeline.Run(t.Context(), src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		branches := stages.Tee(in, 2)
		return pipeline.All(stages.Each(branches[0], bad), stages.Each(branches[1], bad))
	}, quiet, dls.destination(nil))
	goroutinetest.AwaitGone(t, deadLetterLoop)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
}

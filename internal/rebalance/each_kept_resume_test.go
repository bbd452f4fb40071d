package rebalance

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// runtimeBackend is a Backend for a Core fed to the real runtime
// (pipeline.Run): Poll runs the actions queued with do on the poll
// goroutine, then waits for its timeout; commits succeed at once and are
// recorded.
type runtimeBackend struct {
	core    *Core
	actions chan func()

	mu      sync.Mutex
	commits [][]sluice.Offset
}

func (b *runtimeBackend) Poll(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case f := <-b.actions:
			f()
			continue
		default:
		}
		break
	}
	select {
	case <-t.C:
	case <-ctx.Done():
	case f := <-b.actions:
		f()
	}
	return nil
}

func (b *runtimeBackend) Fail(err error) error {
	b.core.LoseAll()
	return errors.Join(err, b.core.LeaveAndClose(time.Now()))
}
func (b *runtimeBackend) Interval() {}
func (b *runtimeBackend) Commit(offs []sluice.Offset) ([]Rejected, error) {
	b.mu.Lock()
	b.commits = append(b.commits, offs)
	b.mu.Unlock()
	return nil, nil
}
func (b *runtimeBackend) ExpectedCommitError(error) bool  { return false }
func (b *runtimeBackend) RetriableCommitError(error) bool { return false }
func (b *runtimeBackend) BeforeFinalCommit(time.Time)     {}
func (b *runtimeBackend) WaitToRetryCommit(d time.Duration) {
	time.Sleep(d)
}
func (b *runtimeBackend) Pause(TP) error        { return nil }
func (b *runtimeBackend) Resume([]TP) error     { return nil }
func (b *runtimeBackend) Leave(time.Time) error { return nil }
func (b *runtimeBackend) GaveUpPaused([]TP)     {}
func (b *runtimeBackend) Close(deadline time.Time) error {
	_, err := b.core.CloseClient(deadline, func() error { return nil })
	return err
}

// runtimeSource runs a Core over a runtimeBackend with a commit interval.
type runtimeSource struct {
	b        *runtimeBackend
	interval time.Duration
	started  chan struct{}
}

func (s *runtimeSource) Run(ctx context.Context, g sluice.Group) error {
	var bg sync.WaitGroup
	s.b.core = New(s.b, g, Options{
		Settings:   Settings{Prefix: "test", GroupConfig: sluice.GroupConfig{CommitInterval: s.interval, CloseTimeout: 10 * time.Second}},
		Background: &bg,
	})
	close(s.started)
	err := s.b.core.Run(ctx)
	bg.Wait()
	return err
}

// do runs f on the poll goroutine and returns once it ran.
func (s *runtimeSource) do(f func()) {
	ran := make(chan struct{})
	s.b.actions <- func() { f(); close(ran) }
	<-ran
}

// The poll loop of the Kafka sources resumes a paused partition when
// Wake fires and Resumable lists it, and calls Offsets only at its commit
// interval. Values an Each kept while its stage is inside a call must not
// keep a paused partition from resuming: they are finished, and the
// runtime completes them whenever it needs their budget (Deliver,
// Saturated).
//
// Under a budget of 40 records (a paused partition resumes at 30 in
// flight) and a partition queue of 8, in/1 gets 8 records whose first
// call waits at a gate and pauses at its queue; its records 8 to 15 are
// polled meanwhile and held by the core. in/0 then gets its second chunk
// of fast calls (32 to 63); the call for 63 waits for in/1's record 8.
// The gate opens and in/1's 8 records complete: in/0 holds 1 record whose
// call has not returned and 31 whose call returned, so in/1 must resume
// at the next poll (PollPaused, the loop's wait while a partition is
// paused), its record 8 run and 63's call return. Were the 31 still
// counted, 32 records would stay in flight and in/1 would wait for the
// next commit interval (a minute here).
func TestEachKeptValuesDoNotDelayTheCoresResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Minute
		gate := make(chan struct{})
		b8 := make(chan struct{})
		var opened time.Time
		ran := make(chan time.Duration, 1)
		s := &runtimeSource{b: &runtimeBackend{actions: make(chan func())}, interval: interval, started: make(chan struct{})}
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
				switch {
				case r.Partition == 1 && r.Offset == 0:
					<-gate
				case r.Partition == 1 && r.Offset == 8:
					ran <- time.Since(opened)
					close(b8)
				case r.Partition == 0 && r.Offset == 63:
					select {
					case <-b8:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return nil
			})
		}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			errc <- pipeline.Run(ctx, s, build, pipeline.WithMaxInFlight(40), pipeline.WithPartitionQueue(8))
		}()
		<-s.started
		c := s.b.core
		add := func(tp TP, from, to int) {
			for i := from; i < to; i++ {
				c.Add(rec(tp, int64(i)))
			}
			c.Flush()
		}
		s.do(func() { c.Assigned([]TP{tp0, tp1}) })
		s.do(func() { add(tp0, 0, 32) })
		synctest.Wait() // in/0's first chunk: fast calls
		s.do(func() {
			add(tp1, 0, 8)  // pauses in/1 at its queue
			add(tp1, 8, 16) // polled before the pause took effect: held by the core
			add(tp0, 32, 64)
		})
		synctest.Wait() // in/0: 32 to 62 returned, 63 waits for in/1's 8; in/1's 0 waits at the gate
		opened = time.Now()
		close(gate)
		if d := <-ran; d > PollPaused {
			t.Errorf("in/1 resumed and ran its record 8 %v after its paused records completed, want within the paused poll's %v (in/0 holds 1 record whose call has not returned and 31 whose call returned; the commit interval is %v)", d, PollPaused, interval)
		}
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}

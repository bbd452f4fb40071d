package stages_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// The tests of this file check how a Pool's failure reaches Run and the
// hooks: the emitter reports it with Stage.Abort (Run stops at once, not
// when every call returned) and the stage returns nil, so the failure
// must still be reported exactly once (one OnStageFailed), with the same
// error Run returned before the change, and a failure of a partition
// being revoked or shut down must still be ignored as before (it would
// otherwise stop Run).

// failedHooks counts OnStageFailed calls and keeps their errors.
type failedHooks struct {
	mu   sync.Mutex
	errs []error
}

func (f *failedHooks) OnStageFailed(_ string, _ sluice.TopicPartition, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, err)
}

func (f *failedHooks) list() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.errs...)
}

// describe sums up a Run error: its StageError's stage and offset and the
// sentinels it wraps.
func describe(err error) string {
	if err == nil {
		return "nil"
	}
	var se *sluice.StageError
	if !errors.As(err, &se) {
		return fmt.Sprintf("not a StageError: %v", err)
	}
	var pe *sluice.PanicError
	return fmt.Sprintf("stage %q offset %d permanent=%v nodeadletter=%v ticket=%v panic=%v abandoned=%v",
		se.Stage, se.Offset, errors.Is(err, errPermanentFinal), errors.Is(err, sluice.ErrNoDeadLetter),
		errors.Is(err, stagekit.ErrTicketCompleted), errors.As(err, &pe), errors.Is(err, sluice.ErrAbandoned))
}

var errPermanentFinal = errors.New("schema mismatch")

// A Pool's failure stops Run with the error it returned before Pool made
// calls on its own goroutine and before the emitter used Abort, and is
// reported to OnStageFailed once: a permanent error on the pool's
// goroutine and on the workers, an invalid value without a dead-letter
// destination, a panic of PoolByKey's key function, and a ticket misuse
// of the stage before the pool (the pool's Send refuses the value).
func TestPoolFailureReachesRunAndTheHooksOnce(t *testing.T) {
	type tc struct {
		name      string
		build     func(in pipeline.Stream[sluice.Record]) pipeline.Stream[int64]
		want      string // describe of Run's error
		committed int64
	}
	value := func(slow time.Duration, fail func(int64) error) func(context.Context, sluice.Record) (int64, error) {
		return func(ctx context.Context, r sluice.Record) (int64, error) {
			if slow > 0 {
				time.Sleep(slow)
			}
			return r.Offset, fail(r.Offset)
		}
	}
	at5 := func(err error) func(int64) error {
		return func(o int64) error {
			if o == 5 {
				return err
			}
			return nil
		}
	}
	perm := sluice.Permanent(errPermanentFinal)
	cases := []tc{
		{"permanent on the pool's goroutine", func(in pipeline.Stream[sluice.Record]) pipeline.Stream[int64] {
			return stages.Pool(in, 4, value(0, at5(perm)), stages.Name("score"))
		}, `stage "score" offset 5 permanent=true nodeadletter=false ticket=false panic=false abandoned=false`, 5},
		{"permanent on the workers", func(in pipeline.Stream[sluice.Record]) pipeline.Stream[int64] {
			return stages.Pool(in, 4, value(time.Millisecond, at5(perm)), stages.Name("score"))
		}, `stage "score" offset 5 permanent=true nodeadletter=false ticket=false panic=false abandoned=false`, 5},
		{"invalid without a dead-letter destination", func(in pipeline.Stream[sluice.Record]) pipeline.Stream[int64] {
			return stages.Pool(in, 4, value(0, at5(sluice.Invalid(errors.New("bad")))), stages.Name("score"))
		}, `stage "score" offset 5 permanent=false nodeadletter=true ticket=false panic=false abandoned=false`, 5},
		{"PoolByKey key panic", func(in pipeline.Stream[sluice.Record]) pipeline.Stream[int64] {
			return stages.PoolByKey(in, 4, func(r sluice.Record) string {
				if r.Offset == 5 {
					panic("no key")
				}
				return string(r.Value)
			}, value(0, at5(nil)), stages.Name("score"))
		}, `stage "score" offset 5 permanent=false nodeadletter=false ticket=false panic=true abandoned=false`, 5},
		{"ticket misuse before the pool", func(in pipeline.Stream[sluice.Record]) pipeline.Stream[int64] {
			leaky := stagekit.AddStage(in, stagekit.StageSpec{Name: "Leaky"}, func(s *stagekit.Stage, inl *stagekit.Inlet[sluice.Record], out *stagekit.Outlet[sluice.Record]) error {
				return stagekit.ForEachChunk(s, inl, func(chunk []stagekit.Item[sluice.Record]) error {
					for _, it := range chunk {
						buf := out.Buffer()
						buf = append(buf, it)
						if !out.Send(buf) {
							return stagekit.ErrStop
						}
						if it.Value.Offset == 5 {
							s.Done(it.Ticket) // after passing it on: the pool passes on a completed value
						}
					}
					return nil
				})
			})
			return stages.Pool(leaky, 4, value(time.Millisecond, at5(nil)), stages.Name("score"))
		}, "", -2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hooks := &failedHooks{}
				h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Discard(c.build(in))
				}, pipeline.WithHooks(hooks))
				h.Assign("t", 0)
				h.Send("t", 0, testkit.Values(10)...)
				err := h.Wait()
				got := describe(err)
				t.Logf("Run returned %s (%v); committed %d; OnStageFailed %d", got, err, h.Committed("t", 0), len(hooks.list()))
				if c.want != "" && got != c.want {
					t.Errorf("Run returned %s, want %s", got, c.want)
				}
				if c.committed != -2 {
					checkCommitted(t, h, c.committed, "the values before the failure")
				}
				if errs := hooks.list(); len(errs) != 1 || errs[0].Error() != err.Error() {
					t.Errorf("OnStageFailed called %d times with %v, want once with Run's error", len(errs), errs)
				}
			})
		})
	}
}

// A call blocked past the start of a revoke (or shutdown) that then fails
// for good: the failure of a partition being taken away is logged and
// ignored (docs/lifecycle.md), as it was when the pool returned it; the
// revoke completes, Run goes on (revoke) or returns nil (shutdown), and
// no OnStageFailed is reported. Both with the blocked call on the pool's
// goroutine (fast calls before it) and on a worker (slow calls).
func TestPoolFailureWhileThePartitionIsTakenAwayIsIgnored(t *testing.T) {
	for _, how := range []string{"revoke", "shutdown"} {
		for _, slow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/slow=%v", how, slow), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					hooks := &failedHooks{}
					release := make(chan struct{})
					h := testkit.New(t, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
						return stages.Discard(stages.Pool(in, 4, func(ctx context.Context, r sluice.Record) (int64, error) {
							if slow {
								time.Sleep(time.Millisecond)
							}
							if r.Offset == 5 {
								<-release
								return 0, sluice.Permanent(errPermanentFinal)
							}
							return r.Offset, nil
						}, stages.Name("score")))
					}, pipeline.WithHooks(hooks), pipeline.WithDrainTimeout(time.Minute))
					h.Assign("t", 0)
					h.Send("t", 0, testkit.Values(10)...)
					time.Sleep(10 * time.Millisecond)
					synctest.Wait()
					done := make(chan error, 1)
					go func() {
						if how == "revoke" {
							h.Revoke("t", 0)
							done <- nil
							return
						}
						done <- h.Stop()
					}()
					synctest.Wait() // the partition is being taken away
					close(release)
					err := <-done
					if how == "revoke" {
						h.Assign("t", 1) // Run goes on
						h.Send("t", 1, testkit.Values(3)...)
						h.WaitCommitted("t", 1, 3)
						err = h.Stop()
					}
					if err != nil {
						t.Errorf("Run returned %s (%v), want nil: the failure came while the partition was taken away", describe(err), err)
					}
					if errs := hooks.list(); len(errs) != 0 {
						t.Errorf("OnStageFailed called %d times (%v), want none", len(errs), errs)
					}
					checkCommitted(t, h, 5, "the values before the failed one")
				})
			})
		}
	}
}

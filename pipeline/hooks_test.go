package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// oldObserver has a method of the removed Observer interface: it handles
// no event under the hook names.
type oldObserver struct{}

func (oldObserver) PartitionAssigned(sluice.TopicPartition) {}

func TestWithHooksRejectsNilAndValuesThatHandleNoEvent(t *testing.T) {
	err := runWith(pipeline.WithHooks(nil))
	if err == nil || !strings.Contains(err.Error(), "WithHooks: hook 0 is nil") {
		t.Errorf("WithHooks(nil): Run returned %v, want an error naming the nil hook", err)
	}
	var assigned struct{ sluice.HookPartitionAssigned }
	err = runWith(pipeline.WithHooks(assigned, oldObserver{}))
	if err == nil || !strings.Contains(err.Error(), "WithHooks: hook 1 (pipeline_test.oldObserver) implements no hook interface") {
		t.Errorf("WithHooks(hook, oldObserver{}): Run returned %v, want an error naming hook 1 and its type", err)
	}
	if err := runWith(pipeline.WithHooks(assigned)); err != nil {
		t.Errorf("WithHooks(a HookPartitionAssigned): Run returned %v", err)
	}
}

// eventLog records the events of several hooks in one list.
type eventLog struct{ lockedList[string] }

func (l *eventLog) add(format string, args ...any) { l.push(fmt.Sprintf(format, args...)) }

// assignAndComplete handles two events; assignOnly one.
type assignAndComplete struct{ log *eventLog }

func (h assignAndComplete) OnPartitionAssigned(tp sluice.TopicPartition) {
	h.log.add("A assigned %s/%d", tp.Topic, tp.Partition)
}

func (h assignAndComplete) OnRecordsCompleted(tp sluice.TopicPartition, n int, next int64) {
	h.log.add("A completed %d, next %d", n, next)
}

type assignOnly struct{ log *eventLog }

func (h assignOnly) OnPartitionAssigned(tp sluice.TopicPartition) {
	h.log.add("B assigned %s/%d", tp.Topic, tp.Partition)
}

func TestHooksAreCalledInOrderForTheEventsTheyHandle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &eventLog{}
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(in)
		}, pipeline.WithHooks(assignAndComplete{log}), pipeline.WithHooks(assignOnly{log}))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("a"))
		h.WaitCommitted("t", 0, 1)
		want := []string{"A assigned t/0", "B assigned t/0", "A completed 1, next 1"}
		if got := h.Stop(); got != nil {
			t.Fatalf("Stop: %v", got)
		}
		if got := log.list(); !slices.Equal(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
	})
}

// callCounter is a custom hook: it counts each stage's calls and failed
// calls, and the retries. It handles two events.
type callCounter struct {
	mu              sync.Mutex
	calls, failures map[string]int
	retries         []string
}

// OnStageCall implements sluice.HookStageCall. It is called from stage
// goroutines, concurrently: it locks, and only counts.
func (c *callCounter) OnStageCall(stage string, _ sluice.TopicPartition, _ time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[stage]++
	if err != nil {
		c.failures[stage]++
	}
}

// OnStageRetry implements sluice.HookStageRetry.
func (c *callCounter) OnStageRetry(stage string, tp sluice.TopicPartition, attempt int, _ time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retries = append(c.retries, fmt.Sprintf("%s on %s/%d, retry %d: %v", stage, tp.Topic, tp.Partition, attempt, err))
}

// A hook implements only the Hook* interfaces of the events it needs, and
// WithHooks registers it. This one counts stage calls and retries; a
// flaky store fails once.
func ExampleWithHooks() {
	counter := &callCounter{calls: map[string]int{}, failures: map[string]int{}}
	fake := testkit.NewFake()
	failed := false // one partition: the store runs on one goroutine
	build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			if string(r.Value) == "b" && !failed {
				failed = true
				return errors.New("connection reset")
			}
			return nil
		}, stages.Name("store"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- pipeline.Run(ctx, fake, build, pipeline.WithHooks(counter),
			pipeline.WithRetry(sluice.RetryPolicy{Initial: time.Millisecond}))
	}()
	_ = fake.Send("orders", 0, []byte("a"), []byte("b"), []byte("c"))
	_ = fake.Assign("orders", 0)
	for fake.Committed("orders", 0) < 3 {
		<-fake.Changed()
	}
	cancel()
	fmt.Println("Run:", <-done)
	counter.mu.Lock()
	defer counter.mu.Unlock()
	fmt.Println("store calls:", counter.calls["store"], "failed:", counter.failures["store"])
	fmt.Println(strings.Join(counter.retries, "\n"))
	// Output:
	// Run: <nil>
	// store calls: 4 failed: 1
	// store on orders/0, retry 1: connection reset
}

// eventCounter implements every hook interface and records each event.
type eventCounter struct{ lockedList[string] }

func (c *eventCounter) count(event string) { c.push(event) }

// missing returns the events of events that never happened.
func (c *eventCounter) missing(events []string) []string {
	seen := c.list()
	var out []string
	for _, e := range events {
		if !slices.Contains(seen, e) {
			out = append(out, e)
		}
	}
	return out
}

func (c *eventCounter) OnPartitionAssigned(sluice.TopicPartition) { c.count("PartitionAssigned") }
func (c *eventCounter) OnPartitionRevoked(sluice.TopicPartition, time.Duration, bool) {
	c.count("PartitionRevoked")
}
func (c *eventCounter) OnPartitionLost(sluice.TopicPartition)         { c.count("PartitionLost") }
func (c *eventCounter) OnPartitionPaused(sluice.TopicPartition)       { c.count("PartitionPaused") }
func (c *eventCounter) OnPartitionResumed(sluice.TopicPartition)      { c.count("PartitionResumed") }
func (c *eventCounter) OnRecordsDelivered(sluice.TopicPartition, int) { c.count("RecordsDelivered") }
func (c *eventCounter) OnRecordsCompleted(sluice.TopicPartition, int, int64) {
	c.count("RecordsCompleted")
}
func (c *eventCounter) OnValuesFiltered(sluice.TopicPartition, string, int) {
	c.count("ValuesFiltered")
}
func (c *eventCounter) OnRecordDeadLettered(sluice.TopicPartition, string) {
	c.count("RecordDeadLettered")
}
func (c *eventCounter) OnInFlight(int64, int64) { c.count("InFlight") }
func (c *eventCounter) OnStageCall(string, sluice.TopicPartition, time.Duration, error) {
	c.count("StageCall")
}
func (c *eventCounter) OnStageRetry(string, sluice.TopicPartition, int, time.Duration, error) {
	c.count("StageRetry")
}
func (c *eventCounter) OnStageFailed(string, sluice.TopicPartition, error) { c.count("StageFailed") }
func (c *eventCounter) OnStuck(string, sluice.TopicPartition, int64, time.Duration) {
	c.count("Stuck")
}
func (c *eventCounter) OnPolled(time.Time)                                { c.count("Polled") }
func (c *eventCounter) OnJoined()                                         { c.count("Joined") }
func (c *eventCounter) OnCommitted([]sluice.Offset, time.Duration, error) { c.count("Committed") }
func (c *eventCounter) OnHighWatermark(sluice.TopicPartition, int64)      { c.count("HighWatermark") }

// Every event the runtime and the fake source can cause reaches a hook
// that handles it: a run that assigns, pauses, resumes, filters,
// dead-letters, retries, gets stuck, revokes, loses and fails. (The fake
// reports no high watermark: only the Kafka source does.)
func TestEveryEventReachesTheHooksThatHandleIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &eventCounter{}
		flaky := true // partition 0's stage goroutine only
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			vals := stages.Map(in, func(ctx context.Context, r sluice.Record) (string, error) {
				switch v := string(r.Value); v {
				case "bad":
					return "", sluice.Invalid(errors.New("bad input"))
				case "flaky":
					if flaky {
						flaky = false
						return "", errors.New("try again")
					}
				case "slow":
					time.Sleep(time.Minute)
				case "fatal":
					return "", sluice.Permanent(errors.New("schema mismatch"))
				}
				return string(r.Value), nil
			}, stages.Name("parse"))
			kept := stages.Filter(vals, func(v string) bool { return v != "drop" }, stages.Name("keep"))
			return stages.Discard(kept)
		}, pipeline.WithHooks(c), pipeline.WithPartitionQueue(2), pipeline.WithStuckThreshold(10*time.Second),
			pipeline.WithRetry(sluice.RetryPolicy{Initial: time.Millisecond}),
			pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error { return nil }))
		h.Assign("t", 0, 1)
		h.Send("t", 0, []byte("ok"), []byte("bad"), []byte("flaky"), []byte("drop"), []byte("slow"), []byte("ok"))
		h.Send("t", 1, []byte("ok"))
		h.WaitCommitted("t", 0, 6)
		h.WaitCommitted("t", 1, 1)
		// The commit can come from a Wake whose Resumable was read before
		// the last completions made partition 0 resumable: let the fake
		// serve the Wake those signalled (which resumes it) before the
		// revoke, or the partition is revoked while paused and never
		// resumed.
		synctest.Wait()
		h.Revoke("t", 0)
		h.Lose("t", 1)
		h.Assign("t", 2)
		h.Send("t", 2, []byte("fatal"))
		if err := h.Wait(); err == nil {
			t.Fatal("Run returned nil, want the permanent error")
		}
		all := []string{"PartitionAssigned", "PartitionRevoked", "PartitionLost", "PartitionPaused",
			"PartitionResumed", "RecordsDelivered", "RecordsCompleted", "ValuesFiltered", "RecordDeadLettered",
			"InFlight", "StageCall", "StageRetry", "StageFailed", "Stuck", "Polled", "Joined", "Committed"}
		if m := c.missing(all); len(m) > 0 {
			t.Errorf("events that reached no hook: %v", m)
		}
		if m := c.missing([]string{"HighWatermark"}); !slices.Equal(m, []string{"HighWatermark"}) {
			t.Errorf("the fake reported a high watermark")
		}
	})
}

// completionLog records every OnRecordsCompleted call and whether two of
// them overlapped. Its first call waits for release.
type completionLog struct {
	release chan struct{}

	mu         sync.Mutex
	inside     int
	overlapped bool
	calls      [][2]int64 // n, next
}

func (c *completionLog) OnRecordsCompleted(_ sluice.TopicPartition, n int, next int64) {
	c.mu.Lock()
	c.inside++
	c.overlapped = c.overlapped || c.inside > 1
	c.calls = append(c.calls, [2]int64{int64(n), next})
	first := len(c.calls) == 1
	c.mu.Unlock()
	if first {
		<-c.release
	}
	c.mu.Lock()
	c.inside--
	c.mu.Unlock()
}

// OnRecordsCompleted calls for one partition come one at a time, with
// next increasing, even when records of the partition complete in two
// goroutines: offset 0 in the sink while the hook call reporting it is
// still running, offset 1 dropped by a filter in the meantime.
func TestRecordsCompletedOneAtATimeInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hook := &completionLog{release: make(chan struct{})}
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			kept := stages.Filter(in, func(r sluice.Record) bool { return string(r.Value) != "drop" })
			return stages.Each(kept, func(context.Context, sluice.Record) error { return nil })
		}, pipeline.WithHooks(hook))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("keep"))
		synctest.Wait() // offset 0 completed, its hook call waiting
		h.Send("t", 0, []byte("drop"))
		synctest.Wait() // offset 1 completed by the filter
		hook.mu.Lock()
		overlapped := hook.overlapped
		hook.mu.Unlock()
		if overlapped {
			t.Error("two OnRecordsCompleted calls for t/0 overlapped")
		}
		close(hook.release)
		h.WaitCommitted("t", 0, 2)
		stopClean(t, h)
		hook.mu.Lock()
		defer hook.mu.Unlock()
		if want := [][2]int64{{1, 1}, {1, 2}}; !slices.Equal(hook.calls, want) {
			t.Errorf("OnRecordsCompleted calls (n, next) = %v, want %v", hook.calls, want)
		}
	})
}

// inFlightLog keeps the last OnInFlight call. Its first OnRecordsDelivered
// call waits for release.
type inFlightLog struct {
	release chan struct{}
	once    sync.Once

	mu            sync.Mutex
	records, byts int64
}

func (l *inFlightLog) OnRecordsDelivered(sluice.TopicPartition, int) {
	l.once.Do(func() { <-l.release })
}

func (l *inFlightLog) OnInFlight(records, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records, l.byts = records, bytes
}

// The last OnInFlight call reports the totals as they are, though the
// admission that reports them comes after the records it admitted
// completed in their stage.
func TestInFlightLastCallIsCurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hook := &inFlightLog{release: make(chan struct{})}
		h := eachHarness(t, func(context.Context, sluice.Record) error { return nil }, pipeline.WithHooks(hook))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("a"))
		synctest.Wait() // offset 0 completed; its admission's report waits
		close(hook.release)
		h.WaitCommitted("t", 0, 1)
		synctest.Wait()
		hook.mu.Lock()
		records, byts := hook.records, hook.byts
		hook.mu.Unlock()
		if records != 0 || byts != 0 {
			t.Errorf("last OnInFlight(%d, %d) with nothing in flight, want (0, 0)", records, byts)
		}
		stopClean(t, h)
	})
}

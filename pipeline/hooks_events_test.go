package pipeline_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// eventCounter implements every hook interface and counts each event.
type eventCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *eventCounter) count(event string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[event]++
}

func (c *eventCounter) missing(events []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range events {
		if c.n[e] == 0 {
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
		c := &eventCounter{n: map[string]int{}}
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

package confluent_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// These tests feed the Produce stage from testkit's fake source (exact
// chunks, revokes and losses on demand) and produce to a real broker.

// values returns n input values.
func values(n int) [][]byte {
	var vs [][]byte
	for i := range n {
		vs = append(vs, fmt.Appendf(nil, "v%d", i))
	}
	return vs
}

// producedOffsets returns the input offsets of the messages in topic, in
// the order stored (toMsg's "from" header).
func producedOffsets(t *testing.T, b *kafkatest.Broker, topic string) []string {
	t.Helper()
	var froms []string
	for _, r := range b.ReadAll(t, topic) {
		for _, h := range r.Headers {
			if h.Key == "from" {
				froms = append(froms, string(h.Value))
			}
		}
	}
	return froms
}

func fromOffsets(first, n int) []string {
	var want []string
	for i := first; i < first+n; i++ {
		want = append(want, fmt.Sprintf("0@%d", i))
	}
	return want
}

// A panic in toMsg stops Run with a PanicError reported at the record's
// offset; the records before it are delivered and committed.
func TestProducePanicInToMsgNamesTheRecord(t *testing.T) {
	t.Parallel()
	b, p := outProducer(t)
	panicky := func(r sluice.Record) (sink.Message, error) {
		if r.Offset == 3 {
			panic("boom")
		}
		return toMsg(r)
	}
	h := testkit.New(t, func(_ *pipeline.Partition, s pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(s, p, "out", panicky, stages.Name("to-out"))
	})
	h.Assign("in", 0)
	h.Send("in", 0, values(10)...)
	err := h.Wait()
	var se *sluice.StageError
	var pe *sluice.PanicError
	if !errors.As(err, &se) || !errors.As(err, &pe) {
		t.Fatalf("Run = %v, want a StageError holding a PanicError", err)
	}
	if se.Stage != "to-out" || se.Topic != "in" || se.Partition != 0 || se.Offset != 3 || pe.Value != "boom" {
		t.Errorf("Run = %v, want the panic \"boom\" of stage to-out at in/0@3", err)
	}
	if c := h.Committed("in", 0); c != 3 {
		t.Errorf("committed %d, want 3", c)
	}
	if got := producedOffsets(t, b, "out"); !slices.Equal(got, fromOffsets(0, 3)) {
		t.Errorf("produced %v, want %v", got, fromOffsets(0, 3))
	}
}

// calls records the Produce stage's calls and stuck values as observers
// see them.
type calls struct {
	mu    sync.Mutex
	n     map[string]int
	stuck chan int64
}

func (c *calls) OnStageCall(stage string, _ sluice.TopicPartition, _ time.Duration, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[stage]++
}

func (c *calls) OnStuck(stage string, _ sluice.TopicPartition, offset int64, _ time.Duration) {
	if stage == "to-out" {
		c.stuck <- offset
	}
}

// toMsg is timed like any stage function and watched by the stuck
// detector: a call that does not return is reported with its offset.
func TestProduceToMsgIsTimedAndWatched(t *testing.T) {
	t.Parallel()
	const n = 10
	_, p := outProducer(t)
	release := make(chan struct{})
	slow := func(r sluice.Record) (sink.Message, error) {
		if r.Offset == 2 {
			<-release
		}
		return toMsg(r)
	}
	obs := &calls{n: map[string]int{}, stuck: make(chan int64, 1)}
	h := testkit.New(t, func(_ *pipeline.Partition, s pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(s, p, "out", slow, stages.Name("to-out"))
	}, pipeline.WithHooks(obs), pipeline.WithStuckThreshold(100*time.Millisecond))
	h.Assign("in", 0)
	h.Send("in", 0, values(n)...)
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	select {
	case off := <-obs.stuck:
		if off != 2 {
			t.Errorf("stuck value at offset %d, want 2", off)
		}
	case <-timeout.C:
		t.Error("no stuck value reported for the Produce stage after 10s")
	}
	close(release)
	h.WaitCommitted("in", 0, n)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if got := obs.n["to-out"]; got != n {
		t.Errorf("observers saw %d calls of to-out, want %d", got, n)
	}
}

// When the partition's context ends in the middle of a chunk (lost, or its
// drain timed out), the stage produces nothing more of it: only the
// records before the one being converted reach the output topic.
func TestProduceStopsMidChunkWhenCancelled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		opts       []pipeline.Option
		takeAway   func(*testkit.Harness)
		wantCommit int64
	}{
		{"lost", nil, func(h *testkit.Harness) { h.Lose("in", 0) }, -1},
		// The five delivered before the drain timed out are completed
		// (the stage reads their reports before it exits) and committed.
		{"drain timeout", []pipeline.Option{pipeline.WithDrainTimeout(100 * time.Millisecond)},
			func(h *testkit.Harness) { h.Revoke("in", 0) }, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, p := outProducer(t)
			reached := make(chan struct{})
			build := func(part *pipeline.Partition, s pipeline.Stream[sluice.Record]) pipeline.End {
				ctx := part.Context()
				return sink.Produce(s, p, "out", func(r sluice.Record) (sink.Message, error) {
					if r.Offset == 5 {
						close(reached)
						<-ctx.Done() // until the partition is taken away
					}
					return toMsg(r)
				})
			}
			h := testkit.New(t, build, tc.opts...)
			h.Assign("in", 0)
			h.Send("in", 0, values(20)...) // one chunk
			<-reached
			tc.takeAway(h)
			if got := producedOffsets(t, b, "out"); !slices.Equal(got, fromOffsets(0, 5)) {
				t.Errorf("produced %v, want only %v", got, fromOffsets(0, 5))
			}
			if c := h.Committed("in", 0); c != tc.wantCommit {
				t.Errorf("committed %d, want %d", c, tc.wantCommit)
			}
			if err := h.Stop(); err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
		})
	}
}

// A transient toMsg error is retried under the stage's retry policy, like
// any stage function's: the record is produced once and commits.
func TestProduceRetriesTransientToMsgError(t *testing.T) {
	t.Parallel()
	const n = 5
	b, p := outProducer(t)
	var mu sync.Mutex
	failures := 2 // for offset 1
	flaky := func(r sluice.Record) (sink.Message, error) {
		mu.Lock()
		defer mu.Unlock()
		if r.Offset == 1 && failures > 0 {
			failures--
			return sink.Message{}, errors.New("enrichment service unavailable")
		}
		return toMsg(r)
	}
	h := testkit.New(t, func(_ *pipeline.Partition, s pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(s, p, "out", flaky, stages.Retry(sluice.RetryPolicy{Attempts: 3, Initial: time.Millisecond}))
	})
	h.Assign("in", 0)
	h.Send("in", 0, values(n)...)
	h.WaitCommitted("in", 0, n)
	if got := producedOffsets(t, b, "out"); !slices.Equal(got, fromOffsets(0, n)) {
		t.Errorf("produced %v, want %v", got, fromOffsets(0, n))
	}
}

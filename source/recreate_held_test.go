package source_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A record of the old topic still being processed when the topic is
// deleted and recreated, finishing after the recreation: its offset (the
// old topic's 5) must not land on the new topic, every record of the new
// topic is delivered once from its start and the group's commit is
// exactly 7.
func TestTopicRecreatedRecordInFlight(t *testing.T) {
	b := kafkatest.NewBroker(t)
	recreateHeld(t, b, shapeSource(t, b, nil), "old-4")
}

// A partition paused by backpressure (a queue of 1 record, the first
// record held) when its topic is deleted and recreated: once the held
// record is let go, the new topic is consumed from its start, each record
// once, the commit exactly 7.
func TestTopicRecreatedWhilePaused(t *testing.T) {
	b := kafkatest.NewBroker(t)
	recreateHeld(t, b, shapeSource(t, b, nil), "old-0", pipeline.WithPartitionQueue(1))
}

// pausedHook reports the first partition pause.
type pausedHook struct{ paused chan struct{} }

func (h pausedHook) OnPartitionPaused(sluice.TopicPartition) {
	select {
	case h.paused <- struct{}{}:
	default:
	}
}

// recreateHeld runs src on topic "orders" (5 old records, one partition),
// holding the record valued hold until the topic was recreated, then
// produces 7 records to the new topic.
func recreateHeld(t *testing.T, b *kafkatest.Broker, src sluice.Source, hold string, opts ...pipeline.Option) {
	t.Helper()
	const topic, group = "orders", "g"
	b.CreateTopic(t, topic, 1)
	b.Produce(t, topic, kafkadriver.Numbered("old-%d", 0, 5)...)

	seen := make(chan string, 64)
	entered := make(chan struct{})
	release := make(chan struct{})
	paused := pausedHook{paused: make(chan struct{}, 1)}
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			if string(r.Value) == hold {
				select {
				case <-entered:
				default:
					close(entered)
					select {
					case <-release:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
			seen <- fmt.Sprintf("%s@%d", r.Value, r.Offset)
			return nil
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	opts = append(opts, pipeline.WithHooks(paused))
	go func() { done <- pipeline.Run(ctx, src, build, opts...) }()

	deadline := time.After(kafkadriver.RecreateWait)
	got := map[string]int{}
	await := func(want map[string]bool) {
		t.Helper()
		for len(want) > 0 {
			select {
			case v := <-seen:
				got[v]++
				if strings.HasPrefix(v, "new-") && (!want[v] || got[v] > 1) {
					t.Errorf("record %s delivered (%d times), not awaited", v, got[v])
				}
				delete(want, v)
			case err := <-done:
				t.Fatalf("Run returned %v while records %v were awaited", err, want)
			case <-deadline:
				t.Fatalf("records %v not delivered within %v (delivered: %v)", want, kafkadriver.RecreateWait, got)
			}
		}
	}
	select {
	case <-entered:
	case <-deadline:
		t.Fatalf("%s not delivered", hold)
	}
	if len(opts) > 1 {
		select {
		case <-paused.paused:
		case <-deadline:
			t.Fatal("the partition was not paused")
		}
	}
	kafkadriver.RecreateTopic(t, b, topic, 1)
	close(release)
	produce := kafkadriver.NewProducer(t, b, topic)
	want := map[string]bool{}
	for i := range 7 {
		produce(0, fmt.Sprintf("new-%d", i))
		want[fmt.Sprintf("new-%d@%d", i, i)] = true
	}
	await(want)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(kafkadriver.RecreateWait):
		t.Fatal("Run did not return")
	}
	if c := b.Committed(t, group, topic); c[0] != 7 || len(c) != 1 {
		t.Fatalf("committed offsets of %s = %v, want {0: 7} (delivered: %v)", topic, c, got)
	}
}

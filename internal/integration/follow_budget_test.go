package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// fetchMaxBytes records the largest MaxBytes of the Fetch requests a
// broker received.
type fetchMaxBytes struct {
	mu  sync.Mutex
	max int32
}

func (f *fetchMaxBytes) get() int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.max
}

// watchFetches makes b record the fetches' MaxBytes in f.
func watchFetches(b *kafkatest.Broker, f *fetchMaxBytes) {
	b.Cluster().ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		f.mu.Lock()
		f.max = max(f.max, r.(*kmsg.FetchRequest).MaxBytes)
		f.mu.Unlock()
		return nil, nil, false
	})
}

// leadersAt is a follow.Leaders whose leaders have committed everything.
type leadersAt struct{}

func (leadersAt) Committed(_ context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	out := make(map[sluice.TopicPartition]int64, len(tps))
	for _, tp := range tps {
		out[tp] = 1 << 62
	}
	return out, nil
}

// fillUncompressed produces perPart records of 100 bytes to each of
// partitions partitions of topic, in uncompressed batches, and returns
// how many.
func fillUncompressed(t *testing.T, b *kafkatest.Broker, topic string, partitions, perPart int) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range perPart {
		for p := range partitions {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Key: fmt.Appendf(nil, "%d-%d", p, i), Value: make([]byte, 100)})
		}
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// A source run under a follower sizes its client's fetches from the
// runtime's byte budget exactly as it does alone: the follower's Group
// hands the budget on. With a 4 MiB budget librdkafka fetches up to
// 1 MiB (its queue, an eighth of the budget, at least 1 MiB), kgo up to
// 128 KiB (a 32nd: batches are uncompressed and records small enough
// that a 32nd of the record limit weighs more).
func TestFollowedSourceSizesFetchesFromTheBudget(t *testing.T) {
	const budget = 4 << 20
	sources := map[string]struct {
		src  func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source
		want int32
	}{
		"librdkafka": {func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source {
			return newSource(t, b, group, topic, nil)
		}, 1 << 20},
		"franz": {func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source {
			return newFranzSource(t, b, group, topic, kgo.FetchMaxWait(10*time.Millisecond))
		}, 128 << 10},
	}
	for name, be := range sources {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := func(followed bool) int32 {
				b := kafkatest.NewKfake(t, kafkatest.WithTopic("in", 2)) // watchFetches observes kfake's requests
				n := fillUncompressed(t, b, "in", 2, 50)
				f := &fetchMaxBytes{}
				watchFetches(b, f)
				var src sluice.Source = be.src(t, b, "g", "in")
				if followed {
					fs, err := follow.New(src, leadersAt{}, follow.WithInterval(20*time.Millisecond))
					if err != nil {
						t.Fatal(err)
					}
					src = fs
				}
				var mu sync.Mutex
				done := 0
				c := startConsumer(t, name, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Each(in, func(context.Context, sluice.Record) error {
						mu.Lock()
						defer mu.Unlock()
						done++
						return nil
					})
				}, pipeline.WithMaxInFlightBytes(budget))
				waitFor(t, "every record processed", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return done == n
				}, c)
				c.stop(t)
				return f.get()
			}
			bare, followed := run(false), run(true)
			if bare != be.want {
				t.Errorf("the bare source fetches up to %d bytes, want %d", bare, be.want)
			}
			if followed != bare {
				t.Errorf("followed source fetches up to %d bytes, the bare one %d: the follower dropped the byte budget", followed, bare)
			}
		})
	}
}

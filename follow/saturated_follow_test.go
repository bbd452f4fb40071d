package follow_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// advancingLeaders are leaders that commit step more records of each partition
// at every read, up to end: they lag the topic, and catch up read by
// read. It is safe for concurrent use.
type advancingLeaders struct {
	mu    sync.Mutex
	step  int64
	end   int64
	caps  map[int32]int64 // partitions whose leaders stop there
	at    map[sluice.TopicPartition]int64
	reads int
}

func (l *advancingLeaders) Committed(_ context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads++
	out := make(map[sluice.TopicPartition]int64, len(tps))
	for _, tp := range tps {
		top := l.end
		if c, ok := l.caps[tp.Partition]; ok {
			top = c
		}
		l.at[tp] = min(l.at[tp]+l.step, top)
		out[tp] = l.at[tp]
	}
	return out, nil
}

// of returns the leaders' offset of tp as last read.
func (l *advancingLeaders) of(tp sluice.TopicPartition) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at[tp]
}

// followedSeen records, by partition, the offsets a graph processed in order,
// and each one the leaders had not committed when it was processed.
type followedSeen struct {
	mu    sync.Mutex
	got   map[int32][]int64
	early []string
}

func (s *followedSeen) add(r sluice.Record, leaders int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.got == nil {
		s.got = map[int32][]int64{}
	}
	s.got[r.Partition] = append(s.got[r.Partition], r.Offset)
	if r.Offset >= leaders {
		s.early = append(s.early, r.Topic+"/"+string(rune('0'+r.Partition)))
	}
}

func (s *followedSeen) snapshot() (map[int32][]int64, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int32][]int64, len(s.got))
	for p, offs := range s.got {
		out[p] = slices.Clone(offs)
	}
	return out, slices.Clone(s.early)
}

func followedSource(t *testing.T, b *kafkatest.Broker, group, topic string) *franz.Source {
	t.Helper()
	gc := producertest.SourceGroup(b.Addrs(), group, topic)
	gc.Logger = kafkatest.Logger(t)
	src, err := franz.NewSource(franz.Config{GroupConfig: gc,
		Opts: []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(6 * time.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestFollowSaturatedLaggingLeaders: a franz follower whose
// leaders lag (each read commits 37 more records of every partition)
// while a tiny in-flight budget (WithMaxInFlight(10)) keeps the runtime
// saturated, so the poll loop takes nothing from kgo most of the time.
// Every record goes through exactly once, in order, never before the
// leaders committed it; the follower's committed offsets reach the ends;
// Run stops with nil.
func TestFollowSaturatedLaggingLeaders(t *testing.T) {
	const (
		topic, group = "advfol", "g-advfol"
		partitions   = 6
		perPart      = 500
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions))
	b.Fill(t, topic, perPart, 100)
	leaders := &advancingLeaders{step: 37, end: perPart, at: map[sluice.TopicPartition]int64{}}
	f, err := follow.New(followedSource(t, b, group, topic), leaders, follow.WithInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	seen := &followedSeen{}
	run := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			time.Sleep(100 * time.Microsecond) // work, not synchronisation
			seen.add(r, leaders.of(sluice.TopicPartition{Topic: r.Topic, Partition: r.Partition}))
			return nil
		})
	}, pipeline.WithMaxInFlight(10))
	want := map[int32]int64{}
	for i := range int32(partitions) {
		want[i] = perPart
	}
	b.WaitCommitted(t, group, topic, want)
	if err := run.Stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	got, early := seen.snapshot()
	if len(early) > 0 {
		t.Errorf("records processed before the leaders committed them: %v", early)
	}
	for p := range int32(partitions) {
		offs := got[p]
		if len(offs) != perPart {
			t.Errorf("partition %d: %d records processed, want %d", p, len(offs), perPart)
		}
		for i, o := range offs {
			if o != int64(i) {
				t.Errorf("partition %d: processed %d at position %d, want every offset once in order", p, o, i)
				break
			}
		}
	}
	if c := b.Committed(t, group, topic); !maps.Equal(c, want) {
		t.Fatalf("committed %v, want %v", c, want)
	}
}

// pollCount counts the source's polls (a sluice.HookPolled).
type pollCount struct{ n atomic.Int64 }

func (p *pollCount) OnPolled(time.Time) { p.n.Add(1) }

// TestFollowSaturatedShutdown: a franz follower whose graphs
// hold every record they got (WithMaxInFlight(8): saturated), the leaders
// of partition 3 stopped at offset 50 (the follower holds what follows),
// the others' at the end. Run is stopped after 20 polls while saturated,
// and the graphs are released as it drains: Run returns nil within a
// minute, every partition was processed from its start in order, nothing
// past its leaders' offset, and the follower's committed offsets are
// exactly what was processed.
func TestFollowSaturatedShutdown(t *testing.T) {
	const (
		topic, group = "advfolstop", "g-advfolstop"
		partitions   = 4
		perPart      = 200
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions))
	b.Fill(t, topic, perPart, 100)
	leaders := &advancingLeaders{step: perPart, end: perPart, caps: map[int32]int64{3: 50}, at: map[sluice.TopicPartition]int64{}}
	f, err := follow.New(followedSource(t, b, group, topic), leaders, follow.WithInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	seen := &followedSeen{}
	entered, release := make(chan struct{}, 1), make(chan struct{})
	polls := &pollCount{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
				select {
				case entered <- struct{}{}:
				default:
				}
				select {
				case <-release:
				case <-ctx.Done():
					return context.Cause(ctx)
				}
				seen.add(r, leaders.of(sluice.TopicPartition{Topic: r.Topic, Partition: r.Partition}))
				return nil
			})
		}, pipeline.WithMaxInFlight(8), pipeline.WithHooks(polls))
	}()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("Run returned %v", err)
	case <-time.After(time.Minute):
		t.Fatal("nothing processed in a minute")
	}
	after := polls.n.Load() + 20
	deadline := time.Now().Add(time.Minute)
	for polls.n.Load() < after {
		if time.Now().After(deadline) {
			t.Fatal("20 polls did not happen in a minute")
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of its context's end")
	}
	got, early := seen.snapshot()
	if len(early) > 0 {
		t.Errorf("records processed before the leaders committed them: %v", early)
	}
	want := map[int32]int64{}
	for part, offs := range got {
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("partition %d processed offsets %v, want 0, 1, ... in order", part, offs)
			}
		}
		want[part] = int64(len(offs))
	}
	if c := b.Committed(t, group, topic); !maps.Equal(c, want) {
		t.Fatalf("committed %v, want what was processed: %v", c, want)
	}
}

package integration

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// leaderCommits commits offsets for leader groups directly (OffsetCommit
// with generation -1 for a group with no members, which Kafka and kfake
// accept), and remembers each commit before sending it, so that a check
// against it is never stricter than what the broker holds.
type leaderCommits struct {
	t     *testing.T
	cl    *kgo.Client
	topic string

	mu  sync.Mutex
	max map[string]map[int32]int64 // group -> partition -> offset
}

func newLeaderCommits(t *testing.T, b *kafkatest.Broker, topic string, groups ...string) *leaderCommits {
	// OffsetCommit v10 names topics by ID, which the request below does not
	// fill: stay at v9 (Kafka 3.x), where topics go by name.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.MaxVersions(kversion.V3_9_0()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	lc := &leaderCommits{t: t, cl: cl, topic: topic, max: map[string]map[int32]int64{}}
	for _, g := range groups {
		lc.max[g] = map[int32]int64{}
	}
	return lc
}

func (lc *leaderCommits) commit(group string, offs map[int32]int64) {
	lc.t.Helper()
	lc.mu.Lock()
	maps.Copy(lc.max[group], offs)
	lc.mu.Unlock()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = group, -1, ""
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = lc.topic
	for p, o := range offs {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), lc.cl)
	if err != nil {
		lc.t.Fatalf("commit for leader %s: %v", group, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				lc.t.Fatalf("commit for leader %s on %d: %v", group, p.Partition, err)
			}
		}
	}
}

// limit returns the lowest offset any leader group committed (or is
// committing) on p, -1 when one has committed nothing.
func (lc *leaderCommits) limit(p int32) int64 {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	low := int64(-1)
	first := true
	for _, m := range lc.max {
		v, ok := m[p]
		if !ok {
			return -1
		}
		if first || v < low {
			low, first = v, false
		}
	}
	return low
}

// followStatuses keeps the newest follow.Status of each partition.
type followStatuses struct {
	mu   sync.Mutex
	last map[int32]follow.Status
}

func (s *followStatuses) OnFollowerStatus(st follow.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[st.Partition] = st
}

func (s *followStatuses) get(p int32) follow.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[p]
}

// TestFollower runs a follower on each backend behind two leader groups
// committing in steps: it never processes an offset a leader has not
// committed, catches up exactly to the lowest leader, keeps its group
// membership while the leaders stall for longer than its session timeout
// and its poll interval, and ends exactly at the leaders' final commit.
func TestFollower(t *testing.T) {
	type backend struct {
		source  func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source
		leaders func(t *testing.T, b *kafkatest.Broker, groups []string) follow.Leaders
	}
	// Both sources: session timeout 6s (the helpers' setting, kfake's
	// minimum is Kafka's group.min.session.timeout.ms, 6s) and a poll
	// interval (max.poll.interval.ms, kgo's rebalance timeout) of 7s, so
	// that the 8s stall below outlasts both.
	backends := map[string]backend{
		"librdkafka": {
			source: func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source {
				return newSource(t, b, group, topic, map[string]any{"max.poll.interval.ms": 7000})
			},
			leaders: func(t *testing.T, b *kafkatest.Broker, groups []string) follow.Leaders {
				l, err := source.NewLeaders(source.LeadersConfig{Brokers: b.Addrs(), Groups: groups})
				if err != nil {
					t.Fatal(err)
				}
				return l
			},
		},
		"franz": {
			source: func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source {
				return newFranzSource(t, b, group, topic, kgo.RebalanceTimeout(7*time.Second))
			},
			leaders: func(t *testing.T, b *kafkatest.Broker, groups []string) follow.Leaders {
				l, err := franz.NewLeaders(franz.LeadersConfig{Brokers: b.Addrs(), Groups: groups})
				if err != nil {
					t.Fatal(err)
				}
				return l
			},
		},
	}
	for name, be := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const perPartition = 60
			const stall = 8 * time.Second
			b := kafkatest.NewBroker(t)
			topic, group := "follow-"+name, "follower-"+name
			b.CreateTopic(t, topic, 2)
			b.Fill(t, topic, perPartition, 8)
			lead := newLeaderCommits(t, b, topic, "lead-a", "lead-b")
			leaders := be.leaders(t, b, []string{"lead-a", "lead-b"})
			defer leaders.(interface{ Close() }).Close()
			counted := &countingLeaders{Leaders: leaders}

			var mu sync.Mutex
			got := map[int32][]int64{}
			var breaches []string
			build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Each(in, func(_ context.Context, r sluice.Record) error {
					limit := lead.limit(r.Partition)
					mu.Lock()
					defer mu.Unlock()
					if r.Offset >= limit {
						breaches = append(breaches, fmt.Sprintf("%d@%d processed with the leaders at %d", r.Partition, r.Offset, limit))
					}
					got[r.Partition] = append(got[r.Partition], r.Offset)
					return nil
				})
			}
			processed := func(p int32) []int64 {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(got[p])
			}
			st := &followStatuses{last: map[int32]follow.Status{}}
			src, err := follow.New(be.source(t, b, group, topic), counted,
				follow.WithInterval(50*time.Millisecond), follow.WithHook(st), follow.WithLogger(followLogger(t)))
			if err != nil {
				t.Fatal(err)
			}
			obs := newGroupObserver()
			c := startConsumer(t, name, src, build, pipeline.WithHooks(obs), pipeline.WithDrainTimeout(time.Second))

			// Nothing committed by the leaders: records are fetched and held.
			waitFor(t, "both partitions holding records", func() bool {
				return st.get(0).Held > 0 && st.get(1).Held > 0
			}, c)
			for p := int32(0); p < 2; p++ {
				if ps := processed(p); len(ps) != 0 {
					t.Fatalf("partition %d processed %v before any leader commit", p, ps)
				}
			}

			// One leader alone releases nothing; with both, the lowest wins.
			lead.commit("lead-a", map[int32]int64{0: 20, 1: 20})
			after := counted.reads.Load() + 2 // a read that started after the commit, done
			waitFor(t, "the follower reading the leaders twice after lead-a's commit", func() bool {
				return counted.reads.Load() >= after
			}, c)
			for p := int32(0); p < 2; p++ {
				if ps := processed(p); len(ps) != 0 || st.get(p).Leaders != -1 {
					t.Fatalf("partition %d: processed %v, status %+v, with only lead-a committed", p, ps, st.get(p))
				}
			}
			lead.commit("lead-b", map[int32]int64{0: 10, 1: 35})
			want := map[int32]int64{0: 10, 1: 20}
			waitFor(t, fmt.Sprintf("the follower committing %v", want), func() bool {
				return maps.Equal(b.Committed(t, group, topic), want)
			}, c)
			for p, n := range want {
				if ps := processed(p); !slices.Equal(ps, followSpan(0, n)) {
					t.Fatalf("partition %d processed %v, want [0, %d)", p, ps, n)
				}
			}

			// The leaders stall longer than the session timeout and the poll
			// interval: the follower stays a member, its partitions held.
			time.Sleep(stall) // the stall under test, not synchronisation
			if r, l, a := obs.revoked.Load(), obs.lost.Load(), obs.assigned.Load(); r != 0 || l != 0 || a != 2 {
				t.Fatalf("after the stall: %d revoked, %d lost, %d assigned; want 0, 0, 2", r, l, a)
			}
			if got := b.Committed(t, group, topic); !maps.Equal(got, want) {
				t.Fatalf("after the stall the follower committed %v, want %v", got, want)
			}

			// The leaders finish: the follower catches up exactly.
			lead.commit("lead-a", map[int32]int64{0: perPartition, 1: perPartition})
			lead.commit("lead-b", map[int32]int64{0: perPartition, 1: perPartition})
			b.WaitCommitted(t, group, topic, b.HighWatermarks(t, topic))
			for p := int32(0); p < 2; p++ {
				if ps := processed(p); !slices.Equal(ps, followSpan(0, perPartition)) {
					t.Fatalf("partition %d processed %v, want [0, %d) once each", p, ps, perPartition)
				}
			}
			c.stop(t)
			if l := obs.lost.Load(); l != 0 {
				t.Fatalf("at the end: %d partitions lost, want 0", l)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, br := range breaches {
				t.Error(br)
			}
		})
	}
}

// countingLeaders counts the reads of the leaders that succeeded.
type countingLeaders struct {
	follow.Leaders
	reads atomic.Int64
}

func (c *countingLeaders) Committed(ctx context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	m, err := c.Leaders.Committed(ctx, tps)
	if err == nil {
		c.reads.Add(1)
	}
	return m, err
}

func followLogger(t *testing.T) *slog.Logger {
	if l := kafkatest.Logger(t); l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// followSpan returns [from, to).
func followSpan(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

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
// 1 MiB (its queue, a 256th of the budget, at least 1 MiB), kgo up to
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

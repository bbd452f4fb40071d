package franz

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestPausedPartitionsRecordsNotFetchedAgainWrapped: as
// TestPausedPartitionsRecordsNotFetchedAgain, with the runtime's group
// wrapped by the groups that wrap it in production: a follower whose
// leaders committed every record (follow), and exactly-once (a
// transactional producer bound to the source). The wrapper tells the
// source that the runtime is saturated, so the source takes nothing from
// kgo meanwhile and kgo fetches few records twice.
func TestPausedPartitionsRecordsNotFetchedAgainWrapped(t *testing.T) {
	t.Run("follow", func(t *testing.T) {
		notFetchedAgain(t, func(t *testing.T, src *Source) sluice.Source {
			// The leaders committed every record: the follower holds none.
			leaders := follow.LeadersFunc(func(_ context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
				out := make(map[sluice.TopicPartition]int64, len(tps))
				for _, tp := range tps {
					out[tp] = refetchPerPart
				}
				return out, nil
			})
			f, err := follow.New(src, leaders)
			if err != nil {
				t.Fatal(err)
			}
			return f
		})
	})
	t.Run("exactly-once", func(t *testing.T) {
		notFetchedAgain(t, func(t *testing.T, src *Source) sluice.Source {
			// No interval commit during the test: one due while the graph
			// holds every record would hold the records delivered from
			// then on in the Group, and the runtime's budget would never
			// fill.
			src.cfg.CommitInterval = time.Hour
			p, err := NewTransactionalProducer(src, TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "refetch-1"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := p.Close(); err != nil {
					t.Error(err)
				}
			})
			return src
		})
	})
}

// refetchPerPart is how many records each partition of the topic of
// notFetchedAgain holds.
const refetchPerPart = 3000

// notFetchedAgain runs the scenario of
// TestPausedPartitionsRecordsNotFetchedAgain with the source wrap returns
// for the test's source.
func notFetchedAgain(t *testing.T, wrap func(*testing.T, *Source) sluice.Source) {
	const partitions, perPart, perBatch, limit = 4, refetchPerPart, 3000, 1000
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("refetch", partitions))
	n := produceInBatches(t, b, "refetch", partitions, perPart, perBatch)
	fetched := &fetchedRecords{}
	src := wrap(t, newTestSource(t, b, "g-refetch", "refetch", kgo.WithHooks(fetched)))
	pc := &pauseCounter{paused: map[sluice.TopicPartition]bool{}}
	seen := &offsetsSeen{}
	var done atomic.Int64
	g := newGate()
	run := testkit.Start(t, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			if err := g.pass(ctx); err != nil {
				return err
			}
			seen.add(r)
			done.Add(1)
			return nil
		})
	}, pipeline.WithMaxInFlight(limit), pipeline.WithHooks(pc))
	run.WaitUntil(t, "a partition paused", func() bool { return pc.count() > 0 })
	after := pc.polls.Load() + 50
	run.WaitUntil(t, "50 polls after the pauses", func() bool { return pc.polls.Load() >= after })
	close(g.release)
	run.WaitUntil(t, "every record done", func() bool { return done.Load() == int64(n) })
	if err := run.Stop(t); err != nil {
		t.Fatal(err)
	}
	checkEveryOffsetInOrder(t, seen.byPartition(), partitions, perPart)
	// Each batch read again counts 3000 records, a quarter of the topic:
	// up to four are allowed.
	fetchedN := fetched.n.Load()
	t.Logf("kgo fetched %d records for the %d of the topic", fetchedN, n)
	if fetchedN > int64(n)*2 {
		t.Errorf("kgo fetched %d records for the %d of the topic; want at most twice the topic", fetchedN, n)
	}
}

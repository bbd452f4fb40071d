package franz

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

func TestFetchSizes(t *testing.T) {
	for _, c := range []struct {
		name                   string
		budget                 int64
		maxBytes, maxPartBytes int32
	}{
		{"default budget", pipeline.DefaultMaxInFlightBytes, 8 << 20, 1 << 20},
		{"16 MiB", 16 << 20, 512 << 10, 512 << 10},
		{"tiny: the floor", 1 << 10, 64 << 10, 64 << 10},
		{"huge: kgo's default per fetch", 1 << 40, 50 << 20, 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			maxBytes, maxPartBytes, concurrent := fetchSizes(c.budget)
			if maxBytes != c.maxBytes || maxPartBytes != c.maxPartBytes || concurrent != maxConcurrentFetches {
				t.Fatalf("fetchSizes(%d) = %d, %d, %d; want %d, %d, %d", c.budget, maxBytes, maxPartBytes, concurrent, c.maxBytes, c.maxPartBytes, maxConcurrentFetches)
			}
			// kgo takes them as they are (it clamps FetchMaxPartitionBytes
			// to FetchMaxBytes, and validates both).
			cl, err := kgo.NewClient(newFetchSizer(c.budget, pipeline.DefaultMaxInFlight).opts()...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if got := cl.OptValue(kgo.FetchMaxBytes); got != c.maxBytes {
				t.Errorf("kgo.FetchMaxBytes = %v, want %d", got, c.maxBytes)
			}
			if got := cl.OptValue(kgo.FetchMaxPartitionBytes); got != c.maxPartBytes {
				t.Errorf("kgo.FetchMaxPartitionBytes = %v, want %d", got, c.maxPartBytes)
			}
			if got := cl.OptValue(kgo.MaxConcurrentFetches); got != maxConcurrentFetches {
				t.Errorf("kgo.MaxConcurrentFetches = %v, want %d", got, maxConcurrentFetches)
			}
		})
	}
}

func TestBudgetOf(t *testing.T) {
	if got := budgetOf(budgetGroup{refusingGroup{}, 0}); got != pipeline.DefaultMaxInFlightBytes {
		t.Errorf("a Group with MaxInFlightBytes 0: %d, want the default %d", got, pipeline.DefaultMaxInFlightBytes)
	}
	if got := budgetOf(budgetGroup{refusingGroup{}, 3 << 20}); got != 3<<20 {
		t.Errorf("a Group with MaxInFlightBytes 3 MiB: %d", got)
	}
}

// The fetch sizer starts at one byte (a broker answers with one batch),
// then asks for what decompresses to a 32nd of the byte budget and holds
// a 32nd of the record limit, or at least minRecordFetch (1 MiB) on the
// wire when the byte share allows it, never more than fetchSizes; one
// partition's part holds at most an eighth of the record limit. It
// leaves sizes set in Config.Opts alone.
func TestFetchSizer(t *testing.T) {
	const records = 100_000 // per fetch 3125, per partition 12,500
	const small, dflt = 16 << 20, pipeline.DefaultMaxInFlightBytes
	batch := func(uncompressed, compressed, n int) kgo.FetchBatchMetrics {
		return kgo.FetchBatchMetrics{UncompressedBytes: uncompressed, CompressedBytes: compressed, NumRecords: n}
	}
	for _, c := range []struct {
		name                     string
		budget                   int64 // per fetch: 512 KiB (small), 8 MiB (dflt)
		opts                     []kgo.Opt
		batch                    kgo.FetchBatchMetrics
		first, maxBytes, maxPart int32
	}{
		{"uncompressed, big records: the bytes", small, nil, batch(1<<20, 1<<20, 100), 1, 512 << 10, 512 << 10},
		{"uncompressed, big records, default budget: the bytes, 1 MiB a partition", dflt, nil, batch(1<<20, 1<<20, 100), 1, 8 << 20, 1 << 20},
		// 64 B a record: 3125 records are 200,000 B, 12,500 are 800,000.
		{"uncompressed, small records: the byte share below minRecordFetch", small, nil, batch(1<<20, 1<<20, 16384), 1, 512 << 10, 512 << 10},
		{"uncompressed, small records: minRecordFetch, an eighth of the records a partition", dflt, nil, batch(1<<20, 1<<20, 16384), 1, 1 << 20, 800_000},
		// Compressed 4x, 16 B a record on the wire: the byte share is 2 MiB.
		{"compressed, small records: minRecordFetch, an eighth of the records a partition", dflt, nil, batch(4<<20, 1<<20, 65536), 1, 1 << 20, 200_000},
		{"compressed 16x: a 16th", small, nil, batch(16<<20, 1<<20, 100), 1, 32 << 10, 32 << 10},
		{"more than one batch decompresses to the share: one batch", small, nil, batch(1<<30, 1<<10, 1000), 1, 1, 1},
		{"set in Config.Opts: left alone", small, []kgo.Opt{kgo.FetchMaxBytes(1 << 20)}, batch(16<<20, 1<<20, 100), 1 << 20, 1 << 20, 512 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFetchSizer(c.budget, records)
			cl, err := kgo.NewClient(append(f.opts(), c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			f.start(cl)
			if got := cl.OptValue(kgo.FetchMaxBytes); got != c.first {
				t.Errorf("before any batch: kgo.FetchMaxBytes = %v, want %d", got, c.first)
			}
			for range 3 {
				f.OnFetchBatchRead(kgo.BrokerMetadata{}, "t", 0, c.batch)
			}
			if got := cl.OptValue(kgo.FetchMaxBytes); got != c.maxBytes {
				t.Errorf("kgo.FetchMaxBytes = %v, want %d", got, c.maxBytes)
			}
			if got := cl.OptValue(kgo.FetchMaxPartitionBytes); got != c.maxPart {
				t.Errorf("kgo.FetchMaxPartitionBytes = %v, want %d", got, c.maxPart)
			}
		})
	}
}

type budgetGroup struct {
	refusingGroup
	budget int64
}

func (g budgetGroup) MaxInFlightBytes() int64 { return g.budget }

// fetchedBytes is a kgo hook summing the bytes on the wire of every batch
// the client fetched.
type fetchedBytes struct{ n atomic.Int64 }

func (f *fetchedBytes) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	f.n.Add(int64(m.CompressedBytes))
}

// pauseCounter counts the partitions the runtime paused and the polls.
type pauseCounter struct {
	mu     sync.Mutex
	paused map[sluice.TopicPartition]bool
	polls  atomic.Int64
}

func (p *pauseCounter) OnPartitionPaused(tp sluice.TopicPartition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused[tp] = true
}

func (p *pauseCounter) OnPolled(time.Time) { p.polls.Add(1) }

func (p *pauseCounter) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.paused)
}

// TestFetchBoundedByBudget: with a graph that holds every record, what the
// source fetches stays within a fraction of the in-flight byte budget
// plus a batch per partition, not kgo's defaults (1 MiB per partition per
// fetch, 50 MiB per broker), whatever the topic holds.
func TestFetchBoundedByBudget(t *testing.T) {
	const (
		partitions = 8
		budget     = 256 << 10
		perPart    = 4000 // records of 1000 B: 4 MB a partition
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("big", partitions))
	b.Fill(t, "big", perPart, 1000)
	fetched := &fetchedBytes{}
	src := newTestSource(t, b, "g-fetch", "big", kgo.WithHooks(fetched))
	pc := &pauseCounter{paused: map[sluice.TopicPartition]bool{}}
	release := make(chan struct{})
	run := testkit.Start(t, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, _ sluice.Record) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	}, pipeline.WithMaxInFlightBytes(budget), pipeline.WithHooks(pc))
	run.WaitUntil(t, "a partition paused", func() bool { return pc.count() > 0 })
	// 50 polls more (10 ms each while paused): the source took what its
	// share of the budget lets it hold, the fetch in flight has been
	// answered, and nothing more is fetched (paused partitions are not
	// fetched, and a buffered fetch not taken holds up its broker's next).
	after := pc.polls.Load() + 50
	run.WaitUntil(t, "50 polls after the pause", func() bool { return pc.polls.Load() >= after })
	// kfake answers a fetch with whole batches of at most the request's
	// limits, and at least one batch when the first is larger (as Kafka):
	// the producer's batches (kafkatest: kgo's defaults, snappy) are far
	// below 1 MiB on the wire here, so each fetch stays within
	// fetchSizes. The bound: the runtime's budget and the source's share
	// (what they hold), plus two fetches of every concurrent slot (the
	// one buffered and the one in flight at the pause).
	maxBytes, _, concurrent := fetchSizes(budget)
	bound := int64(budget) + 2*int64(concurrent)*int64(maxBytes)
	if got := fetched.n.Load(); got > bound {
		t.Errorf("fetched %d bytes with the graphs stuck; want at most %d (budget %d + 2 x %d fetches of %d)", got, bound, budget, concurrent, maxBytes)
	}
	close(release)
	if err := run.Stop(t); err != nil {
		t.Fatal(err)
	}
}

package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// epoch is one ownership of one partition by one consumer: from the graph
// built on assignment to its revoke.
type epoch struct {
	member string
	p      int32
	start  int64 // the group's committed offset when the graph was built (0: none)

	mu          sync.Mutex
	first, last int64 // offsets processed, -1 before the first
	n           int
	gap         string // first non-consecutive step, if any
}

func (e *epoch) record(off int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == 0 {
		e.first = off
	} else if off != e.last+1 && e.gap == "" {
		e.gap = fmt.Sprintf("%d after %d", off, e.last)
	}
	e.last = off
	e.n++
}

// epochs collects every epoch of every member of a group.
type epochs struct {
	b            *kafkatest.Broker
	group, topic string
	mu           sync.Mutex
	all          []*epoch
}

// begin starts an epoch; it runs in the builder, on the poll goroutine
// before the client fetches anything for the partition, so the committed
// offset it reads is where the partition's delivery starts.
func (es *epochs) begin(member string, p int32) *epoch {
	start := int64(0)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	committed, err := es.b.CommittedContext(ctx, es.group, es.topic)
	if err != nil {
		panic(err) // the broker stopped answering: the test cannot go on
	}
	if c, ok := committed[p]; ok {
		start = c
	}
	e := &epoch{member: member, p: p, start: start, first: -1, last: -1}
	es.mu.Lock()
	es.all = append(es.all, e)
	es.mu.Unlock()
	return e
}

// check: every epoch processed consecutive offsets starting exactly at the
// committed offset it was assigned with; nothing was processed below a
// committed offset.
func (es *epochs) check(t *testing.T) (perMember map[string]int) {
	t.Helper()
	es.mu.Lock()
	defer es.mu.Unlock()
	perMember = map[string]int{}
	for _, e := range es.all {
		e.mu.Lock()
		perMember[e.member] += e.n
		if e.n > 0 && e.first != e.start {
			t.Errorf("%s/%d: epoch started processing at %d, the group had committed %d", e.member, e.p, e.first, e.start)
		}
		if e.gap != "" {
			t.Errorf("%s/%d: epoch processed offsets out of sequence: %s", e.member, e.p, e.gap)
		}
		e.mu.Unlock()
	}
	return perMember
}

// TestGroupMembershipChurn: three consumers over an 8-partition topic;
// A starts, B joins, C joins, B leaves gracefully, all while records flow.
// Every offset is processed, the group ends committed at the high
// watermarks, every member's ownership of a partition starts exactly at
// the committed offset, and with cooperative-sticky nothing is processed
// twice. With the eager range assignor every member drains and commits on
// every rebalance, so duplicates could only come from a commit the group
// rejected; they are counted and logged. It runs on both sources
// (TestGroupMembershipChurnConsumerProtocol: in a KIP-848 group).
func TestGroupMembershipChurn(t *testing.T) {
	for _, strategy := range []string{"cooperative-sticky", "range"} {
		t.Run("librdkafka/"+strategy, func(t *testing.T) {
			t.Parallel()
			ov := map[string]any{"partition.assignment.strategy": strategy}
			churn(t, strategy, 25_000, func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source {
				return newSource(t, b, group, topic, ov)
			})
		})
	}
	for name, balancer := range map[string]kgo.GroupBalancer{
		"cooperative-sticky": kgo.CooperativeStickyBalancer(),
		"range":              kgo.RangeBalancer(),
	} {
		t.Run("franz/"+name, func(t *testing.T) {
			t.Parallel()
			churn(t, name, 10_000, franzMember(kgo.Balancers(balancer)))
		})
	}
}

// franzMember makes franz sources with the kgo options opts.
func franzMember(opts ...kgo.Opt) newMemberSource {
	return func(t *testing.T, b *kafkatest.Broker, group, topic string) sluice.Source {
		return newFranzSource(t, b, group, topic, opts...)
	}
}

// churn runs the churn over perPartition records a partition with members
// of newSrc; strategy names their assignor, and "consumer" (KIP-848) also
// checks the group's type and, as cooperative-sticky, that nothing is
// processed twice.
func churn(t *testing.T, strategy string, perPartition int, newSrc newMemberSource) {
	const parts = 8
	// Work: 1ms every 2nd record (Go timers have about a millisecond of
	// resolution) bounds the consumption rate at about 16k records/s, so
	// that joins and leaves (each a rebalance of one to two seconds) happen
	// while most records are still to come.
	const work, every = time.Millisecond, 2
	b := kafkatest.NewBroker(t)
	const topic, group = "churn", "churn-g"
	b.CreateTopic(t, topic, parts)
	began := time.Now()
	total := b.Fill(t, topic, perPartition, 16)
	t.Logf("produced %d records in %v", total, time.Since(began))
	hw := b.HighWatermarks(t, topic)
	seen := newOffsets(hw)
	es := &epochs{b: b, group: group, topic: topic}

	member := func(name string) (*consumer, *groupObserver) {
		obs := newGroupObserver()
		build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			e := es.begin(name, p.Partition)
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if r.Offset%every == 0 {
					time.Sleep(work) // the work, not synchronisation
				}
				e.record(r.Offset)
				seen.add(r.Partition, r.Offset)
				return nil
			})
		}
		return startConsumer(t, name, newSrc(t, b, group, topic), build, pipeline.WithHooks(obs)), obs
	}
	progress := func(frac float64) func() bool {
		return func() bool { return seen.total.Load() >= int64(frac*float64(total)) }
	}

	began = time.Now()
	a, _ := member("A")
	waitFor(t, "10% processed", progress(0.10), a)
	bc, bObs := member("B")
	waitFor(t, "B getting partitions", func() bool { return bObs.owns() > 0 }, a, bc)
	t.Logf("B owns %d partitions at %d processed (%v)", bObs.owns(), seen.total.Load(), time.Since(began))
	if strategy == "consumer" {
		if typ := groupType(t, b, group); typ != "consumer" {
			t.Errorf("group of type %q, want consumer (KIP-848)", typ)
		}
	}
	waitFor(t, "35% processed", progress(0.35), a, bc)
	cc, cObs := member("C")
	waitFor(t, "C getting partitions", func() bool { return cObs.owns() > 0 }, a, bc, cc)
	t.Logf("C owns %d partitions at %d processed (%v)", cObs.owns(), seen.total.Load(), time.Since(began))
	waitFor(t, "60% processed", progress(0.60), a, bc, cc)
	bc.stop(t)
	t.Logf("B left at %d processed (%v)", seen.total.Load(), time.Since(began))
	b.WaitCommitted(t, group, topic, b.HighWatermarks(t, topic))
	t.Logf("all committed after %v", time.Since(began))
	a.stop(t)
	cc.stop(t)

	dups := seen.check(t)
	perMember := es.check(t)
	t.Logf("%s: %d duplicate processings; processed per member %v; %d ownership epochs",
		strategy, dups, perMember, len(es.all))
	for _, m := range []string{"A", "B", "C"} {
		if perMember[m] == 0 {
			t.Errorf("member %s processed nothing: the churn happened after the stream ended", m)
		}
	}
	if (strategy == "cooperative-sticky" || strategy == "consumer") && dups != 0 {
		t.Errorf("%s: %d records processed twice, want none", strategy, dups)
	}
	checkCommittedEquals(t, b, group, topic, hw)
}

func checkCommittedEquals(t *testing.T, b *kafkatest.Broker, group, topic string, want map[int32]int64) {
	t.Helper()
	got := b.Committed(t, group, topic)
	for p, w := range want {
		if got[p] != w {
			t.Errorf("partition %d committed %d, want %d (all: %v)", p, got[p], w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("committed %v, want %v", got, want)
	}
}

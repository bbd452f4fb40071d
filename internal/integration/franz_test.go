package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// newFranzSource returns a franz source for group/topic with test timings
// (fast heartbeats and commits); opts are applied after them.
func newFranzSource(t testing.TB, b *kafkatest.Broker, group, topic string, opts ...kgo.Opt) *franz.Source {
	t.Helper()
	return newFranzSourceEvery(t, b, group, topic, 50*time.Millisecond, opts...)
}

// newFranzSourceEvery is newFranzSource committing every interval.
func newFranzSourceEvery(t testing.TB, b *kafkatest.Broker, group, topic string, every time.Duration, opts ...kgo.Opt) *franz.Source {
	t.Helper()
	src, err := franz.NewSource(franz.Config{
		Brokers:        b.Addrs(),
		Group:          group,
		Topics:         []string{topic},
		CommitInterval: every,
		Logger:         testLogger(t),
		Opts:           append([]kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(6 * time.Second)}, opts...),
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestFranzGroupMembershipChurn is TestGroupMembershipChurn on the franz
// source: three members join and leave mid-stream; every offset is
// processed, the commits end at the high watermarks, and with
// cooperative-sticky nothing is processed twice.
func TestFranzGroupMembershipChurn(t *testing.T) {
	for name, balancer := range map[string]kgo.GroupBalancer{
		"cooperative-sticky": kgo.CooperativeStickyBalancer(),
		"range":              kgo.RangeBalancer(),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			franzChurn(t, name, kgo.Balancers(balancer))
		})
	}
}

// franzChurn runs the churn with the members' kgo options opts (their
// balancers); strategy names it, and "consumer" (KIP-848) also checks the
// group's type and, as cooperative-sticky, that nothing is processed twice.
func franzChurn(t *testing.T, strategy string, opts ...kgo.Opt) {
	const parts, perPartition = 8, 10_000
	const work, every = time.Millisecond, 2 // the work, as in churn
	b := kafkatest.NewBroker(t)
	const topic, group = "fchurn", "fchurn-g"
	b.CreateTopic(t, topic, parts)
	total := b.Fill(t, topic, perPartition, 16)
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
		src := newFranzSource(t, b, group, topic, opts...)
		return startConsumer(t, name, src, build, pipeline.WithHooks(obs)), obs
	}
	progress := func(frac float64) func() bool {
		return func() bool { return seen.total.Load() >= int64(frac*float64(total)) }
	}
	began := time.Now()
	a, _ := member("A")
	waitFor(t, "10% processed", progress(0.10), a)
	bc, bObs := member("B")
	waitFor(t, "B getting partitions", func() bool { return bObs.owns() > 0 }, a, bc)
	if typ := groupType(t, b, group); strategy == "consumer" && typ != "consumer" {
		t.Errorf("group of type %q, want consumer (KIP-848)", typ)
	}
	waitFor(t, "35% processed", progress(0.35), a, bc)
	cc, cObs := member("C")
	waitFor(t, "C getting partitions", func() bool { return cObs.owns() > 0 }, a, bc, cc)
	waitFor(t, "60% processed", progress(0.60), a, bc, cc)
	bc.stop(t)
	b.WaitCommitted(t, group, topic, b.HighWatermarks(t, topic))
	t.Logf("all committed after %v", time.Since(began))
	a.stop(t)
	cc.stop(t)

	dups := seen.check(t)
	perMember := es.check(t)
	t.Logf("%s: %d duplicate processings; processed per member %v", strategy, dups, perMember)
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

// TestFranzCrashedMemberIsReplaced is TestCrashedMemberIsReplaced on the
// franz source: A is thrown out mid-stream (the coordinator rejects its
// heartbeats with ILLEGAL_GENERATION, which kgo reports through
// OnPartitionsLost, and its joins, so it cannot come back), as a crashed
// process is; it commits nothing after the loss. B then processes exactly
// [A's last commit, high watermark).
func TestFranzCrashedMemberIsReplaced(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 10_000
	b := kafkatest.NewKfake(t)
	const topic, group = "fcrash", "fcrash-g"
	b.CreateTopic(t, topic, parts)
	total := b.Fill(t, topic, perPartition, 16)
	hw := b.HighWatermarks(t, topic)
	all, byB := newOffsets(hw), newOffsets(hw)
	builder := func(name string, mine *offsets) pipeline.Builder {
		return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				if name == "A" && r.Offset%2 == 0 {
					time.Sleep(time.Millisecond) // work: keeps A mid-stream when it is thrown out
				}
				if mine != nil {
					mine.add(r.Partition, r.Offset)
				}
				all.add(r.Partition, r.Offset)
				return nil
			})
		}
	}
	session := kgo.SessionTimeout(2 * time.Second) // B joins once A's session expired
	aObs := &lossObserver{groupObserver: newGroupObserver(), b: b, group: group, topic: topic, lost: make(chan struct{})}
	a := startConsumer(t, "A", newFranzSource(t, b, group, topic, session), builder("A", nil), pipeline.WithHooks(aObs))
	waitFor(t, "A processing and committing on every partition", func() bool {
		return all.total.Load() >= int64(total/5) && len(b.Committed(t, group, topic)) == parts
	}, a)
	faults := b.Cluster().Fault(
		kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: group, Err: kerr.IllegalGeneration, Count: -1},
		kfake.Fault{Keys: []kmsg.Key{kmsg.JoinGroup}, Group: group, Err: kerr.CoordinatorLoadInProgress, Count: -1},
	)
	select {
	case <-aObs.lost:
	case <-a.Done():
		t.Fatalf("A stopped before losing its partitions: %v", a.Err())
	case <-time.After(wait):
		t.Fatalf("A did not lose its partitions within %v", wait)
	}
	a.stop(t)
	faults.Remove()
	final := aObs.checkNoCommitAfterLoss(t, b.Committed(t, group, topic))
	if n := aObs.revoked.Load(); n != 0 {
		t.Errorf("A revoked %d partitions gracefully; it should only have lost them", n)
	}
	bObs := newGroupObserver()
	bc := startConsumer(t, "B", newFranzSource(t, b, group, topic, session), builder("B", byB), pipeline.WithHooks(bObs))
	b.WaitCommitted(t, group, topic, b.HighWatermarks(t, topic))
	bc.stop(t)
	for p, h := range hw {
		from := final[p]
		for off := range h {
			want := int32(0)
			if off >= from {
				want = 1
			}
			if n := byB.n[p][off].Load(); n != want {
				t.Fatalf("partition %d offset %d processed %d times by B, want %d (A's last commit: %d)", p, off, n, want, from)
			}
		}
	}
	if n := bObs.lost.Load(); n != 0 {
		t.Errorf("B lost %d partitions", n)
	}
}

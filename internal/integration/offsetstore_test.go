package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The tests of Config.OffsetStore on both Kafka sources, each on every
// client and rebalance protocol (storeClients), on the broker
// kafkatest.NewBroker picks.

// TestOffsetStoreStartOffsets: the group committed 5 on every partition;
// the store names a later offset for partition 0 and an earlier one for
// partition 1, and leaves partition 2 out. The first record delivered of
// each partition is exactly the store's offset (12, 2), or the group's
// (5) for the one left out; every offset from there is processed once,
// none before; the store was asked once, for the group, with every
// partition; the commits then reach the end.
func TestOffsetStoreStartOffsets(t *testing.T) {
	b := kafkatest.NewBroker(t)
	forEachClient(t, func(t *testing.T, c storeClient) {
		topic, group := c.topic(t, b, "osstart", 3, 20)
		commitGroup(t, b, group, topic, map[int32]int64{0: 5, 1: 5, 2: 5})
		want := map[int32]int64{0: 12, 1: 2, 2: 5}

		l := &storeLog{}
		store := &recordingStore{member: "A", log: l, start: map[int32]int64{0: 12, 1: 2}}
		hw := b.HighWatermarks(t, topic)
		seen := newOffsets(hw)
		build := loggingBuilder(l, "A", func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				seen.add(r.Partition, r.Offset)
				return nil
			})
		})
		a := startConsumer(t, "A", c.newSource(t, b, group, topic, store), build)
		waitFor(t, "the commits reaching the end", func() bool {
			return maps.Equal(b.Committed(t, group, topic), hw)
		}, a)
		c.checkGroupType(t, b, group)
		a.stop(t)

		if got := l.firsts("A"); !maps.Equal(got, want) {
			t.Errorf("first record delivered by partition: %v, want %v (store: 0 at 12, 1 at 2; group: 5)", got, want)
		}
		for p, from := range want {
			for off := range hw[p] {
				exp := int32(0)
				if int64(off) >= from {
					exp = 1
				}
				if got := seen.n[p][off].Load(); got != exp {
					t.Errorf("partition %d offset %d processed %d times, want %d (start %d)", p, off, got, exp, from)
				}
			}
		}
		wantClaims := [][]sluice.TopicPartition{tpsOf(topic, 0, 1, 2)}
		if got := l.claims("A"); !slices.EqualFunc(got, wantClaims, slices.Equal) {
			t.Errorf("Claim calls %v, want %v", got, wantClaims)
		}
		if got := store.calls(); !slices.Equal(got, []string{group}) {
			t.Errorf("Claim called for groups %v, want [%s]", got, group)
		}
		checkCommittedEquals(t, b, group, topic, hw)
	})
}

// TestOffsetStoreClaimOrder: A consumes alone, B joins, records are
// produced, B leaves, records are produced again. Each member's store
// is called once per assignment, with exactly the partitions whose
// graphs that assignment then built (under eager assignment every
// partition of the new assignment, under cooperative and KIP-848 only
// those added), and before the first record of each of those graphs.
// The store names no offset: every ownership starts at the group's
// committed offset.
func TestOffsetStoreClaimOrder(t *testing.T) {
	b := kafkatest.NewBroker(t)
	forEachClient(t, func(t *testing.T, c storeClient) {
		const parts, n = 4, 50
		topic, group := c.topic(t, b, "osorder", parts, n)
		l := &storeLog{}
		es := &epochs{b: b, group: group, topic: topic}
		member := func(name string) (*consumer, *groupObserver) {
			obs := newGroupObserver()
			build := loggingBuilder(l, name, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				e := es.begin(name, p.Partition)
				return stages.Each(in, func(_ context.Context, r sluice.Record) error {
					e.record(r.Offset)
					return nil
				})
			})
			store := &recordingStore{member: name, log: l}
			return startConsumer(t, name, c.newSource(t, b, group, topic, store), build, pipeline.WithHooks(obs)), obs
		}
		a, aObs := member("A")
		b.WaitCommitted(t, group, topic, b.HighWatermarks(t, topic))
		bm, bObs := member("B")
		waitFor(t, "A and B sharing the partitions", func() bool {
			return aObs.owns() == 2 && bObs.owns() == 2
		}, a, bm)
		c.checkGroupType(t, b, group)
		b.Fill(t, topic, n, 8)
		b.WaitCommitted(t, group, topic, b.HighWatermarks(t, topic))
		bm.stop(t)
		waitFor(t, "A owning every partition again", func() bool { return aObs.owns() == parts }, a)
		b.Fill(t, topic, n, 8)
		b.WaitCommitted(t, group, topic, b.HighWatermarks(t, topic))
		a.stop(t)

		checkClaimOrder(t, l, "A")
		checkClaimOrder(t, l, "B")
		es.check(t)
		all := tpsOf(topic, 0, 1, 2, 3)
		claimsA, claimsB := l.claims("A"), l.claims("B")
		if len(claimsB) != 1 || len(claimsB[0]) != 2 {
			t.Fatalf("B's Claim calls %v, want one, of its 2 partitions", claimsB)
		}
		rest := slices.DeleteFunc(slices.Clone(all), func(tp sluice.TopicPartition) bool { return slices.Contains(claimsB[0], tp) })
		// Eager: B's join revokes all of A's partitions and gives A
		// back the others; cooperative: A keeps them, nothing is new.
		wantA := [][]sluice.TopicPartition{all, claimsB[0]}
		if c.protocol == "range" {
			wantA = [][]sluice.TopicPartition{all, rest, all}
		}
		if !slices.EqualFunc(claimsA, wantA, slices.Equal) {
			t.Errorf("A's Claim calls %v, want %v", claimsA, wantA)
		}
		t.Logf("claims: A %v, B %v", claimsA, claimsB)
	})
}

func tpsOf(topic string, parts ...int32) []sluice.TopicPartition {
	out := make([]sluice.TopicPartition, len(parts))
	for i, p := range parts {
		out[i] = sluice.TopicPartition{Topic: topic, Partition: p}
	}
	return out
}

// TestOffsetStoreExactlyOnceAcrossRebalance: two members of a group,
// each with a txsink.Writer in exactly-once mode over one MemStore, as
// two processes writing to one database. Records are produced the whole
// time; A consumes alone, B joins mid-stream (the rebalance moves half
// the partitions to B, fencing A's claim on them), production stops.
// The store holds every value exactly once, no gap, no duplicate; its
// positions and the group's commits end at the log end.
func TestOffsetStoreExactlyOnceAcrossRebalance(t *testing.T) {
	b := kafkatest.NewBroker(t)
	forEachClient(t, func(t *testing.T, c storeClient) {
		const parts, round = 4, 25 // records produced per partition a round
		topic, group := c.topic(t, b, "oseos", parts, 0)
		mem := txsinktest.NewMemStore[string]()
		member := func(name string) (*consumer, *groupObserver) {
			w := memWriter(t, mem, name, 20)
			obs := newGroupObserver()
			return startConsumer(t, name, c.newSource(t, b, group, topic, w), writeValues(w), pipeline.WithHooks(obs)), obs
		}
		prod := startProducing(t, b, topic, parts, round)
		a, _ := member("A")
		waitFor(t, "A writing", func() bool { return len(mem.Rows()) >= 4*parts*round }, a)
		bm, bObs := member("B")
		waitFor(t, "B owning partitions", func() bool { return bObs.owns() > 0 }, a, bm)
		c.checkGroupType(t, b, group)
		at := len(mem.Rows())
		waitFor(t, "records written after B joined", func() bool { return len(mem.Rows()) >= at+4*parts*round }, a, bm)
		produced := prod.stop(t)
		hw := b.HighWatermarks(t, topic)
		waitFor(t, "every record written and committed", func() bool {
			return len(mem.Rows()) >= len(produced) && maps.Equal(b.Committed(t, group, topic), hw)
		}, a, bm)
		bm.stop(t)
		a.stop(t)

		checkWrittenOnce(t, mem, produced, group, topic, hw)
		checkCommittedEquals(t, b, group, topic, hw)
		t.Logf("%d values, %d transactions", len(produced), mem.Commits())
	})
}

// producing produces to a topic in the background (startProducing).
type producing struct {
	stopc chan struct{}
	done  chan struct{}
	vals  []string
	err   error
}

// startProducing produces rounds of n records to each of the parts
// partitions of topic, values "<partition>-<i>", until stop.
func startProducing(t *testing.T, b *kafkatest.Broker, topic string, parts int32, n int) *producing {
	pr := &producing{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(pr.done)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		next := make([]int, parts)
		for {
			select {
			case <-pr.stopc:
				return
			default:
			}
			var recs []sluice.Record
			var vals []string
			for range n {
				for p := range parts {
					v := fmt.Sprintf("%d-%d", p, next[p])
					next[p]++
					recs = append(recs, sluice.Record{Partition: p, Value: []byte(v)})
					vals = append(vals, v)
				}
			}
			if err := b.ProduceContext(ctx, topic, recs...); err != nil {
				pr.err = err
				return
			}
			pr.vals = append(pr.vals, vals...)
		}
	}()
	t.Cleanup(func() { _ = pr.stop(t) })
	return pr
}

// stop stops producing and returns every value produced; it fails t if
// a produce failed.
func (pr *producing) stop(t *testing.T) []string {
	t.Helper()
	select {
	case <-pr.stopc:
	default:
		close(pr.stopc)
	}
	<-pr.done
	if pr.err != nil {
		t.Fatalf("produce: %v", pr.err)
	}
	return pr.vals
}

// TestOffsetStoreRefusesTransactionalProducer: a source with an
// OffsetStore and a transactional producer bound to it: Run returns an
// error naming both before it joins the group; the store is not asked,
// no graph is built.
func TestOffsetStoreRefusesTransactionalProducer(t *testing.T) {
	b := kafkatest.NewBroker(t)
	for _, client := range []string{"librdkafka", "franz"} {
		t.Run(client, func(t *testing.T) {
			c := storeClient{client: client, protocol: "cooperative-sticky"}
			topic, group := c.topic(t, b, "ostxn", 1, 10)
			store := &recordingStore{member: "A", log: &storeLog{}}
			src := c.newSource(t, b, group, topic, store)
			switch s := src.(type) {
			case *source.Source:
				p, err := confluent.NewTransactionalProducer(s, confluent.TransactionalConfig{
					ProducerConfig: confluent.ProducerConfig{Brokers: b.Addrs()}, TransactionConfig: sink.TransactionConfig{TransactionalID: group + "-txn"}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = p.Close() })
			case *franz.Source:
				p, err := franz.NewTransactionalProducer(s, franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: group + "-txn"}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = p.Close() })
			}
			build, built := countingDiscard()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			err := pipeline.Run(ctx, src, build)
			if err == nil || !strings.Contains(err.Error(), "Config.OffsetStore") || !strings.Contains(err.Error(), "transactional producer") {
				t.Fatalf("Run = %v, want an error naming Config.OffsetStore and the transactional producer", err)
			}
			if n := len(store.calls()); n != 0 {
				t.Errorf("the store was asked %d times, want never", n)
			}
			if n := built.Load(); n != 0 {
				t.Errorf("%d graphs built, want none", n)
			}
			if g := b.Group(t, group); g.Type != "" {
				t.Errorf("group %s exists (%+v), want no join", group, g)
			}
		})
	}
}

// errStore is the error of a recordingStore whose claims fail.
var errStore = errors.New("store unreachable")

// TestOffsetStoreClaimErrorStopsRun: the store fails the claim of the
// first assignment. Run returns an error naming Config.OffsetStore, the
// group and the partitions, wrapping the store's; no graph was built,
// nothing was committed.
func TestOffsetStoreClaimErrorStopsRun(t *testing.T) {
	b := kafkatest.NewBroker(t)
	forEachClient(t, func(t *testing.T, c storeClient) {
		f := startClaimFailure(t, b, c, "oserr", 2, 0)
		claimed, err := waitClaimError(t, f.a, f.log, 1)
		wantNames(t, err, claimed, "Config.OffsetStore", fmt.Sprintf("%q", f.group))
		if n := f.built.Load(); n != 0 {
			t.Errorf("%d graphs built after the claim failed, want none", n)
		}
		if got := b.Committed(t, f.group, f.topic); len(got) != 0 {
			t.Errorf("group committed %v after the claim failed, want nothing", got)
		}
	})
}

// TestOffsetStoreClaimErrorOnLaterAssignment: A's store answers its first
// claim and fails the next. A consumes alone; B joins, then leaves: the
// rebalance that gives A partitions it did not own (B's join under eager
// assignment, B's leave under cooperative and KIP-848) makes A's claim
// fail, and A's Run returns an error naming those partitions, wrapping
// the store's, while B's Run ends cleanly.
func TestOffsetStoreClaimErrorOnLaterAssignment(t *testing.T) {
	b := kafkatest.NewBroker(t)
	forEachClient(t, func(t *testing.T, c storeClient) {
		f := startClaimFailure(t, b, c, "oserr2", 4, 1)
		b.WaitCommitted(t, f.group, f.topic, b.HighWatermarks(t, f.topic))
		bObs := newGroupObserver()
		discard, _ := countingDiscard()
		bm := startConsumer(t, "B", c.newSource(t, b, f.group, f.topic, &recordingStore{member: "B", log: f.log}), discard, pipeline.WithHooks(bObs))
		waitFor(t, "B owning partitions", func() bool { return bObs.owns() > 0 }, bm)
		bm.stop(t)
		claimed, err := waitClaimError(t, f.a, f.log, 2)
		wantNames(t, err, claimed)
	})
}

// claimFailure is member A consuming a topic of 10 records per partition
// through a recordingStore that answers its first okCalls claims and
// fails the later ones with errStore.
type claimFailure struct {
	topic, group string
	log          *storeLog     // the Claim calls of A (and of any member sharing it)
	built        *atomic.Int64 // graphs A built
	a            *consumer
}

// startClaimFailure creates the topic prefix (parts partitions) and
// starts A on it, its graphs discarding every record.
func startClaimFailure(t *testing.T, b *kafkatest.Broker, c storeClient, prefix string, parts int32, okCalls int) *claimFailure {
	t.Helper()
	f := &claimFailure{log: &storeLog{}}
	f.topic, f.group = c.topic(t, b, prefix, parts, 10)
	var build pipeline.Builder
	build, f.built = countingDiscard()
	store := &recordingStore{member: "A", log: f.log, err: errStore, okCalls: okCalls}
	f.a = startConsumer(t, "A", c.newSource(t, b, f.group, f.topic, store), build)
	return f
}

// waitClaimError waits until a's Run ends with an error wrapping
// errStore, after exactly n Claim calls of member A in l, and returns
// the partitions of the last call and the error.
func waitClaimError(t *testing.T, a *consumer, l *storeLog, n int) ([]sluice.TopicPartition, error) {
	t.Helper()
	err := a.Wait(t)
	if !errors.Is(err, errStore) {
		t.Fatalf("A's Run = %v, want an error wrapping the store's", err)
	}
	claims := l.claims("A")
	if len(claims) != n {
		t.Fatalf("A's Claim calls %v, want %d", claims, n)
	}
	return claims[n-1], err
}

// wantNames fails t unless err's text names each partition of tps, as
// topic[partition], and contains each of names.
func wantNames(t *testing.T, err error, tps []sluice.TopicPartition, names ...string) {
	t.Helper()
	for _, tp := range tps {
		names = append(names, fmt.Sprintf("%s[%d]", tp.Topic, tp.Partition))
	}
	for _, w := range names {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("A's Run = %q, want it to name %s", err, w)
		}
	}
}

// TestOffsetStoreExactlyOnceAfterLoss: member A writes the k records of
// every partition to the store (a txsink.Writer in exactly-once mode over
// a MemStore); its commits to the group are an hour apart, so the group
// has none. The coordinator then throws A out (kfake rejects its
// heartbeats and joins): A loses its partitions and commits nothing. More
// records are produced and B joins: its claim starts every partition at
// the store's k, not at the group's start (no commit: offset 0), and it
// writes the rest. The store holds every value once; its positions and
// the group's commits end at the log end. Throwing a member out takes
// kfake's fault injection.
func TestOffsetStoreExactlyOnceAfterLoss(t *testing.T) {
	// A KIP-848 member thrown out stays in the group until its session
	// expires (its leave is rejected too): 3s, not Kafka's 45s.
	b := kafkatest.NewKfake(t, kafkatest.WithBrokerConfig(map[string]string{"group.consumer.session.timeout.ms": "3000"}))
	forEachClient(t, func(t *testing.T, c storeClient) {
		const parts, n, k = 4, 60, 25
		topic, group := c.topic(t, b, "osloss", parts, 0)
		var produced []string
		produce := func(from, to int) {
			var recs []sluice.Record
			for i := from; i < to; i++ {
				for p := range int32(parts) {
					v := fmt.Sprintf("%d-%d", p, i)
					produced = append(produced, v)
					recs = append(recs, sluice.Record{Partition: p, Value: []byte(v)})
				}
			}
			b.Produce(t, topic, recs...)
		}
		produce(0, k)
		mem := txsinktest.NewMemStore[string]()
		wa := memWriter(t, mem, "A", 10)
		aObs := newGroupObserver()
		slow := c
		slow.commitEvery = time.Hour
		a := startConsumer(t, "A", slow.newSource(t, b, group, topic, wa), writeValues(wa), pipeline.WithHooks(aObs))
		waitFor(t, "A storing [0, k) of every partition", func() bool {
			for p := range int32(parts) {
				if pos, _ := mem.Position(group, sluice.TopicPartition{Topic: topic, Partition: p}); pos.Next != int64(k) {
					return false
				}
			}
			return true
		}, a)
		faults := b.Cluster().Fault(
			kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: group, Err: kerr.IllegalGeneration, Count: -1},
			kfake.Fault{Keys: []kmsg.Key{kmsg.JoinGroup}, Group: group, Err: kerr.CoordinatorLoadInProgress, Count: -1},
			kfake.Fault{Keys: []kmsg.Key{kmsg.ConsumerGroupHeartbeat}, Group: group, Err: kerr.FencedMemberEpoch, Count: -1},
		)
		waitFor(t, "A losing its partitions", func() bool { return aObs.lost.Load() >= parts && aObs.owns() == 0 }, a)
		a.stop(t)
		faults.Remove()
		if got := b.Committed(t, group, topic); len(got) != 0 {
			t.Fatalf("the group committed %v before B joined; the test needs the store ahead of the group", got)
		}
		produce(k, n)

		l := &storeLog{}
		wb := memWriter(t, mem, "B", 10)
		storeB := &recordingStore{member: "B", log: l, inner: wb}
		buildB := loggingBuilder(l, "B", writeValues(wb))
		bm := startConsumer(t, "B", c.newSource(t, b, group, topic, storeB), buildB)
		hw := b.HighWatermarks(t, topic)
		b.WaitCommitted(t, group, topic, hw)
		bm.stop(t)

		want := map[int32]int64{}
		for p := range int32(parts) {
			want[p] = int64(k)
		}
		if got := l.firsts("B"); !maps.Equal(got, want) {
			t.Errorf("B's first record by partition: %v, want the store's %d everywhere", got, k)
		}
		checkClaimOrder(t, l, "B")
		checkWrittenOnce(t, mem, produced, group, topic, hw)
	})
}

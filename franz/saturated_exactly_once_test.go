package franz

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// saturatedTxnSource returns a franz source of group on topic with a
// transactional producer bound to it (closed when the test ends) and the
// commit interval given.
func saturatedTxnSource(t *testing.T, b *kafkatest.Broker, group, topic, txnID string, interval time.Duration) (*Source, *Producer) {
	t.Helper()
	src := newTestSource(t, b, group, topic)
	src.cfg.CommitInterval = interval
	p, err := NewTransactionalProducer(src, TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: txnID}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return src, p
}

// inputNamed names the input record in the output's value: "partition@offset".
func inputNamed(r sluice.Record) (sluice.Message, error) {
	return sluice.Message{Key: r.Key, Value: fmt.Appendf(nil, "%d@%d", r.Partition, r.Offset)}, nil
}

// committedOutputs reads topic read_committed and counts each input record
// named by the outputs.
func committedOutputs(t *testing.T, b *kafkatest.Broker, topic string) map[int32]map[int64]int {
	t.Helper()
	out := map[int32]map[int64]int{}
	for _, r := range b.ReadCommitted(t, topic) {
		ps, os, ok := strings.Cut(string(r.Value), "@")
		if !ok {
			t.Fatalf("output %q names no input", r.Value)
		}
		p, _ := strconv.Atoi(ps)
		o, _ := strconv.ParseInt(os, 10, 64)
		if out[int32(p)] == nil {
			out[int32(p)] = map[int64]int{}
		}
		out[int32(p)][o]++
	}
	return out
}

// checkOutputsOnce asserts that the committed outputs name each of the
// first want[p] records of partition p exactly once, and nothing else.
func checkOutputsOnce(t *testing.T, got map[int32]map[int64]int, want map[int32]int64) {
	t.Helper()
	for p, n := range want {
		for o := range n {
			if c := got[p][o]; c != 1 {
				t.Errorf("partition %d offset %d: %d committed outputs, want 1", p, o, c)
			}
		}
		for o := range got[p] {
			if o >= n {
				t.Errorf("partition %d offset %d: committed output past the %d processed", p, o, n)
			}
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("partition %d: committed outputs %v, want none", p, got[p])
		}
	}
}

// TestExactlyOnceSaturatedShortInterval: exactly-once with a tiny
// in-flight budget (WithMaxInFlight(10)) that every poll fills, a commit
// due every 50ms (so one is nearly always waiting for its barrier while
// the runtime is saturated) and stages that take a little time. Every
// record must go through: the group's committed offsets reach the end
// of every partition, each record's output is committed exactly once,
// and Run stops with nil.
func TestExactlyOnceSaturatedShortInterval(t *testing.T) {
	const (
		topic, group = "advsat", "g-advsat"
		partitions   = 8
		perPart      = 300
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions), kafkatest.WithTopic("advsat-out", 1))
	produceInBatches(t, b, topic, partitions, perPart, 100)
	src, p := saturatedTxnSource(t, b, group, topic, "advsat-1", 50*time.Millisecond)
	pc := &pauseCounter{paused: map[sluice.TopicPartition]bool{}}
	run := testkit.Start(t, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		slow := stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
			time.Sleep(200 * time.Microsecond) // work, not synchronisation
			return r, nil
		})
		return sink.Produce(slow, p, "advsat-out", inputNamed)
	}, pipeline.WithMaxInFlight(10), pipeline.WithHooks(pc))
	want := map[int32]int64{}
	for i := range int32(partitions) {
		want[i] = perPart
	}
	b.WaitCommitted(t, group, topic, want)
	if err := run.Stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got := b.Committed(t, group, topic); !maps.Equal(got, want) {
		t.Fatalf("committed %v, want %v", got, want)
	}
	checkOutputsOnce(t, committedOutputs(t, b, "advsat-out"), want)
}

// gatedProduce is a builder whose graphs hold each record at g (until
// it is released, or their context ends), record it in seen and produce
// its output to out with p.
func gatedProduce(g *gate, seen *offsetsSeen, p *Producer, out string) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		held := stages.Map(in, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
			if g != nil {
				if err := g.pass(ctx); err != nil {
					return r, err
				}
			}
			seen.add(r)
			return r, nil
		})
		return sink.Produce(held, p, out, inputNamed)
	}
}

// TestExactlyOnceSaturatedShutdown: exactly-once, the graphs hold every
// record they got (WithMaxInFlight(8): saturated) while commits fall due
// every 50ms, so a commit waits for its barrier when Run is stopped. The
// graphs are released as the shutdown drains: Run returns nil within a
// minute, the group's committed offsets are exactly what was processed of
// each partition from its start, and the committed outputs name exactly
// those records, once each.
func TestExactlyOnceSaturatedShutdown(t *testing.T) {
	const (
		topic, group = "advsatstop", "g-advsatstop"
		partitions   = 4
		perPart      = 200
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions), kafkatest.WithTopic("advsatstop-out", 1))
	producePartitionByPartition(t, b, topic, partitions, perPart, 100)
	src, p := saturatedTxnSource(t, b, group, topic, "advsatstop-1", 50*time.Millisecond)
	seen := &offsetsSeen{}
	g := newGate()
	pc := &pauseCounter{paused: map[sluice.TopicPartition]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, src, gatedProduce(g, seen, p, "advsatstop-out"), pipeline.WithMaxInFlight(8), pipeline.WithHooks(pc))
	}()
	select {
	case <-g.entered:
	case err := <-done:
		t.Fatalf("Run returned %v", err)
	case <-time.After(time.Minute):
		t.Fatal("nothing processed in a minute")
	}
	// Several commit intervals and polls pass while saturated.
	after := pc.polls.Load() + 20
	deadline := time.Now().Add(time.Minute)
	for pc.polls.Load() < after {
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
	close(g.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of its context's end")
	}
	want := map[int32]int64{}
	for part, offs := range seen.byPartition() {
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("partition %d processed offsets %v, want 0, 1, ... in order", part, offs)
			}
		}
		want[part] = int64(len(offs))
	}
	if committed := b.Committed(t, group, topic); !maps.Equal(committed, want) {
		t.Fatalf("committed %v, want what was processed: %v", committed, want)
	}
	checkOutputsOnce(t, committedOutputs(t, b, "advsatstop-out"), want)
}

// TestExactlyOnceSaturatedRebalance: exactly-once member A's graphs hold
// every record they got (WithMaxInFlight(8): saturated) with commits due
// every 50ms; member B (exactly-once too) joins and must get its share of
// the partitions while A is saturated, A's revoke aborting its
// transaction at the drain timeout. Once A is released, every record's
// output is committed exactly once and the group's committed offsets are
// the partitions' ends; both Runs stop with nil.
func TestExactlyOnceSaturatedRebalance(t *testing.T) {
	const (
		topic, group = "advsatreb", "g-advsatreb"
		partitions   = 4
		perPart      = 100
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions), kafkatest.WithTopic("advsatreb-out", 1))
	producePartitionByPartition(t, b, topic, partitions, perPart, 100)
	srcA, pA := saturatedTxnSource(t, b, group, topic, "advsatreb-a", 50*time.Millisecond)
	srcB, pB := saturatedTxnSource(t, b, group, topic, "advsatreb-b", 50*time.Millisecond)
	seenA, seenB := &offsetsSeen{}, &offsetsSeen{}
	g := newGate()
	runA := testkit.Start(t, srcA, gatedProduce(g, seenA, pA, "advsatreb-out"),
		pipeline.WithMaxInFlight(8), pipeline.WithDrainTimeout(2*time.Second))
	select {
	case <-g.entered:
	case <-runA.Done():
		t.Fatalf("Run of A returned %v", runA.Err())
	case <-time.After(time.Minute):
		t.Fatal("A processed nothing in a minute")
	}
	runB := testkit.Start(t, srcB, gatedProduce(nil, seenB, pB, "advsatreb-out"))
	runB.WaitUntil(t, "B consumed two partitions to the end while A is saturated", func() bool {
		n := 0
		for _, offs := range seenB.byPartition() {
			if len(offs) >= perPart {
				n++
			}
		}
		return n >= partitions/2
	})
	close(g.release)
	want := map[int32]int64{}
	for i := range int32(partitions) {
		want[i] = perPart
	}
	b.WaitCommitted(t, group, topic, want)
	if err := runB.Stop(t); err != nil {
		t.Fatalf("Run of B = %v", err)
	}
	if err := runA.Stop(t); err != nil {
		t.Fatalf("Run of A = %v", err)
	}
	if got := b.Committed(t, group, topic); !maps.Equal(got, want) {
		t.Fatalf("committed %v, want %v", got, want)
	}
	checkOutputsOnce(t, committedOutputs(t, b, "advsatreb-out"), want)
}

// TestExactlyOnceSaturatedChurn: exactly-once members that keep a tiny
// in-flight budget (WithMaxInFlight(10)) saturated by a slow stage, with
// commits due every 20ms, over 12 partitions: member B joins once A has
// processed a third of the topic, and stops (gracefully: its revoke
// commits) once two thirds are; then member C joins. Rebalances thus
// happen while commits wait for their barriers and the poll loops take
// nothing from kgo. The group's committed offsets reach the partitions'
// ends, every record's output is committed exactly once, and every Run
// stops with nil.
func TestExactlyOnceSaturatedChurn(t *testing.T) {
	const (
		topic, group = "advchurn", "g-advchurn"
		partitions   = 12
		perPart      = 200
		total        = partitions * perPart
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions), kafkatest.WithTopic("advchurn-out", 1))
	produceInBatches(t, b, topic, partitions, perPart, 100)
	seen := &offsetsSeen{}
	count := func() int {
		n := 0
		for _, offs := range seen.byPartition() {
			n += len(offs)
		}
		return n
	}
	start := func(name string) *testkit.Running {
		src, p := saturatedTxnSource(t, b, group, topic, "advchurn-"+name, 20*time.Millisecond)
		return testkit.Start(t, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			slow := stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
				time.Sleep(300 * time.Microsecond) // work, not synchronisation
				seen.add(r)
				return r, nil
			})
			return sink.Produce(slow, p, "advchurn-out", inputNamed)
		}, pipeline.WithMaxInFlight(10))
	}
	runA := start("a")
	runA.WaitUntil(t, "a third processed", func() bool { return count() >= total/3 })
	runB := start("b")
	runA.WaitUntil(t, "two thirds processed", func() bool { return count() >= 2*total/3 })
	if err := runB.Stop(t); err != nil {
		t.Fatalf("Run of B = %v", err)
	}
	runC := start("c")
	want := map[int32]int64{}
	for i := range int32(partitions) {
		want[i] = perPart
	}
	b.WaitCommitted(t, group, topic, want)
	if err := runC.Stop(t); err != nil {
		t.Fatalf("Run of C = %v", err)
	}
	if err := runA.Stop(t); err != nil {
		t.Fatalf("Run of A = %v", err)
	}
	if got := b.Committed(t, group, topic); !maps.Equal(got, want) {
		t.Fatalf("committed %v, want %v", got, want)
	}
	checkOutputsOnce(t, committedOutputs(t, b, "advchurn-out"), want)
}

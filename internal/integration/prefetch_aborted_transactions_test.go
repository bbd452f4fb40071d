package integration

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// txnStep is one step of a partition's log: a transaction of records of
// the given value sizes, committed or aborted, or records written outside
// any transaction.
type txnStep struct {
	sizes  []int
	txn    bool
	commit bool
}

// repeat returns n copies of size.
func repeat(n, size int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = size
	}
	return s
}

// produceTxnSteps writes steps to every partition of topic, each step to
// all partitions at once, and returns the offsets a read_committed reader
// sees (those of committed transactions and of records outside any), with
// their values, by partition.
func produceTxnSteps(t testing.TB, b *kafkatest.Broker, topic string, parts int32, steps []txnStep) map[int32]map[int64][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	txn := largeProducer(t, b, kgo.TransactionalID(topic+"-txn"), kgo.TransactionTimeout(30*time.Second))
	plain := largeProducer(t, b)
	visible := make(map[int32]map[int64][]byte, parts)
	for p := range parts {
		visible[p] = map[int64][]byte{}
	}
	var mu sync.Mutex
	idx := 0
	for _, s := range steps {
		cl := plain
		if s.txn {
			cl = txn
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
		}
		var recs []*kgo.Record
		for _, n := range s.sizes {
			for p := range parts {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "%d-%d", p, idx), Value: largeValue(p, idx, n)})
			}
			idx++
		}
		var kept []*kgo.Record
		var wg sync.WaitGroup
		var perr error
		for _, r := range recs {
			wg.Add(1)
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil && perr == nil {
					perr = err
				}
				kept = append(kept, r)
			})
		}
		wg.Wait()
		if perr != nil {
			t.Fatalf("produce: %v", perr)
		}
		if s.txn {
			if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(s.commit)); err != nil {
				t.Fatalf("end transaction (commit %v): %v", s.commit, err)
			}
		}
		if !s.txn || s.commit {
			for _, r := range kept {
				visible[r.Partition][r.Offset] = r.Value
			}
		}
	}
	return visible
}

// TestPrefetchAbortedTransactionsLargerThanTheQueue: the log holds aborted
// transactions far larger than librdkafka's prefetch queue (1 MiB at the
// default budget), of records small and larger than the queue, between
// committed ones and records outside transactions. The source reads
// committed (librdkafka's default): every fetch of an aborted stretch
// returns nothing to deliver, and the consumer must still move past it.
// Every committed record is processed once with its value, no aborted one
// is, and the group commits the high watermarks (the log ends with a
// record outside any transaction, so the last commit is exact).
func TestPrefetchAbortedTransactionsLargerThanTheQueue(t *testing.T) {
	t.Parallel()
	const parts = 3
	b := kafkatest.NewBroker(t)
	skipOnKfakeFullFetch(t, b)
	const topic, group = "prefetch-aborted", "prefetch-aborted-g"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.CreateTopicContext(ctx, topic, parts, map[string]string{"max.message.bytes": fmt.Sprint(largeTopicMaxBytes)}); err != nil {
		t.Fatal(err)
	}
	const small, quarter, mid, big = 100, 256 << 10, 3 << 19, 3 << 20
	steps := []txnStep{
		{sizes: repeat(50, small), txn: true, commit: true},
		{sizes: repeat(24, quarter), txn: true}, // 6 MiB aborted, in batches under the queue
		{sizes: append(repeat(20, small), mid), txn: true, commit: true},
		{sizes: append([]int{big, big}, repeat(300, small)...), txn: true}, // aborted, larger than the queue
		{sizes: repeat(10, small)},
		{sizes: []int{mid}, txn: true},
		{sizes: repeat(5, small), txn: true, commit: true},
		{sizes: repeat(12, quarter), txn: true},
		{sizes: []int{small}},
	}
	consumeCommitted(t, b, topic, group, parts, produceTxnSteps(t, b, topic, parts, steps))
}

// consumeCommitted consumes topic with the source in group at the default
// budget, and checks that it processed exactly the records of visible
// (by partition and offset, with their values) once each, and that the
// group committed the offset after each partition's last one.
func consumeCommitted(t *testing.T, b *kafkatest.Broker, topic, group string, parts int32, visible map[int32]map[int64][]byte) {
	t.Helper()
	hw := b.HighWatermarks(t, topic)
	o := newOffsets(hw)
	var mu sync.Mutex
	var bad []string
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			want, ok := visible[r.Partition][r.Offset]
			if !ok || string(want) != string(r.Value) {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("partition %d offset %d (%d bytes): visible %v, or its value differs", r.Partition, r.Offset, len(r.Value), ok))
				mu.Unlock()
			}
			o.add(r.Partition, r.Offset)
			return nil
		})
	}
	src := newSource(t, b, group, topic, nil)
	began := time.Now()
	c := startConsumer(t, group, src, build)
	// The last transaction's marker may follow the last record (Apache
	// Kafka writes markers after EndTxn returns): the group commits the
	// offset after the last record it processed.
	want := make(map[int32]int64, parts)
	for p, offs := range visible {
		for off := range offs {
			want[p] = max(want[p], off+1)
		}
	}
	waitFor(t, fmt.Sprintf("commits at %v (high watermarks %v)", want, hw), func() bool {
		got, err := b.CommittedContext(t.Context(), group, topic)
		return err == nil && maps.Equal(got, want)
	}, c)
	t.Logf("%v: %d records processed, all committed after %v", b.Kind(), o.total.Load(), time.Since(began))
	c.stop(t)
	for _, s := range bad {
		t.Error(s)
	}
	for p, offs := range visible {
		for off := range offs {
			if n := o.n[p][off].Load(); n != 1 {
				t.Errorf("partition %d offset %d (committed) processed %d times, want once", p, off, n)
			}
		}
	}
	var n int
	for _, offs := range visible {
		n += len(offs)
	}
	if got := o.total.Load(); got != int64(n) {
		t.Errorf("%d processings, want the %d committed records once each", got, n)
	}
}

// TestPrefetchAbortedTransactionBeforeAFullFetch: one partition holds a
// small aborted transaction, then records outside any transaction that
// fill more than a fetch response (fetch.max.bytes, which librdkafka
// lowers to the 1 MiB prefetch queue of the default budget). The response
// that carries the aborted batch stops at the large batch after it; the
// broker must still list the aborted transaction in it, or the
// read_committed consumer delivers the aborted records.
func TestPrefetchAbortedTransactionBeforeAFullFetch(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	skipOnKfakeFullFetch(t, b)
	const topic, group = "prefetch-aborted-full", "prefetch-aborted-full-g"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.CreateTopicContext(ctx, topic, 1, map[string]string{"max.message.bytes": fmt.Sprint(largeTopicMaxBytes)}); err != nil {
		t.Fatal(err)
	}
	steps := []txnStep{
		{sizes: repeat(20, 100), txn: true}, // aborted: offsets 0-19, its marker at 20
		{sizes: repeat(3, 512<<10)},         // 1.5 MiB outside transactions, one batch
		{sizes: repeat(20, 100), txn: true}, // aborted again
		{sizes: repeat(10, 100)},            // the end, outside transactions
	}
	consumeCommitted(t, b, topic, group, 1, produceTxnSteps(t, b, topic, 1, steps))
}

// TestFullFetchResponseListsItsAbortedTransactions: the broker's side of
// TestPrefetchAbortedTransactionBeforeAFullFetch. A read_committed Fetch
// of 1 MiB (the fetch.max.bytes librdkafka uses at the default budget)
// that returns an aborted transaction's batch and stops at a batch that
// does not fit must list that transaction in AbortedTransactions: it is
// all a consumer has to tell aborted records from committed ones.
func TestFullFetchResponseListsItsAbortedTransactions(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	const topic = "full-fetch-aborted"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.CreateTopicContext(ctx, topic, 1, map[string]string{"max.message.bytes": fmt.Sprint(largeTopicMaxBytes)}); err != nil {
		t.Fatal(err)
	}
	produceTxnSteps(t, b, topic, 1, []txnStep{
		{sizes: repeat(20, 100), txn: true}, // aborted: offsets 0-19, then its marker
		{sizes: repeat(3, 512<<10)},         // 1.5 MiB outside transactions
	})
	// Fetch v12 names its topics (v13 and later need the topic's ID).
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Kafka writes the abort marker after EndTxn returns: fetch until the
	// last stable offset reached the high watermark (every record is
	// decided) and the response holds a batch of the aborted transaction.
	var p kmsg.FetchResponseTopicPartition
	var batches []offsetRange
	var fetchErr error
	waitFor(t, "a read_committed fetch past the aborted transaction", func() bool {
		p, batches, fetchErr = fetchCommitted(ctx, cl, topic)
		return fetchErr != nil || p.ErrorCode != 0 ||
			(p.LastStableOffset >= p.HighWatermark && p.HighWatermark > 0 && len(batches) > 0)
	})
	if fetchErr != nil {
		t.Fatal(fetchErr)
	}
	if p.ErrorCode != 0 {
		t.Fatalf("fetch: error code %d", p.ErrorCode)
	}
	if batches[0].first != 0 || batches[0].last > 19 {
		t.Fatalf("fetch returned batches %v, want one of the aborted transaction (offsets 0-19) first", batches)
	}
	if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].FirstOffset != 0 {
		var ab []int64
		for _, a := range p.AbortedTransactions {
			ab = append(ab, a.FirstOffset)
		}
		if b.Kind() == kafkatest.Kfake && len(ab) == 0 {
			t.Skipf("kfake: a fetch of 1 MiB returned batches %v and listed no aborted transaction: the difference from Kafka that docs/reliability.md names", batches)
		}
		t.Errorf("%v: fetch of 1 MiB returned batches %v and aborted transactions starting at %v, want one at 0", b.Kind(), batches, ab)
	}
}

// offsetRange is the first and last offset of a record batch.
type offsetRange struct{ first, last int64 }

func (r offsetRange) String() string { return fmt.Sprintf("%d-%d", r.first, r.last) }

// fetchCommitted sends one read_committed Fetch of 1 MiB (the
// fetch.max.bytes librdkafka uses at the default budget) for partition 0
// of topic from offset 0, and returns its partition and the offsets of
// the whole batches in it.
func fetchCommitted(ctx context.Context, cl *kgo.Client, topic string) (kmsg.FetchResponseTopicPartition, []offsetRange, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.IsolationLevel = -1, 100, 1<<20, 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.FetchResponseTopicPartition{}, nil, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kmsg.FetchResponseTopicPartition{}, nil, fmt.Errorf("fetch response of %d topics, want 1 of 1 partition", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	var batches []offsetRange
	for raw := p.RecordBatches; len(raw) > 0; {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			break // a partial batch at the end
		}
		raw = raw[12+int(rb.Length):]
		batches = append(batches, offsetRange{rb.FirstOffset, rb.FirstOffset + int64(rb.LastOffsetDelta)})
	}
	return p, batches, nil
}

// skipOnKfakeFullFetch skips t on kfake, whose Fetch leaves out the
// aborted transactions of the partition at which a response stops for
// being full (its handler leaves the partition loop before it lists
// them), so that a read_committed consumer gets those aborted records.
// docs/reliability.md ("kfake and Apache Kafka differences") has it;
// TestFullFetchResponseListsItsAbortedTransactions checks it on the wire.
func skipOnKfakeFullFetch(t *testing.T, b *kafkatest.Broker) {
	t.Helper()
	if b.Kind() == kafkatest.Kfake {
		t.Skip("kfake lists no aborted transactions for the partition a full Fetch response stops at; run with " +
			kafkatest.EnvBroker + "=apache")
	}
}

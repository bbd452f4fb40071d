package integration

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// storeClient is a Kafka source and a rebalance protocol the
// Config.OffsetStore tests run on: client "librdkafka" (package source)
// or "franz"; protocol "range" (eager), "cooperative-sticky" or
// "consumer" (KIP-848, the broker assigns; kfake and Apache Kafka serve
// it to both clients).
type storeClient struct {
	client, protocol string
	// commitEvery is the sources' Config.CommitInterval (0: 50ms).
	commitEvery time.Duration
}

func (c storeClient) String() string { return c.client + "/" + c.protocol }

// storeClients is every client with every protocol.
func storeClients() []storeClient {
	var out []storeClient
	for _, client := range []string{"librdkafka", "franz"} {
		for _, protocol := range []string{"range", "cooperative-sticky", "consumer"} {
			out = append(out, storeClient{client: client, protocol: protocol})
		}
	}
	return out
}

// forEachClient runs test as a parallel subtest for each of
// storeClients, named for the client.
func forEachClient(t *testing.T, test func(t *testing.T, c storeClient)) {
	for _, c := range storeClients() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			test(t, c)
		})
	}
}

// names returns a topic and a group unique to the subtest t on a broker
// its parent's subtests share.
func (c storeClient) names(t *testing.T, prefix string) (topic, group string) {
	n := prefix + "-" + strings.NewReplacer("/", "-", " ", "_").Replace(c.String())
	return n, n + "-g"
}

// topic creates a topic of parts partitions unique to the subtest t (names)
// on b, filled with perPartition records of each partition, and returns
// it with the group of the subtest.
func (c storeClient) topic(t *testing.T, b *kafkatest.Broker, prefix string, parts int32, perPartition int) (topic, group string) {
	t.Helper()
	topic, group = c.names(t, prefix)
	b.CreateTopic(t, topic, parts)
	if perPartition > 0 {
		b.Fill(t, topic, perPartition, 8)
	}
	return topic, group
}

// newSource returns a source of group/topic on b with store as its
// Config.OffsetStore and test timings (fast heartbeats and commits).
func (c storeClient) newSource(t testing.TB, b *kafkatest.Broker, group, topic string, store sluice.OffsetStore) sluice.Source {
	t.Helper()
	every := c.commitEvery
	if every == 0 {
		every = 50 * time.Millisecond
	}
	switch c.client {
	case "librdkafka":
		ov := map[string]any{"group.protocol": "consumer"}
		if c.protocol != "consumer" {
			ov = map[string]any{
				"partition.assignment.strategy": c.protocol,
				"heartbeat.interval.ms":         100,
				"session.timeout.ms":            6000,
			}
		}
		return sourceOf(t, b, group, topic, source.Config{GroupConfig: sluice.GroupConfig{CommitInterval: every, OffsetStore: store}, Overrides: ov})
	case "franz":
		opts := []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(6 * time.Second)}
		switch c.protocol {
		case "range":
			opts = append(opts, kgo.Balancers(kgo.RangeBalancer()))
		case "cooperative-sticky":
			opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()))
		case "consumer":
			opts = append(opts, franz848()...)
		}
		return franzSourceOf(t, b, group, topic, franz.Config{GroupConfig: sluice.GroupConfig{CommitInterval: every, OffsetStore: store}, Opts: opts})
	}
	t.Fatalf("unknown client %q", c.client)
	return nil
}

// checkGroupType fails t unless group is a KIP-848 group when c's
// protocol is "consumer" (kgo falls back to the classic protocol
// silently); it is called while a member of the group runs.
func (c storeClient) checkGroupType(t *testing.T, b *kafkatest.Broker, group string) {
	t.Helper()
	if c.protocol != "consumer" {
		return
	}
	if typ := groupType(t, b, group); typ != "consumer" {
		t.Errorf("group %s of type %q, want consumer (KIP-848)", group, typ)
	}
}

// commitGroup commits offsets for topic to group, which has no member,
// as an admin tool does.
func commitGroup(t *testing.T, b *kafkatest.Broker, group, topic string, offsets map[int32]int64) {
	t.Helper()
	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	var os kadm.Offsets
	for p, at := range offsets {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := adm.CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %v to group %s: %v", offsets, group, err)
	}
	if got := b.Committed(t, group, topic); !maps.Equal(got, offsets) {
		t.Fatalf("group %s committed %v after committing %v", group, got, offsets)
	}
}

// storeLog is the order of what the offset-store tests observe, across
// the members of a group: Claim calls, graphs built and the first record
// each graph received.
type storeLog struct {
	mu  sync.Mutex
	evs []storeEvent
}

type storeEventKind int

const (
	evClaim storeEventKind = iota // Claim(tps)
	evBuilt                       // graph n of tp built
	evFirst                       // graph n of tp received its first record, at offset
)

type storeEvent struct {
	member string
	kind   storeEventKind
	tps    []sluice.TopicPartition // evClaim
	tp     sluice.TopicPartition   // evBuilt, evFirst
	n      int                     // evBuilt, evFirst: the member's graph of tp, from 1
	offset int64                   // evFirst
}

// add records e.
func (l *storeLog) add(e storeEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, e)
}

// of returns member's events so far, in order.
func (l *storeLog) of(member string) []storeEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []storeEvent
	for _, e := range l.evs {
		if e.member == member {
			out = append(out, e)
		}
	}
	return out
}

// claims returns the partitions of member's Claim calls, in order.
func (l *storeLog) claims(member string) [][]sluice.TopicPartition {
	var out [][]sluice.TopicPartition
	for _, e := range l.of(member) {
		if e.kind == evClaim {
			out = append(out, e.tps)
		}
	}
	return out
}

// firsts returns the offset of the first record of member's first graph
// of each partition.
func (l *storeLog) firsts(member string) map[int32]int64 {
	out := map[int32]int64{}
	for _, e := range l.of(member) {
		if e.kind == evFirst && e.n == 1 {
			out[e.tp.Partition] = e.offset
		}
	}
	return out
}

// recordingStore is a sluice.OffsetStore that logs every Claim, then
// fails it with err (once okCalls calls succeeded), or asks inner, or
// returns start (restricted to the partitions claimed).
type recordingStore struct {
	member  string
	log     *storeLog
	err     error
	okCalls int
	inner   sluice.OffsetStore
	start   map[int32]int64

	mu     sync.Mutex
	groups []string // the group of each call
}

func (s *recordingStore) Claim(ctx context.Context, group string, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	sorted := slices.Clone(tps)
	slices.SortFunc(sorted, func(a, b sluice.TopicPartition) int { return int(a.Partition - b.Partition) })
	s.log.add(storeEvent{member: s.member, kind: evClaim, tps: sorted})
	s.mu.Lock()
	s.groups = append(s.groups, group)
	n := len(s.groups)
	s.mu.Unlock()
	if s.err != nil && n > s.okCalls {
		return nil, s.err
	}
	if s.inner != nil {
		return s.inner.Claim(ctx, group, tps)
	}
	out := map[sluice.TopicPartition]int64{}
	for _, tp := range tps {
		if off, ok := s.start[tp.Partition]; ok {
			out[tp] = off
		}
	}
	return out, nil
}

// calls returns the groups Claim was called with, one per call.
func (s *recordingStore) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.groups)
}

// loggingBuilder wraps the graphs of build: it logs each graph built and its first record to l as
// member's.
func loggingBuilder(l *storeLog, member string, build pipeline.Builder) pipeline.Builder {
	var mu sync.Mutex
	graphs := map[sluice.TopicPartition]int{}
	return func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		tp := sluice.TopicPartition{Topic: p.Topic, Partition: p.Partition}
		mu.Lock()
		graphs[tp]++
		n := graphs[tp]
		mu.Unlock()
		l.add(storeEvent{member: member, kind: evBuilt, tp: tp, n: n})
		first := true
		in = stages.Filter(in, func(r sluice.Record) bool {
			if first {
				first = false
				l.add(storeEvent{member: member, kind: evFirst, tp: tp, n: n, offset: r.Offset})
			}
			return true
		})
		return build(p, in)
	}
}

// checkClaimOrder checks l against the contract of Claim for member:
// every call names distinct partitions, at least one; the partitions of
// each call are exactly the graphs built after it and before the
// member's next call (one call per assignment, with exactly the newly
// assigned partitions); and the first record of the member's n-th graph
// of a partition came after its n-th claim of that partition.
func checkClaimOrder(t *testing.T, l *storeLog, member string) {
	t.Helper()
	claimed := map[sluice.TopicPartition]int{} // claims of tp so far
	var current []sluice.TopicPartition        // the last call's partitions
	var built []sluice.TopicPartition          // graphs built since
	flush := func() {
		got := slices.Clone(built)
		slices.SortFunc(got, func(a, b sluice.TopicPartition) int { return int(a.Partition - b.Partition) })
		if current != nil && !slices.Equal(got, current) {
			t.Errorf("%s: Claim(%v) was followed by graphs of %v, want exactly the partitions claimed", member, current, got)
		}
	}
	for _, e := range l.of(member) {
		switch e.kind {
		case evClaim:
			flush()
			if len(e.tps) == 0 || len(slices.Compact(slices.Clone(e.tps))) != len(e.tps) {
				t.Errorf("%s: Claim(%v): want distinct partitions, at least one", member, e.tps)
			}
			for _, tp := range e.tps {
				claimed[tp]++
			}
			current, built = e.tps, nil
		case evBuilt:
			if current == nil {
				t.Errorf("%s: graph of %v built before any Claim", member, e.tp)
			}
			built = append(built, e.tp)
		case evFirst:
			if claimed[e.tp] != e.n {
				t.Errorf("%s: first record (offset %d) of graph %d of %v came after %d claims of it, want %d",
					member, e.offset, e.n, e.tp, claimed[e.tp], e.n)
			}
		}
	}
	flush()
}

// discardLogger is the Writer's logger: testLogger's, else nothing.
func discardLogger(t testing.TB) *slog.Logger {
	if l := kafkatest.Logger(t); l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// countingDiscard is a Builder whose graphs discard their records, and
// the count of the graphs it built.
func countingDiscard() (pipeline.Builder, *atomic.Int64) {
	built := new(atomic.Int64)
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		built.Add(1)
		return stages.Discard(in)
	}, built
}

// memWriter is member name's exactly-once txsink.Writer over mem, in
// batches of batch values.
func memWriter(t testing.TB, mem *txsinktest.MemStore[string], name string, batch int) *txsink.Writer[string] {
	return txsink.New(mem, txsink.Options[string]{Name: "mem " + name, ExactlyOnce: true, BatchSize: batch,
		Linger: 5 * time.Millisecond, Logger: discardLogger(t)})
}

// writeValues is a Builder whose graphs write each record's value with w.
func writeValues(w *txsink.Writer[string]) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return w.Write(stages.Map(in, func(_ context.Context, r sluice.Record) (string, error) {
			return string(r.Value), nil
		}))
	}
}

// checkWrittenOnce fails t unless mem holds every value of produced
// once and nothing else, and its position of each partition p of group
// and topic is the end of its log, hw[p]: Next hw[p], Written hw[p]-1.
func checkWrittenOnce(t *testing.T, mem *txsinktest.MemStore[string], produced []string, group, topic string, hw map[int32]int64) {
	t.Helper()
	rows := mem.Rows()
	count := map[string]int{}
	for _, v := range rows {
		count[v]++
	}
	for _, v := range produced {
		if count[v] != 1 {
			t.Errorf("value %q written %d times, want once", v, count[v])
		}
		delete(count, v)
	}
	if len(count) > 0 {
		t.Errorf("%d values written that were not produced: %v", len(count), count)
	}
	if len(rows) != len(produced) {
		t.Errorf("%d rows written, %d values produced", len(rows), len(produced))
	}
	for p, h := range hw {
		pos, ok := mem.Position(group, sluice.TopicPartition{Topic: topic, Partition: p})
		if !ok || pos.Next != h || pos.Written != h-1 {
			t.Errorf("partition %d: stored position %+v (found %v), want Next %d, Written %d", p, pos, ok, h, h-1)
		}
	}
}

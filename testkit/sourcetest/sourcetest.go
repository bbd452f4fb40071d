// Package sourcetest checks that a [sluice.Source] honours the contract
// the runtime relies on, in the spirit of testing/slogtest. Two tools:
//
//   - [Check] wraps a source so that its Group is a [CheckingGroup], which
//     checks every call the source makes against the clauses of
//     sluice.Source's documentation; each breach is a [Violation] whose
//     text names the clause it broke ("Source contract §3 (When Deliver
//     returns pause=true, ...): ..."). A source author can run any test of
//     their own through it.
//   - [Run] drives a source through pipeline.Run in scenarios whose
//     committed offsets are known exactly, so every source (the testkit
//     fake, the Kafka source) must end with identical commits; every
//     source in them is checked, and a scenario fails on any violation.
//
// The scenarios cover: every record processed once and committed to the
// end; a filtered tail committed; invalid records dead-lettered and
// committed; a stage error at offset k stopping Run with a
// *sluice.StageError and committing exactly k (healthy partitions to
// their end); a graceful shutdown committing exactly what completed; a
// second source of the same group resuming from the committed offset;
// partitions paused by backpressure and resumed, nothing lost or repeated;
// a rebalance between two running members moving partitions mid-stream
// (drained, committed exactly, taken over from that offset); and, for
// drivers that are an [Evicter], partitions lost (nothing more committed)
// and then reassigned from the last commit.
//
// Share group sources (KIP-932, sluice.AckGroup) have a contract of their
// own, numbered on from the Source clauses (§7 to §12, quoted from
// sluice.AckGroup's documentation), and tools of their own:
//
//   - [CheckShare] wraps a share source so that its Group is a
//     [CheckingAckGroup], which checks the share clauses it can see
//     (TrackAcks first, deliveries of assigned partitions only, every
//     outcome taken, nothing committed) and the Source clauses a share
//     source keeps (its calls, pauses and shutdown).
//   - [RunShare] drives a share source through pipeline.Run on a
//     [ShareDriver] in scenarios whose outcome for each record is known
//     exactly: every record accepted once; invalid records
//     dead-lettered and accepted, or rejected without a destination; a
//     record whose retries ran out released and delivered again; a
//     record delivered too often handed to DeadLetterRecord;
//     a shutdown that acknowledges what finished and releases the rest
//     to the next member, promptly; a prompt return when cancelled while
//     idle; partitions paused by backpressure and resumed. The clauses
//     kept between the source and its broker (§11 release, §12 the
//     delivery limit) are checked there, through the driver.
//
// [FakeDriver] and [FakeShareDriver] run the suites in memory, without a
// broker; internal/kafkadriver runs them on a Kafka broker.
package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// Driver is the environment of a source under test: something holding
// partitioned topics (a broker, an in-memory log) and sources consuming
// them as consumer groups. Its methods are called from several tests at
// once (each scenario uses its own topic and group) and must be safe for
// concurrent use. A method fails t (t.Fatal) when the environment fails.
type Driver interface {
	Topics

	// NewSource returns a source consuming topic as a member of consumer
	// group group: once its Run started it joins the group and gets the
	// partitions the group gives it, each delivered from the group's
	// committed offset (the partition's first record when nothing was
	// committed), and it commits to the group. Alone in its group it gets
	// every partition. The suite runs each source once, and up to two
	// sources of a group at a time (the Rebalance scenario): the group
	// then splits the partitions between them, each partition moving
	// gracefully (revoked from one, then assigned to the other), as when
	// a member joins or leaves a Kafka consumer group.
	NewSource(t *testing.T, group, topic string) sluice.Source

	// Committed returns the offsets group has committed for topic, by
	// partition; partitions without a commit are absent. It may be called
	// while a source of the group runs.
	Committed(t *testing.T, group, topic string) map[int32]int64
}

// Topics is the part of a [Driver] (and of a [ShareDriver]) that holds
// the topics.
type Topics interface {
	// CreateTopic creates a new, empty topic with the given number of
	// partitions, numbered from 0.
	CreateTopic(t *testing.T, topic string, partitions int32)

	// Produce appends recs to topic, each to its Partition, in slice
	// order, at consecutive offsets after the partition's last record
	// (from 0). Key, Value and Headers are kept; Topic, Offset and
	// Timestamp are ignored. The suite produces only while no source of
	// the topic runs.
	Produce(t *testing.T, topic string, recs ...sluice.Record)
}

// Evicter is an optional extension of a [Driver], for the Loss scenario
// (skipped for drivers that are not one).
type Evicter interface {
	// Evict throws the running sources of group out of it, as a
	// coordinator does when their sessions expire: each loses the
	// partitions of topic it holds (Group.Lose) and gets none back until
	// readmit is called; they then rejoin and get the partitions again,
	// from the group's committed offsets. It returns at once: the loss
	// reaches the sources asynchronously.
	Evict(t *testing.T, group, topic string) (readmit func())
}

// WaitTimeout bounds every wait of the suite (a commit reaching a value, a
// gate reached, Run returning). It only fires when something is stuck.
var WaitTimeout = time.Minute

// Run runs every scenario against d, each as a parallel subtest of t.
// Besides the violations its checked sources made, a failed scenario
// reports the clauses of the Source contract it exercises, since a wrong
// commit or a record processed twice is the effect of breaking one.
func Run(t *testing.T, d Driver) {
	runScenarios(t, d, []scenario[Driver]{
		{"ProcessAllOnce", processAllOnce, []int{ClauseDeliver, ClauseCommit, ClauseShutdown}},
		{"FilteredTailCommitted", filteredTail, []int{ClauseCommit}},
		{"InvalidToDeadLetter", invalidToDeadLetter, []int{ClauseDeliver, ClauseCommit}},
		{"StageErrorCommitsUpToOffset", stageError, []int{ClauseCommit, ClauseShutdown}},
		{"ShutdownCommitsCompleted", shutdownMidStream, []int{ClauseShutdown}},
		{"ResumeFromCommitted", resume, []int{ClauseShutdown, ClauseDeliver}},
		{"PauseAndResume", pauseResume, []int{ClausePause, ClauseDeliver}},
		{"RebalanceMidStream", rebalanceMidStream, []int{ClauseGiveUp, ClauseDeliver}},
		{"LossThenReassign", lossThenReassign, []int{ClauseGiveUp, ClauseDeliver}},
	})
}

// scenario is one scenario of a suite run against drivers of type D, and
// the clauses it exercises.
type scenario[D any] struct {
	name    string
	fn      func(*testing.T, D)
	clauses []int
}

// runScenarios runs each scenario against d as a parallel subtest of t; a
// failed one also reports the clauses it exercises.
func runScenarios[D any](t *testing.T, d D, scs []scenario[D]) {
	for _, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			t.Cleanup(func() {
				if t.Failed() {
					for _, c := range sc.clauses {
						t.Errorf("scenario %s exercises %s", sc.name, cite(c))
					}
				}
			})
			sc.fn(t, d)
		})
	}
}

// start runs pipeline.Run over a checked source of group/topic. At
// cleanup, once Run stopped, every contract violation the source made
// fails t.
func start(t *testing.T, d Driver, group, topic string, build pipeline.Builder, opts ...pipeline.Option) (*testkit.Running, *CheckedSource) {
	t.Helper()
	src := Check(d.NewSource(t, group, topic))
	t.Cleanup(func() { src.Verify(t) }) // runs after Start's cleanup stopped Run
	return testkit.Start(t, src, build, opts...), src
}

// names returns a topic and a group name unique to the test.
func names(t *testing.T) (topic, group string) {
	n := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return "st-" + n, "st-g-" + n
}

// newTopic creates a topic of parts partitions with a name unique to the
// test, produces records(parts, 0, n) to it, and returns its name and a
// group name unique to the test.
func newTopic(t *testing.T, d Topics, parts int32, n int) (topic, group string) {
	t.Helper()
	topic, group = names(t)
	d.CreateTopic(t, topic, parts)
	d.Produce(t, topic, records(parts, 0, n)...)
	return topic, group
}

// checkAndCount builds graphs that check each record is the one records()
// made for its position (checkRecord) and count it in s.
func checkAndCount(t *testing.T, topic string, s *seen) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			checkRecord(t, topic, r)
			s.add(r.Partition, r.Offset)
			return nil
		})
	}
}

// records makes n records for each of partitions, numbered from first:
// key "p-i", value "value p-i", header "i" = i.
func records(partitions int32, first, n int) []sluice.Record {
	var out []sluice.Record
	for i := first; i < first+n; i++ {
		for p := range partitions {
			out = append(out, sluice.Record{
				Partition: p,
				Key:       fmt.Appendf(nil, "%d-%d", p, i),
				Value:     fmt.Appendf(nil, "value %d-%d", p, i),
				Headers:   []sluice.Header{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}},
			})
		}
	}
	return out
}

// checkRecord checks that r is the record records() made for its position.
func checkRecord(t *testing.T, topic string, r sluice.Record) {
	t.Helper()
	i := r.Offset // the suite produces consecutive offsets from 0
	if r.Topic != topic || string(r.Key) != fmt.Sprintf("%d-%d", r.Partition, i) ||
		string(r.Value) != fmt.Sprintf("value %d-%d", r.Partition, i) ||
		len(r.Headers) != 1 || r.Headers[0].Key != "i" || string(r.Headers[0].Value) != fmt.Sprint(i) {
		t.Errorf("record %s/%d@%d = key %q value %q headers %v, want what was produced there",
			r.Topic, r.Partition, r.Offset, r.Key, r.Value, r.Headers)
	}
}

// seen counts how often each offset of each partition was processed.
type seen struct {
	mu sync.Mutex
	n  map[int32]map[int64]int
}

func newSeen() *seen { return &seen{n: map[int32]map[int64]int{}} }

func (s *seen) add(p int32, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[p] == nil {
		s.n[p] = map[int64]int{}
	}
	s.n[p][off]++
}

func (s *seen) count(p int32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.n[p])
}

// exactly checks that partition p's processed offsets are exactly
// [from, to), each once.
func (s *seen) exactly(t *testing.T, p int32, from, to int64) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	bad := 0
	for _, off := range slices.Sorted(maps.Keys(s.n[p])) {
		if n := s.n[p][off]; off < from || off >= to || n != 1 {
			if bad++; bad <= 5 {
				t.Errorf("partition %d: offset %d processed %d times, want each of [%d, %d) once", p, off, n, from, to)
			}
		}
	}
	if got := int64(len(s.n[p])); got != to-from {
		t.Errorf("partition %d: %d distinct offsets processed, want %d ([%d, %d))", p, got, to-from, from, to)
	}
}

// waitCommitted waits until the group's commits equal want exactly,
// failing at once if a partition goes past its wanted offset
// (testkit.Running.WaitCommitted).
func waitCommitted(t *testing.T, d Driver, r *testkit.Running, group, topic string, want map[int32]int64) {
	t.Helper()
	r.WaitCommitted(t, func() (map[int32]int64, error) { return d.Committed(t, group, topic), nil }, want)
}

// finishAll waits until every one of parts partitions committed n, stops
// Run, which must return nil, and checks that s processed each offset of
// [0, processed) of every partition once and that the commits stayed at
// n.
func finishAll(t *testing.T, d Driver, r *testkit.Running, s *seen, group, topic string, parts int32, n, processed int64) {
	t.Helper()
	waitCommitted(t, d, r, group, topic, uniform(parts, n))
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	for p := range parts {
		s.exactly(t, p, 0, processed)
	}
	checkCommitted(t, d, group, topic, uniform(parts, n))
}

// checkCommitted checks the group's commits on topic.
func checkCommitted(t *testing.T, d Driver, group, topic string, want map[int32]int64) {
	t.Helper()
	if got := d.Committed(t, group, topic); !maps.Equal(got, want) {
		t.Errorf("committed %v, want %v", got, want)
	}
}

// waitChan waits for ch to be closed (or receive), failing after
// WaitTimeout or if Run returns first.
func waitChan(t *testing.T, r *testkit.Running, ch <-chan struct{}, what string) {
	t.Helper()
	timer := time.NewTimer(WaitTimeout)
	defer timer.Stop()
	select {
	case <-ch:
	case <-r.Done():
		t.Fatalf("Run returned %v while waiting for %s", r.Err(), what)
	case <-timer.C:
		t.Fatalf("%s: not within %v", what, WaitTimeout)
	}
}

func uniform(partitions int32, v int64) map[int32]int64 {
	m := make(map[int32]int64, partitions)
	for p := range partitions {
		m[p] = v
	}
	return m
}

// processAllOnce: every record reaches the end once, untouched, and every
// partition commits its end.
func processAllOnce(t *testing.T, d Driver) {
	const parts, n = 3, 200
	topic, group := newTopic(t, d, parts, n)

	s := newSeen()
	r, _ := start(t, d, group, topic, checkAndCount(t, topic, s))
	finishAll(t, d, r, s, group, topic, parts, n, n)
}

// filteredTail: records a Filter drops complete at once, so a partition
// whose tail is filtered out still commits its end.
func filteredTail(t *testing.T, d Driver) {
	const parts, n, keep = 2, 100, 60
	topic, group := newTopic(t, d, parts, n)

	s := newSeen()
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		kept := stages.Filter(in, func(r sluice.Record) bool { return r.Offset < keep })
		return stages.Each(kept, func(_ context.Context, r sluice.Record) error {
			s.add(r.Partition, r.Offset)
			return nil
		})
	}
	r, _ := start(t, d, group, topic, build)
	finishAll(t, d, r, s, group, topic, parts, n, keep)
}

var errBad = errors.New("bad record")

// invalidToDeadLetter: records marked Invalid go, untouched and in offset
// order, to the dead-letter function and are committed; the others reach
// the end.
func invalidToDeadLetter(t *testing.T, d Driver) {
	const parts, n = 2, 100
	topic, group := newTopic(t, d, parts, n)
	bad := func(off int64) bool { return off%10 == 3 }

	var mu sync.Mutex
	dead := map[int32][]sluice.DeadLetter{}
	deadLetter := func(_ context.Context, dl sluice.DeadLetter) error {
		mu.Lock()
		defer mu.Unlock()
		dead[dl.Record.Partition] = append(dead[dl.Record.Partition], dl)
		return nil
	}
	s := newSeen()
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		valid := stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
			if bad(r.Offset) {
				return r, sluice.Invalid(fmt.Errorf("offset %d: %w", r.Offset, errBad))
			}
			return r, nil
		}, stages.Name("validate"))
		return stages.Each(valid, func(_ context.Context, r sluice.Record) error {
			s.add(r.Partition, r.Offset)
			return nil
		})
	}
	r, _ := start(t, d, group, topic, build, pipeline.WithDeadLetter(deadLetter))
	waitCommitted(t, d, r, group, topic, uniform(parts, n))
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	checkCommitted(t, d, group, topic, uniform(parts, n))
	mu.Lock()
	defer mu.Unlock()
	for p := range int32(parts) {
		var want []int64
		for off := range int64(n) {
			if bad(off) {
				want = append(want, off)
			} else {
				s.mu.Lock()
				c := s.n[p][off]
				s.mu.Unlock()
				if c != 1 {
					t.Errorf("partition %d: valid offset %d processed %d times, want once", p, off, c)
				}
			}
		}
		var got []int64
		for _, dl := range dead[p] {
			got = append(got, dl.Record.Offset)
			checkRecord(t, topic, dl.Record)
			if dl.Stage != "validate" || !errors.Is(dl.Err, errBad) || !sluice.IsInvalid(dl.Err) {
				t.Errorf("dead letter of %d@%d: stage %q err %v, want stage validate and the Invalid error",
					p, dl.Record.Offset, dl.Stage, dl.Err)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("partition %d: dead letters at %v, want %v", p, got, want)
		}
		if c := s.count(p); c != n-len(want) {
			t.Errorf("partition %d: %d valid records processed, want %d", p, c, n-len(want))
		}
	}
}

var errBoom = errors.New("boom")

// stageError: a permanent stage error at offset k of one partition stops
// Run with a *StageError naming it; that partition commits exactly k and
// the healthy ones (finished before the failure) their end.
func stageError(t *testing.T, d Driver) {
	const parts, n, failP, k = 3, 60, int32(1), int64(17)
	topic, group := newTopic(t, d, parts, n)

	s := newSeen()
	healthy := make(chan struct{}) // closed once the healthy partitions processed everything
	done := processedBy(s, failP, (parts-1)*n, healthy)
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		checked := stages.Map(in, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
			if r.Partition == failP && r.Offset == k {
				// Fail only once the other partitions are done, so that
				// what they commit is known exactly.
				select {
				case <-healthy:
				case <-ctx.Done():
				}
				return r, sluice.Permanent(errBoom)
			}
			return r, nil
		}, stages.Name("check"))
		return stages.Each(checked, done)
	}
	r, _ := start(t, d, group, topic, build)
	err := r.Wait(t)
	var se *sluice.StageError
	if !errors.As(err, &se) {
		t.Fatalf("Run = %v, want a *sluice.StageError", err)
	}
	if se.Stage != "check" || se.Topic != topic || se.Partition != failP || se.Offset != k || !errors.Is(err, errBoom) {
		t.Errorf("StageError = %+v, want stage check on %s/%d at %d wrapping %v", *se, topic, failP, k, errBoom)
	}
	want := uniform(parts, n)
	want[failP] = k
	checkCommitted(t, d, group, topic, want)
	for p := range int32(parts) {
		s.exactly(t, p, 0, want[p])
	}
}

// shutdownMidStream: the end blocks at offset k of partition 0 until the
// partition's context ends (the drain timeout after a shutdown); the other
// partition finished everything. Shutdown commits exactly k and n.
func shutdownMidStream(t *testing.T, d Driver) {
	const n, k = 100, int64(37)
	topic, group := newTopic(t, d, 2, n)

	s := newSeen()
	gate := make(chan struct{})
	other := make(chan struct{})
	var timedOut sync.Map
	obs := &revokeObserver{timedOut: &timedOut}
	r, _ := start(t, d, group, topic, gateBuilder(s, 0, k, gate, other, n),
		pipeline.WithDrainTimeout(200*time.Millisecond), pipeline.WithHooks(obs))
	waitChan(t, r, gate, "partition 0 reaching the gate")
	waitChan(t, r, other, "partition 1 processing everything")
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	checkCommitted(t, d, group, topic, map[int32]int64{0: k, 1: n})
	s.exactly(t, 0, 0, k)
	s.exactly(t, 1, 0, n)
	if v, ok := timedOut.Load(int32(0)); !ok || !v.(bool) {
		t.Errorf("partition 0 revoke: timed out = %v (reported %v), want a drain timeout", v, ok)
	}
	if v, ok := timedOut.Load(int32(1)); !ok || v.(bool) {
		t.Errorf("partition 1 revoke: timed out = %v (reported %v), want a clean drain", v, ok)
	}
}

type revokeObserver struct {
	timedOut *sync.Map
}

func (o *revokeObserver) OnPartitionRevoked(tp sluice.TopicPartition, _ time.Duration, timedOut bool) {
	o.timedOut.Store(tp.Partition, timedOut)
}

// gateBuilder: partition gateP blocks at offset k (closing gate, not
// completing it) until its context ends; every other partition processes
// and closes other once it processed total records.
func gateBuilder(s *seen, gateP int32, k int64, gate, other chan struct{}, total int) pipeline.Builder {
	var once sync.Once
	done := processedBy(s, gateP, total, other)
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			if r.Partition == gateP && r.Offset == k {
				once.Do(func() { close(gate) })
				<-ctx.Done()
				return context.Cause(ctx)
			}
			return done(ctx, r)
		})
	}
}

// processedBy returns the function of an Each stage that records every
// record in s and closes others once total records of the partitions other
// than except were processed.
func processedBy(s *seen, except int32, total int, others chan struct{}) func(context.Context, sluice.Record) error {
	var mu sync.Mutex
	left := total
	return func(_ context.Context, r sluice.Record) error {
		s.add(r.Partition, r.Offset)
		if r.Partition != except {
			mu.Lock()
			if left--; left == 0 {
				close(others)
			}
			mu.Unlock()
		}
		return nil
	}
}

// resume: a first source stops with partition 0 committed at k and
// partition 1 at its end; after more records arrive a second source of
// the same group processes exactly what follows the commits.
func resume(t *testing.T, d Driver) {
	const n, more, k = 50, 20, int64(23)
	topic, group := newTopic(t, d, 2, n)

	first := newSeen()
	gate, other := make(chan struct{}), make(chan struct{})
	r, _ := start(t, d, group, topic, gateBuilder(first, 0, k, gate, other, n),
		pipeline.WithDrainTimeout(100*time.Millisecond))
	waitChan(t, r, gate, "partition 0 reaching the gate")
	waitChan(t, r, other, "partition 1 processing everything")
	if err := r.Stop(t); err != nil {
		t.Fatalf("first Run = %v, want nil", err)
	}
	checkCommitted(t, d, group, topic, map[int32]int64{0: k, 1: n})

	d.Produce(t, topic, records(2, n, more)...)
	second := newSeen()
	r, _ = start(t, d, group, topic, checkAndCount(t, topic, second))
	waitCommitted(t, d, r, group, topic, uniform(2, n+more))
	if err := r.Stop(t); err != nil {
		t.Fatalf("second Run = %v, want nil", err)
	}
	first.exactly(t, 0, 0, k)
	first.exactly(t, 1, 0, n)
	second.exactly(t, 0, k, n+more)
	second.exactly(t, 1, n, n+more)
	checkCommitted(t, d, group, topic, uniform(2, n+more))
}

package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/tools/tcpproxy"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// This file holds what the broker-fault tests (faults_*_test.go) share:
// a watch on every commit the broker receives, gates that hold a stage at
// a chosen offset, a stage that counts what it processed, and an observer
// of commit outcomes.

// commitWatch checks every OffsetCommit request of one group for one
// topic as the broker receives it, before any fault answers it: no request
// may ask to commit an offset past what was processed (committing n means
// every offset below n was processed at least once). It also counts the
// requests, so a test can tell that the commit path it faults was used.
type commitWatch struct {
	seen  *offsets
	topic string

	mu       sync.Mutex
	last     kmsg.Request
	requests int
	prefix   map[int32]int64 // every offset below prefix[p] was processed
	bad      []string
	history  []string // every request checked, for failure reports
	highest  map[string]map[int32]int64
	back     []string // requests below an earlier one of the same member
}

// watchCommits installs the watch as a kfake fault that never answers
// (its When returns false). It must be installed before the test's error
// faults: kfake consults faults in the order added and the first that
// answers a request hides it from the ones after.
func watchCommits(t *testing.T, b *kafkatest.Broker, group, topic string, seen *offsets) *commitWatch {
	t.Helper()
	w := &commitWatch{seen: seen, topic: topic, prefix: map[int32]int64{}, highest: map[string]map[int32]int64{}}
	h := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, When: w.when, Count: -1})
	t.Cleanup(h.Remove)
	return w
}

// when runs on kfake's cluster goroutine, once per entity of a request
// (the group, each topic, each partition): only the first call of a
// request checks it.
func (w *commitWatch) when(r kmsg.Request) bool {
	req, ok := r.(*kmsg.OffsetCommitRequest)
	if !ok {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if r == w.last {
		return false
	}
	w.last = r
	w.requests++
	line := fmt.Sprintf("%s gen %d member %s:", time.Now().Format("15:04:05.000"), req.Generation, req.MemberID)
	hi := w.highest[req.MemberID]
	if hi == nil {
		hi = map[int32]int64{}
		w.highest[req.MemberID] = hi
	}
	for _, rt := range req.Topics {
		if rt.Topic != w.topic {
			continue
		}
		for _, rp := range rt.Partitions {
			line += fmt.Sprintf(" %d@%d", rp.Partition, rp.Offset)
			w.checkLocked(rp.Partition, rp.Offset)
			if h, ok := hi[rp.Partition]; ok && rp.Offset < h {
				w.back = append(w.back, fmt.Sprintf("member %s: partition %d commit of %d after one of %d", req.MemberID, rp.Partition, rp.Offset, h))
			}
			hi[rp.Partition] = max(hi[rp.Partition], rp.Offset)
		}
	}
	w.history = append(w.history, line)
	return false
}

func (w *commitWatch) checkLocked(p int32, next int64) {
	cs, ok := w.seen.n[p]
	if !ok || next < 0 || next > int64(len(cs)) {
		w.bad = append(w.bad, fmt.Sprintf("partition %d: commit of offset %d, outside the topic", p, next))
		return
	}
	pre := w.prefix[p]
	for pre < next && cs[pre].Load() > 0 {
		pre++
	}
	w.prefix[p] = pre
	if next > pre {
		w.bad = append(w.bad, fmt.Sprintf("partition %d: commit of offset %d requested while offset %d was not processed yet", p, next, pre))
	}
}

// Requests is the number of commit requests the broker received so far.
func (w *commitWatch) Requests() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.requests
}

// logIfFailed logs every commit request the broker received if t failed.
func (w *commitWatch) logIfFailed(t *testing.T) {
	t.Helper()
	if !t.Failed() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.history {
		t.Log("commit request: " + l)
	}
}

// regressions returns, per partition, the commit requests of one member
// that asked for a lower offset than an earlier request of that member.
func (w *commitWatch) regressions() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.back...)
}

// check fails t if any commit request went past the processed offsets.
func (w *commitWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, s := range w.bad {
		if i == 10 {
			t.Errorf("... %d more commits past the processed offsets", len(w.bad)-i)
			break
		}
		t.Error(s)
	}
}

// gate holds stage calls until opened.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// wait blocks until g is open or ctx is done, returning ctx's cause then.
func (g *gate) wait(ctx context.Context) error {
	select {
	case <-g.ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// gates holds every partition's records at chosen offsets: a record at an
// offset with a gate waits for that gate before it is processed.
type gates map[int64]*gate

// countingBuilder returns a builder whose graph is one Each stage that
// waits at the gates, then records the offset in the partition's epoch
// and in seen. A call waiting at a gate when its partition is lost or its
// drain times out returns the context's cause: that record is not
// processed.
func countingBuilder(name string, es *epochs, seen *offsets, gs gates) pipeline.Builder {
	return func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		e := es.begin(name, p.Partition)
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			if g := gs[r.Offset]; g != nil {
				if err := g.wait(ctx); err != nil {
					return err
				}
			}
			e.record(r.Offset)
			seen.add(r.Partition, r.Offset)
			return nil
		})
	}
}

// processedThrough reports whether offset off of every partition was
// processed at least once.
func (o *offsets) processedThrough(off int64) bool {
	for _, cs := range o.n {
		if cs[off].Load() == 0 {
			return false
		}
	}
	return true
}

// distinct is the number of offsets processed at least once.
func (o *offsets) distinct() int {
	n := 0
	for _, cs := range o.n {
		for i := range cs {
			if cs[i].Load() > 0 {
				n++
			}
		}
	}
	return n
}

// checkTimes fails t unless every offset of every partition was processed
// exactly want(p, off) times.
func (o *offsets) checkTimes(t *testing.T, want func(p int32, off int64) int32) {
	t.Helper()
	bad := 0
	for p, cs := range o.n {
		for off := range cs {
			w := want(p, int64(off))
			if n := cs[off].Load(); n != w {
				if bad < 10 {
					t.Errorf("partition %d offset %d processed %d times, want %d", p, off, n, w)
				}
				bad++
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d offsets processed the wrong number of times", bad)
	}
}

// commitLog is an observer recording the outcome of every commit the
// source reports (a failed one carries a *sluice.CommitError naming it:
// "interval" for the background commits, "revoke" and "shutdown" for the
// synchronous ones), the records delivered per partition, and the group's
// commits at the first loss.
type commitLog struct {
	*groupObserver
	b            *kafkatest.Broker
	group, topic string

	mu               sync.Mutex
	syncErrs, bgErrs []error
	ok               int
	delivered        map[int32]int64
	atLoss           map[int32]int64
	lostOnce         sync.Once
	lostCh           chan struct{} // closed at the first loss
}

func newCommitLog(b *kafkatest.Broker, group, topic string) *commitLog {
	return &commitLog{
		groupObserver: newGroupObserver(),
		delivered:     map[int32]int64{},
		lostCh:        make(chan struct{}),
		b:             b, group: group, topic: topic,
	}
}

func (l *commitLog) OnCommitted(_ []sluice.Offset, _ time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ce *sluice.CommitError
	switch {
	case err == nil:
		l.ok++
	case errors.As(err, &ce) && ce.Reason == "interval":
		l.bgErrs = append(l.bgErrs, err)
	default:
		l.syncErrs = append(l.syncErrs, err)
	}
}

func (l *commitLog) OnRecordsDelivered(tp sluice.TopicPartition, n int) {
	l.mu.Lock()
	l.delivered[tp.Partition] += int64(n)
	l.mu.Unlock()
}

// PartitionLost snapshots the group's commits at the first loss.
func (l *commitLog) OnPartitionLost(tp sluice.TopicPartition) {
	l.groupObserver.OnPartitionLost(tp)
	l.lostOnce.Do(func() {
		snap := committedNow(l.b, l.group, l.topic)
		l.mu.Lock()
		l.atLoss = snap
		l.mu.Unlock()
		close(l.lostCh)
	})
}

// deliveredAtLeast reports whether at least n records of each of parts
// partitions were delivered.
func (l *commitLog) deliveredAtLeast(parts int, n int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.delivered) < parts {
		return false
	}
	for _, d := range l.delivered {
		if d < n {
			return false
		}
	}
	return true
}

// syncErrors returns the errors of the synchronous commits so far.
func (l *commitLog) syncErrors() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.syncErrs...)
}

func (l *commitLog) bgErrors() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.bgErrs...)
}

func (l *commitLog) committedAtLoss() map[int32]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.atLoss)
}

// hasCode reports whether err is a librdkafka error with the Kafka error
// code of want (librdkafka's broker error codes are Kafka's).
func hasCode(err error, want *kerr.Error) bool {
	var ke kafka.Error
	return errors.As(err, &ke) && int(ke.Code()) == int(want.Code)
}

// anyHasCode reports whether one of errs has want's code.
func anyHasCode(errs []error, want *kerr.Error) bool {
	for _, err := range errs {
		if hasCode(err, want) {
			return true
		}
	}
	return false
}

// newSourceWith is newSource with a chosen commit interval and client.id
// (the name kfake shows in GroupInfo.Members).
func newSourceWith(t testing.TB, b *kafkatest.Broker, group, topic, clientID string, every time.Duration, overrides map[string]any) *source.Source {
	t.Helper()
	ov := map[string]any{
		"heartbeat.interval.ms": 100,
		"session.timeout.ms":    6000,
		"client.id":             clientID,
		// Reconnect quickly once a fault clears (librdkafka's default
		// backs off up to 10s).
		"reconnect.backoff.max.ms": 500,
	}
	maps.Copy(ov, overrides)
	return sourceOf(t, b, group, topic, source.Config{GroupConfig: sluice.GroupConfig{CommitInterval: every}, Overrides: ov})
}

// memberID returns the member id of the group member whose client.id is
// clientID, failing t if there is none.
func memberID(t *testing.T, b *kafkatest.Broker, group, clientID string) string {
	t.Helper()
	for _, m := range b.Group(t, group).Members {
		if m.ClientID == clientID {
			return m.MemberID
		}
	}
	t.Fatalf("group %s has no member with client.id %q", group, clientID)
	return ""
}

// waitHits waits until the faults of h answered at least n requests.
func waitHits(t *testing.T, h *kfake.FaultHandle, n int, what string, cs ...*consumer) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d requests faulted (%s)", n, what), func() bool { return h.Hits() >= n }, cs...)
}

// stopBound is how long a graceful stop may take: the drain, the final
// commit (which librdkafka retries and defers for at most about a session
// timeout under the fault tests' faults) and the close.
const stopBound = 45 * time.Second

// waitGroupAt waits until the group's commits for topic equal want
// (testkit.Running.WaitCommitted), asking again while the broker cannot
// answer.
func waitGroupAt(t *testing.T, b *kafkatest.Broker, group, topic string, want map[int32]int64, c *consumer) {
	t.Helper()
	c.WaitCommitted(t, func() (map[int32]int64, error) { return b.CommittedContext(t.Context(), group, topic) }, want)
}

// eachCase runs fn for every case in a parallel subtest of t named
// name(case); t runs in parallel too.
func eachCase[C any](t *testing.T, cases []C, name func(C) string, fn func(*testing.T, C)) {
	t.Parallel()
	for _, c := range cases {
		t.Run(name(c), func(t *testing.T) {
			t.Parallel()
			fn(t, c)
		})
	}
}

// outages are the ways the network to the broker fails: connections cut,
// data stalled.
var outages = []tcpproxy.Mode{tcpproxy.Cut, tcpproxy.Stalled}

// uniform returns {p: off} for partitions 0..parts-1.
func uniform(parts int, off int64) map[int32]int64 {
	m := make(map[int32]int64, parts)
	for p := range int32(parts) {
		m[p] = off
	}
	return m
}

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// ownedSet returns the partitions o owns now.
func (o *groupObserver) ownedSet() map[int32]bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.owned)
}

// checkCounts fails t unless every offset was processed exactly as many
// times as there are epochs whose processed range covers it: with
// es.check (each epoch consecutive from the group's commit), this accounts
// for every processing.
func (es *epochs) checkCounts(t *testing.T, seen *offsets) {
	t.Helper()
	es.mu.Lock()
	defer es.mu.Unlock()
	seen.checkTimes(t, func(p int32, off int64) int32 {
		n := int32(0)
		for _, e := range es.all {
			e.mu.Lock()
			if e.p == p && e.n > 0 && e.first <= off && off <= e.last {
				n++
			}
			e.mu.Unlock()
		}
		return n
	})
}

// committedNow returns what group committed on topic, from a hook where no
// test is at hand. It asks again while the broker cannot answer (a node of
// the cluster may be down for the test's outage, the group's coordinator
// with it), and panics when it still cannot after wait.
func committedNow(b *kafkatest.Broker, group, topic string) map[int32]int64 {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		c, err := b.CommittedContext(ctx, group, topic)
		if err == nil {
			return c
		}
		select {
		case <-ctx.Done():
			panic(err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// faultRun is one fault test's topic on a kfake broker and its group
// "<topic>-g": every processing counted (seen), every ownership's records
// (es), every commit request checked against what was processed (watch).
type faultRun struct {
	b            *kafkatest.Broker
	topic, group string
	total        int             // records filled
	hw           map[int32]int64 // the high watermarks once filled
	seen         *offsets
	es           *epochs
	watch        *commitWatch
}

// newFaultRun creates topic with parts partitions on b, fills each with
// perPartition 16-byte records and watches the group's commits.
func newFaultRun(t *testing.T, b *kafkatest.Broker, topic string, parts, perPartition int) *faultRun {
	t.Helper()
	return newFaultRunSized(t, b, topic, parts, perPartition, 0)
}

// newFaultRunSized is newFaultRun counting processings up to offset
// processed of each partition (records the test adds later), or up to the
// high watermarks if 0.
func newFaultRunSized(t *testing.T, b *kafkatest.Broker, topic string, parts, perPartition int, processed int64) *faultRun {
	t.Helper()
	r := &faultRun{b: b, topic: topic, group: topic + "-g"}
	r.total, r.hw = fillTopic(t, b, topic, int32(parts), perPartition)
	if processed > 0 {
		r.seen = newOffsets(uniform(parts, processed))
	} else {
		r.seen = newOffsets(r.hw)
	}
	r.es = &epochs{b: b, group: r.group, topic: topic}
	r.watch = watchCommits(t, b, r.group, topic, r.seen)
	return r
}

// start starts member name on the topic, committing every interval,
// with the librdkafka overrides ov, its graph counting what it processes
// and holding each partition at the offsets of gs.
func (r *faultRun) start(t *testing.T, name string, every time.Duration, ov map[string]any, gs gates, opts ...pipeline.Option) *consumer {
	t.Helper()
	return startConsumer(t, name, newSourceWith(t, r.b, r.group, r.topic, name, every, ov), countingBuilder(name, r.es, r.seen, gs), opts...)
}

// check fails t on a commit request past what was processed, on an
// ownership not starting at the group's commit, unless every offset was
// processed times(p, off) times (at least once if times is nil), and
// unless the group committed the high watermarks.
func (r *faultRun) check(t *testing.T, times func(p int32, off int64) int32) {
	t.Helper()
	r.watch.check(t)
	r.es.check(t)
	if times == nil {
		r.seen.check(t)
	} else {
		r.seen.checkTimes(t, times)
	}
	checkCommittedEquals(t, r.b, r.group, r.topic, r.hw)
}

// once is the processing count of every offset when nothing is redone.
func once(int32, int64) int32 { return 1 }

// stopCountingLosses stops c cleanly and returns how many partitions obs
// saw lost and revoked before the shutdown.
func stopCountingLosses(t *testing.T, c *consumer, obs *commitLog) (lost, revoked int64) {
	t.Helper()
	lost, revoked = obs.groupObserver.lost.Load(), obs.revoked.Load()
	c.stop(t)
	return lost, revoked
}

// wantNoLoss fails t if a partition was lost or revoked.
func wantNoLoss(t *testing.T, lost, revoked int64) {
	t.Helper()
	if lost != 0 || revoked != 0 {
		t.Errorf("%d partitions lost and %d revoked before the shutdown, want none", lost, revoked)
	}
}

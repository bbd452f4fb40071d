package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/metrics"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// shareLock is the broker's acquisition lock in most of these tests
// (group.share.record.lock.duration.ms, 30 s by default on both brokers;
// kafkatest lets Kafka go down to 1 s with
// group.share.min.record.lock.duration.ms). Kafka expires each lock on
// its own timer; kfake sweeps expired locks every
// share.record.lock.sweep.interval.ms (a kfake setting: 100 ms here, 5 s
// by default), which Kafka ignores.
const shareLock = 2 * time.Second

// newShareBroker starts a broker with one topic of one partition and the
// share group timings above, on which share group group reads from the
// earliest record (its share.auto.offset.reset set as an operator does
// before a share group's first start: the default, latest, skips what
// was produced before the group existed).
func newShareBroker(t *testing.T, topic, group string) *kafkatest.Broker {
	t.Helper()
	return newShareBrokerLock(t, topic, group, shareLock)
}

// filledShareBroker is newShareBroker with n records of 16 bytes in topic.
func filledShareBroker(t *testing.T, topic, group string, n int) *kafkatest.Broker {
	t.Helper()
	b := newShareBroker(t, topic, group)
	b.Fill(t, topic, n, 16)
	return b
}

// newShareBrokerLock is newShareBroker with an acquisition lock of lock.
func newShareBrokerLock(t *testing.T, topic, group string, lock time.Duration) *kafkatest.Broker {
	t.Helper()
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, 1), kafkatest.WithBrokerConfig(map[string]string{
		"group.share.record.lock.duration.ms": strconv.Itoa(int(lock / time.Millisecond)),
		"share.record.lock.sweep.interval.ms": "100",
		"group.share.heartbeat.interval.ms":   "100",
	}))
	b.SetGroupConfig(t, group, "share.auto.offset.reset", "earliest")
	return b
}

// shareOffset describes partition 0 of topic for group
// (DescribeShareGroupOffsets); ok is false until the broker has share
// state for it.
func shareOffset(t *testing.T, b *kafkatest.Broker, group, topic string) (o kadm.ShareOffset, ok bool) {
	t.Helper()
	got, err := admin(t, b).DescribeShareGroupOffsets(t.Context(), group)
	if err != nil {
		return o, false
	}
	o, ok = got[group].Offsets.Lookup(topic, 0)
	return o, ok && o.Err == nil && o.StartOffset >= 0 && o.Lag >= 0
}

// shareAcked reports whether every record of partition 0 of topic, up to
// its high watermark, is acknowledged or archived for group: the group's
// share-partition lag is 0 (KIP-1226: high watermark, minus the
// share-partition start offset, minus the records past it already
// acknowledged or archived). The start offset alone does not say it on
// Kafka: what DescribeShareGroupOffsets reports is the start offset the
// broker persisted with the last acknowledgement, the one current before
// that acknowledgement was applied, so after the last record's the start
// offset stays below the high watermark until another acknowledgement
// comes (kfake reports the current start offset).
func shareAcked(t *testing.T, b *kafkatest.Broker, group, topic string) bool {
	t.Helper()
	o, ok := shareOffset(t, b, group, topic)
	return ok && o.Lag == 0
}

// shareMembers returns how many members the share group has.
func shareMembers(t *testing.T, b *kafkatest.Broker, group string) int {
	t.Helper()
	got, err := admin(t, b).DescribeShareGroups(t.Context(), group)
	if err != nil {
		return 0
	}
	return len(got[group].Members)
}

func newShareSource(t *testing.T, b *kafkatest.Broker, group, topic string, maxDeliveries int, opts ...kgo.Opt) *franz.ShareSource {
	t.Helper()
	return mustNew(t, franz.NewShareSource, franz.ShareConfig{
		Brokers: b.Addrs(), Group: group, Topics: []string{topic}, Logger: kafkatest.Logger(t),
		MaxDeliveries: maxDeliveries, CloseTimeout: 2 * time.Second,
		Opts: append([]kgo.Opt{kgo.ShareMaxRecords(50)}, opts...),
	})
}

// tally counts, per member, the offsets whose graph completed.
type tally struct {
	mu       sync.Mutex
	n        map[completion]int // how often each member completed each offset
	distinct map[string]int     // how many offsets each member completed
}

// completion is an offset whose graph a member completed.
type completion struct {
	member string
	off    int64
}

func newTally() *tally { return &tally{n: map[completion]int{}, distinct: map[string]int{}} }

func (c *tally) add(member string, off int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := completion{member, off}
	c.n[k]++
	if c.n[k] == 1 {
		c.distinct[member]++
	}
}

// count returns how many offsets member completed.
func (c *tally) count(member string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.distinct[member]
}

// times returns how often member completed off.
func (c *tally) times(member string, off int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[completion{member, off}]
}

// builder returns member's graph: one Each stage that runs work on the
// record (when work is not nil) and, unless work failed, counts it as
// completed by member.
func (c *tally) builder(member string, work func(context.Context, sluice.Record) error) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			if work != nil {
				if err := work(ctx, r); err != nil {
					return err
				}
			}
			c.add(member, r.Offset)
			return nil
		})
	}
}

// checkOnce fails t unless members A and B together completed each offset
// below n exactly once; why ends the message.
func (c *tally) checkOnce(t *testing.T, n int64, why string) {
	t.Helper()
	for off := int64(0); off < n; off++ {
		if got := c.times("A", off) + c.times("B", off); got != 1 {
			t.Errorf("offset %d processed %d times (A %d, B %d), want exactly once%s", off, got, c.times("A", off), c.times("B", off), why)
		}
	}
}

// hangFrom is work that, from offset hang on, sets hanging and waits
// until its context ends (its drain times out): a member stuck there.
func hangFrom(hang int64, hanging *atomic.Bool) func(context.Context, sluice.Record) error {
	return func(ctx context.Context, r sluice.Record) error {
		if r.Offset < hang {
			return nil
		}
		hanging.Store(true)
		<-ctx.Done()
		return ctx.Err()
	}
}

// longOffset0 is work that takes d on offset 0 (the work, not
// synchronisation), having set started.
func longOffset0(started *atomic.Bool, d time.Duration) func(context.Context, sluice.Record) error {
	return func(_ context.Context, r sluice.Record) error {
		if r.Offset == 0 {
			started.Store(true)
			time.Sleep(d)
		}
		return nil
	}
}

// TestShareTwoMembersSplitOnePartition: two members of one share group
// consume one partition together; both process some of its records, and
// together every record exactly once (nothing crashed, no lock expired).
//
// The records are produced at once, so they share a few large producer
// batches. A broker acquires records for a ShareFetch in whole producer
// batches unless the fetch asks for the record-limit acquire mode (KIP-1206,
// kgo.ShareMaxRecordsStrict): Kafka would hand a whole batch, up to all
// 2000 records, to the member that fetched first, and the other would get
// nothing. kfake acquires record by record in either mode. With the record
// limit each fetch acquires at most ShareMaxRecords (50) records, on both.
func TestShareTwoMembersSplitOnePartition(t *testing.T) {
	t.Parallel()
	const topic, group, n = "share-split", "share-split-g", 2000
	b := newShareBroker(t, topic, group)
	done := newTally()
	work := func(_ context.Context, r sluice.Record) error {
		if r.Offset%4 == 0 {
			time.Sleep(time.Millisecond) // the work, not synchronisation
		}
		return nil
	}
	a := startConsumer(t, "A", newShareSource(t, b, group, topic, 0, kgo.ShareMaxRecordsStrict()), done.builder("A", work))
	bm := startConsumer(t, "B", newShareSource(t, b, group, topic, 0, kgo.ShareMaxRecordsStrict()), done.builder("B", work))
	// Both members are in the group before the records exist, so that
	// neither can take them all before the other joined.
	waitFor(t, "two share group members", func() bool { return shareMembers(t, b, group) == 2 }, a, bm)
	b.Fill(t, topic, n, 16)
	waitFor(t, "every record acknowledged", func() bool { return shareAcked(t, b, group, topic) }, a, bm)
	a.stop(t)
	bm.stop(t)
	done.checkOnce(t, n, "")
	if done.count("A") == 0 || done.count("B") == 0 {
		t.Fatalf("processed by A %d, by B %d: want both to share the partition", done.count("A"), done.count("B"))
	}
	t.Logf("A processed %d, B %d", done.count("A"), done.count("B"))
}

// TestShareLagCountsHeldRecords: the share-partition lag, which the
// other tests wait on to see every record acknowledged, counts exactly the
// records not acknowledged yet: with offsets 150 to 199 held (acquired,
// unfinished) it is 50 on either broker, whatever start offset the broker
// reports, and 0 once they finish.
func TestShareLagCountsHeldRecords(t *testing.T) {
	t.Parallel()
	const topic, group, n, hang = "share-lag", "share-lag-g", 200, 150
	b := filledShareBroker(t, topic, group, n)
	done := newTally()
	release := make(chan struct{})
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			if r.Offset >= hang {
				<-release
			}
			done.add("m", r.Offset)
			return nil
		})
	}
	m := startConsumer(t, "m", newShareSource(t, b, group, topic, 0), build)
	var held kadm.ShareOffset
	waitFor(t, "a lag of the 50 held records", func() bool {
		o, ok := shareOffset(t, b, group, topic)
		held = o
		return done.count("m") == hang && ok && o.Lag == n-hang
	}, m)
	t.Logf("offsets 0-149 done, 150-199 held: start offset %d, lag %d", held.StartOffset, held.Lag)
	if shareAcked(t, b, group, topic) {
		t.Fatal("every record acknowledged while 50 are held")
	}
	close(release)
	waitFor(t, "every record acknowledged", func() bool { return shareAcked(t, b, group, topic) }, m)
	m.stop(t)
	if got := done.count("m"); got != n {
		t.Errorf("%d records processed, want %d", got, n)
	}
}

// killableDialer is a member's network: kill closes every connection it
// made and refuses new ones, as a crashed process's are gone.
type killableDialer struct {
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (d *killableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.killed {
		return nil, errors.New("member crashed: no network")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *killableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.killed = true
	for _, c := range d.conns {
		_ = c.Close()
	}
}

// TestShareCrashReleasesToOtherMember: member A completes offsets below
// 20 and hangs on 20 with the rest of its poll behind it; then its
// network dies (its client can neither acknowledge nor renew, as for a
// crashed process). B, started afterwards, gets A's unfinished records:
// nothing is lost, and B processes every record A had not finished. kfake,
// like Kafka, releases a member's records when its share session's
// connection closes (else they would come back when their lock expires,
// shareLock).
func TestShareCrashReleasesToOtherMember(t *testing.T) {
	t.Parallel()
	const topic, group, n, hang = "share-crash", "share-crash-g", 200, 20
	b := filledShareBroker(t, topic, group, n)
	done := newTally()
	var hanging atomic.Bool
	aBuild, bBuild := done.builder("A", hangFrom(hang, &hanging)), done.builder("B", nil)
	nw := &killableDialer{}
	a := startConsumer(t, "A", newShareSource(t, b, group, topic, 0, kgo.Dialer(nw.dial)), aBuild,
		pipeline.WithDrainTimeout(200*time.Millisecond))
	waitFor(t, "A hanging on offset 20", func() bool { return hanging.Load() && done.count("A") == hang }, a)
	nw.kill()
	bm := startConsumer(t, "B", newShareSource(t, b, group, topic, 0), bBuild)
	waitFor(t, "every record acknowledged", func() bool { return shareAcked(t, b, group, topic) }, bm)
	bm.stop(t)
	_, aErr := a.stopTimed(t) // a crashed member: its shutdown cannot reach the broker
	t.Logf("A (crashed) returned %v", aErr)
	redone := 0
	for off := int64(0); off < n; off++ {
		if done.times("A", off)+done.times("B", off) == 0 {
			t.Errorf("offset %d lost: processed by nobody", off)
		}
		if off >= hang && done.times("B", off) == 0 {
			t.Errorf("offset %d, unfinished on A when it crashed, not processed by B", off)
		}
		if off < hang && done.times("B", off) > 0 {
			redone++
		}
	}
	// At least once: A's acknowledgements of what it finished may not have
	// reached the broker before its network died.
	t.Logf("B processed again %d of the %d records A finished", redone, hang)
}

// deadLetterTo dead-letters to topic dlq on b, with the dead letter's
// stage and the record's offset as headers.
func deadLetterTo(b *kafkatest.Broker, dlq string) pipeline.Option {
	return pipeline.WithDeadLetter(func(ctx context.Context, dl sluice.DeadLetter) error {
		return b.ProduceContext(ctx, dlq, sluice.Record{Key: dl.Record.Key, Value: dl.Record.Value,
			Headers: []sluice.Header{{Key: "stage", Value: []byte(dl.Stage)}, {Key: "offset", Value: fmt.Appendf(nil, "%d", dl.Record.Offset)}}})
	})
}

// checkMaxDeliveriesDeadLetter fails t unless dlq (written by
// deadLetterTo) holds one dead letter: poison's, of the stage
// sluice.MaxDeliveriesStage.
func checkMaxDeliveriesDeadLetter(t *testing.T, b *kafkatest.Broker, dlq string, poison int64) {
	t.Helper()
	dead := b.ReadAll(t, dlq)
	if len(dead) != 1 {
		t.Fatalf("dead-letter topic holds %d records, want 1", len(dead))
	}
	var stage, off string
	for _, h := range dead[0].Headers {
		switch h.Key {
		case "stage":
			stage = string(h.Value)
		case "offset":
			off = string(h.Value)
		}
	}
	if stage != sluice.MaxDeliveriesStage || off != strconv.FormatInt(poison, 10) {
		t.Errorf("dead letter: stage %q offset %s, want %q offset %d", stage, off, sluice.MaxDeliveriesStage, poison)
	}
}

// TestSharePoisonDeadLetteredAcrossRestart: offset 3 fails every
// attempt. The first consumer runs it twice (retries exhausted: released;
// then it hangs and is released at shutdown); the second consumer gets it
// a third time and, with MaxDeliveries 2, hands it to the dead-letter
// topic without running the graph. The delivery count is the broker's,
// so it survives the restart. The broker's group.share.delivery.count.limit
// is 5 (the default of Kafka and kfake), above MaxDeliveries.
func TestSharePoisonDeadLetteredAcrossRestart(t *testing.T) {
	t.Parallel()
	const topic, dlq, group, n, poison = "share-poison", "share-poison-dlq", "share-poison-g", 10, 3
	b := newShareBroker(t, topic, group)
	b.CreateTopic(t, dlq, 1)
	b.Fill(t, topic, n, 16)
	var runs atomic.Int32 // runs of the poison record through a graph
	done := newTally()
	build := func(name string) pipeline.Builder {
		return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
				if r.Offset != poison {
					done.add(name, r.Offset)
					return nil
				}
				if runs.Add(1) == 2 {
					<-ctx.Done() // unfinished at shutdown
				}
				return errors.New("downstream refuses it")
			})
		}
	}
	toDLQ := deadLetterTo(b, dlq)
	noRetry := pipeline.WithRetry(sluice.RetryPolicy{Attempts: 1})
	first := startConsumer(t, "first", newShareSource(t, b, group, topic, 2), build("first"), toDLQ, noRetry,
		pipeline.WithDrainTimeout(200*time.Millisecond))
	waitFor(t, "the poison record's second run", func() bool { return runs.Load() == 2 && done.count("first") == n-1 }, first)
	first.stop(t)

	second := startConsumer(t, "second", newShareSource(t, b, group, topic, 2), build("second"), toDLQ, noRetry)
	waitFor(t, "every record acknowledged", func() bool { return shareAcked(t, b, group, topic) }, second)
	second.stop(t)
	if got := runs.Load(); got != 2 {
		t.Errorf("the poison record ran through a graph %d times, want 2 (MaxDeliveries)", got)
	}
	checkMaxDeliveriesDeadLetter(t, b, dlq, poison)
}

// TestShareDeadLetteredRecordNeverRunsTheGraph: with MaxDeliveries 1, a
// record that failed its first run is dead-lettered when it comes back,
// without running the graph, also when more records are delivered after
// its dead letter was stored. The poison is the last of the records
// produced first, so that its second delivery is the member's 64th or
// 65th record: the last slot of the tracker's first 64-slot segment
// (which is given back once it finished) or the first of the second.
// Every other record runs, no zero Record runs in the poison's place,
// and every record is acknowledged.
func TestShareDeadLetteredRecordNeverRunsTheGraph(t *testing.T) {
	t.Parallel()
	for _, first := range []int{63, 64} { // the poison is offset first-1
		t.Run(fmt.Sprintf("poison at offset %d", first-1), func(t *testing.T) {
			t.Parallel()
			topic := fmt.Sprintf("share-dlr-%d", first)
			dlq, group := topic+"-dlq", topic+"-g"
			poison := int64(first - 1)
			b := newShareBroker(t, topic, group)
			b.CreateTopic(t, dlq, 1)
			b.Fill(t, topic, first, 16)
			var mu sync.Mutex
			runs := map[int64]int{}
			foreign := 0 // runs of records not of topic (a zero Record)
			build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
					mu.Lock()
					defer mu.Unlock()
					if r.Topic != topic {
						foreign++
						return nil
					}
					if runs[r.Offset]++; r.Offset == poison {
						return errors.New("downstream refuses it") // released; dead-lettered when it comes back
					}
					return nil
				})
			}
			toDLQ := deadLetterTo(b, dlq)
			m := startConsumer(t, "m", newShareSource(t, b, group, topic, 1), build, toDLQ,
				pipeline.WithRetry(sluice.RetryPolicy{Attempts: 1}))
			waitFor(t, "the first records acknowledged, the poison dead-lettered", func() bool {
				return shareAcked(t, b, group, topic) // the high watermark is first
			}, m)
			b.Fill(t, topic, 64, 16) // delivered after the poison's dead letter was stored
			total := int64(first + 64)
			waitFor(t, "every record acknowledged", func() bool { return shareAcked(t, b, group, topic) }, m)
			m.stop(t)

			mu.Lock()
			defer mu.Unlock()
			if runs[poison] != 1 || foreign != 0 {
				t.Errorf("the poison ran through the graph %d times, and %d records not of the topic ran; want once (its first delivery) and none", runs[poison], foreign)
			}
			for off := range total {
				if off != poison && runs[off] == 0 {
					t.Errorf("offset %d never ran", off)
				}
			}
			checkMaxDeliveriesDeadLetter(t, b, dlq, poison)
		})
	}
}

// TestShareRetriesExhaustedRelease: a record failing every attempt is
// released and delivered again (the broker's delivery count grows), and
// Run goes on instead of stopping; once it succeeds it is accepted.
func TestShareRetriesExhaustedRelease(t *testing.T) {
	t.Parallel()
	const topic, group, n, flaky = "share-release", "share-release-g", 5, 2
	b := filledShareBroker(t, topic, group, n)
	var calls atomic.Int32
	done := newTally()
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			if r.Offset == flaky && calls.Add(1) < 3 {
				return errors.New("transient")
			}
			done.add("m", r.Offset)
			return nil
		})
	}
	m := startConsumer(t, "m", newShareSource(t, b, group, topic, 0), build,
		pipeline.WithRetry(sluice.RetryPolicy{Attempts: 1}))
	waitFor(t, "every record acknowledged", func() bool { return shareAcked(t, b, group, topic) }, m)
	m.stop(t)
	if got := calls.Load(); got != 3 {
		t.Errorf("the flaky record ran %d times, want 3 (released twice, accepted the third time)", got)
	}
	for off := int64(0); off < n; off++ {
		if got := done.times("m", off); got != 1 {
			t.Errorf("offset %d completed %d times, want 1", off, got)
		}
	}
}

// TestShareShutdownReleasesUnfinished: A stops gracefully while hanging on
// offset 20 (its drain times out); the source releases what is unfinished,
// so B gets those records at once, long before their 60 s lock would
// expire. (kgo's leave, in Close, also releases records never
// acknowledged: this holds the outcome, whichever of the two does it.)
func TestShareShutdownReleasesUnfinished(t *testing.T) {
	t.Parallel()
	const topic, group, n, hang = "share-stop", "share-stop-g", 100, 20
	const lock = 60 * time.Second
	b := newShareBrokerLock(t, topic, group, lock)
	b.Fill(t, topic, n, 16)
	done := newTally()
	var hanging atomic.Bool
	aBuild, bBuild := done.builder("A", hangFrom(hang, &hanging)), done.builder("B", nil)
	a := startConsumer(t, "A", newShareSource(t, b, group, topic, 0), aBuild, pipeline.WithDrainTimeout(200*time.Millisecond))
	waitFor(t, "A hanging on offset 20", func() bool { return hanging.Load() && done.count("A") == hang }, a)
	a.stop(t)
	began := time.Now()
	bm := startConsumer(t, "B", newShareSource(t, b, group, topic, 0), bBuild)
	waitFor(t, "every record acknowledged", func() bool { return shareAcked(t, b, group, topic) }, bm)
	if took := time.Since(began); took >= lock/2 {
		t.Errorf("B finished A's unfinished records after %v: they came back by lock expiry, not released", took)
	}
	bm.stop(t)
	for off := int64(0); off < n; off++ {
		want := 0
		if off >= hang {
			want = 1
		}
		if got := done.times("B", off); got != want {
			t.Errorf("offset %d processed by B %d times, want %d", off, got, want)
		}
	}
}

// TestShareLongProcessingRenewsLock: offset 0 takes three lock durations;
// the source renews its lock, so B, which joined meanwhile, never gets it
// and it is processed once.
func TestShareLongProcessingRenewsLock(t *testing.T) {
	t.Parallel()
	const topic, group, n = "share-renew", "share-renew-g", 10
	const lock = time.Second
	b := newShareBrokerLock(t, topic, group, lock)
	b.Fill(t, topic, n, 16)
	done := newTally()
	var started atomic.Bool
	a := startConsumer(t, "A", newShareSource(t, b, group, topic, 0), done.builder("A", longOffset0(&started, 3*lock)))
	waitFor(t, "A processing offset 0", started.Load, a)
	bm := startConsumer(t, "B", newShareSource(t, b, group, topic, 0), done.builder("B", longOffset0(&started, 3*lock)))
	waitFor(t, "every record acknowledged", func() bool { return shareAcked(t, b, group, topic) }, a, bm)
	a.stop(t)
	bm.stop(t)
	done.checkOnce(t, n, "")
}

// TestShareDrainRenewsLock: A is stopped while offset 0 still needs three
// lock durations; its drain waits for it, and the source keeps renewing
// the lock meanwhile, so B (a member already) never gets offset 0 while A
// works on it: every record is processed once, offset 0 by A.
func TestShareDrainRenewsLock(t *testing.T) {
	t.Parallel()
	const topic, group, n = "share-drain-renew", "share-drain-renew-g", 10
	const lock = time.Second
	b := newShareBrokerLock(t, topic, group, lock)
	done := newTally()
	var started atomic.Bool
	a := startConsumer(t, "A", newShareSource(t, b, group, topic, 0), done.builder("A", longOffset0(&started, 3*lock)), pipeline.WithDrainTimeout(time.Minute))
	b.Fill(t, topic, n, 16)
	waitFor(t, "A processing offset 0", started.Load, a)
	bm := startConsumer(t, "B", newShareSource(t, b, group, topic, 0), done.builder("B", nil))
	waitFor(t, "two share group members", func() bool { return shareMembers(t, b, group) == 2 }, a, bm)
	a.stop(t) // drains: returns once offset 0 (and what follows it on A) is done
	waitFor(t, "every record acknowledged", func() bool { return shareAcked(t, b, group, topic) }, bm)
	bm.stop(t)
	if got := done.times("A", 0); got != 1 {
		t.Errorf("offset 0 completed on A %d times, want 1", got)
	}
	done.checkOnce(t, n, ": its lock expired while A drained")
}

// shareHooks counts what the runtime reports of a share source's records.
type shareHooks struct {
	delivered, completed, polls, joins atomic.Int64
	inFlight, maxInFlight              atomic.Int64
	stuckOffset                        atomic.Int64 // -1 until OnStuck
}

func (h *shareHooks) OnRecordsDelivered(_ sluice.TopicPartition, n int) { h.delivered.Add(int64(n)) }
func (h *shareHooks) OnRecordsCompleted(_ sluice.TopicPartition, n int, _ int64) {
	h.completed.Add(int64(n))
}
func (h *shareHooks) OnPolled(time.Time) { h.polls.Add(1) }
func (h *shareHooks) OnJoined()          { h.joins.Add(1) }
func (h *shareHooks) OnInFlight(records, _ int64) {
	h.inFlight.Store(records)
	for {
		m := h.maxInFlight.Load()
		if records <= m || h.maxInFlight.CompareAndSwap(m, records) {
			return
		}
	}
}
func (h *shareHooks) OnStuck(_ string, _ sluice.TopicPartition, offset int64, _ time.Duration) {
	h.stuckOffset.Store(offset)
}

// TestShareHooksHealthAndBudget: in share mode the in-flight budget bounds
// what is inside the graph, the record hooks count every record exactly,
// the health check sees the polls and the join, and the stuck detector
// reports a hanging record (failing Live) until it finishes.
func TestShareHooksHealthAndBudget(t *testing.T) {
	t.Parallel()
	const topic, group, n, hang, budget = "share-hooks", "share-hooks-g", 200, 7, 10
	b := filledShareBroker(t, topic, group, n)
	unblock := make(chan struct{})
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		out := stages.Pool(in, 8, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
			if r.Offset == hang {
				<-unblock
			}
			return r, nil
		})
		return stages.Each(out, func(context.Context, sluice.Record) error { return nil })
	}
	hooks := &shareHooks{}
	hooks.stuckOffset.Store(-1)
	health, err := metrics.NewHealth()
	if err != nil {
		t.Fatal(err)
	}
	// Hooks are called in the order given: health sees a stuck value
	// before hooks records it, so Live is checked after health's update.
	m := startConsumer(t, "m", newShareSource(t, b, group, topic, 0), build,
		pipeline.WithHooks(health, hooks), pipeline.WithMaxInFlight(budget),
		pipeline.WithStuckThreshold(100*time.Millisecond))
	waitFor(t, "offset 7 reported stuck", func() bool { return hooks.stuckOffset.Load() == hang }, m)
	if err := health.Live(); err == nil {
		t.Error("Live passes while offset 7 is stuck")
	}
	close(unblock)
	waitFor(t, "every record acknowledged", func() bool { return shareAcked(t, b, group, topic) }, m)
	waitFor(t, "every record completed", func() bool { return hooks.completed.Load() == n }, m)
	if err := health.Live(); err != nil {
		t.Errorf("Live after the stuck record finished: %v", err)
	}
	if err := health.Ready(); err != nil {
		t.Errorf("Ready: %v", err)
	}
	m.stop(t)
	if got := hooks.delivered.Load(); got != n {
		t.Errorf("OnRecordsDelivered counted %d records, want %d", got, n)
	}
	if got := hooks.completed.Load(); got != n {
		t.Errorf("OnRecordsCompleted counted %d records, want %d", got, n)
	}
	if got := hooks.inFlight.Load(); got != 0 {
		t.Errorf("in flight at the end: %d records, want 0", got)
	}
	if got := hooks.maxInFlight.Load(); got < 1 || got > budget {
		t.Errorf("at most %d records in flight, want 1..%d (WithMaxInFlight)", got, budget)
	}
	if hooks.joins.Load() != 1 || hooks.polls.Load() == 0 {
		t.Errorf("OnJoined %d times, OnPolled %d times: want 1 and some", hooks.joins.Load(), hooks.polls.Load())
	}
}

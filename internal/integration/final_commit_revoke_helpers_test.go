package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// messageWatch is a slog.Handler that sets seen once a record whose
// message contains text is logged; every record then goes on to inner.
type messageWatch struct {
	text  string
	seen  *atomic.Bool
	inner slog.Handler
}

func (h messageWatch) Enabled(context.Context, slog.Level) bool { return true }

func (h messageWatch) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.text) {
		h.seen.Store(true)
	}
	if h.inner.Enabled(ctx, r.Level) {
		return h.inner.Handle(ctx, r)
	}
	return nil
}

func (h messageWatch) WithAttrs(as []slog.Attr) slog.Handler {
	return messageWatch{text: h.text, seen: h.seen, inner: h.inner.WithAttrs(as)}
}

func (h messageWatch) WithGroup(name string) slog.Handler {
	return messageWatch{text: h.text, seen: h.seen, inner: h.inner.WithGroup(name)}
}

// runFranzProtocols runs test, in parallel, as a subtest per protocol
// of protocols (a slice of franzProtocols), named for it.
func runFranzProtocols(t *testing.T, protocols []franzProtocol, test func(t *testing.T, protocol string, protoOpts []kgo.Opt)) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			test(t, p.name, p.opts)
		})
	}
}

// controlCommits hands every OffsetCommit request b receives to answer,
// from b's control loop (answer may SleepControl): b sends the response
// answer returns, or processes the request as usual if that is nil.
func controlCommits(b *kafkatest.Broker, answer func(*kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse) {
	b.Cluster().ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		if resp := answer(r.(*kmsg.OffsetCommitRequest)); resp != nil {
			return resp, nil, true
		}
		return nil, nil, false
	})
}

// revokeWatchLogger returns a logger that sets seen once the source logs
// a revoke while stopping, and passes every record on to the test's
// logger (kafkatest.Logger), if any.
func revokeWatchLogger(t testing.TB, seen *atomic.Bool) *slog.Logger {
	inner := slog.DiscardHandler
	if l := kafkatest.Logger(t); l != nil {
		inner = l.Handler()
	}
	return slog.New(messageWatch{text: "partitions revoked while stopping", seen: seen, inner: inner})
}

// newFranzA returns the franz source of consumer A on r's topic and
// group: client ID "A", heartbeats every 100ms, a session timeout of 6s,
// then opts; commits only at the end (an hour's interval), within
// closeTimeout (zero: the default), logging to log.
func newFranzA(t testing.TB, r *faultRun, closeTimeout time.Duration, log *slog.Logger, opts ...kgo.Opt) *franz.Source {
	src, err := franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{
		Brokers: r.b.Addrs(), Group: r.group, Topics: []string{r.topic}, CommitInterval: time.Hour, CloseTimeout: closeTimeout,
		Logger: log,
	}, Opts: append([]kgo.Opt{kgo.ClientID("A"), kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(6 * time.Second)}, opts...)})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// startAOwning starts consumer A on src, counting into r, and waits
// until it processed every record of r and owns parts partitions.
func startAOwning(t *testing.T, r *faultRun, src sluice.Source, parts int) *consumer {
	aObs := newCommitLog(r.b, r.group, r.topic)
	a := startConsumer(t, "A", src, countingBuilder("A", r.es, r.seen, nil), pipeline.WithHooks(aObs))
	waitFor(t, "A processing every record", func() bool { return r.seen.distinct() == r.total && aObs.owns() == parts }, a)
	return a
}

// stopResult is how long a consumer's Stop took and what its Run
// returned.
type stopResult struct {
	took time.Duration
	err  error
}

// stopWithFranzJoiner stops A in the background (setting aDone once its
// Run returned) and, once A's final commit was refused (refused closed),
// starts B, a franz consumer of r's group with protoOpts committing
// every hour. It fails t if the refusal does not come within wait or A's
// Run does not return within stopBound, and returns A's result, B's
// counts and B.
func stopWithFranzJoiner(t *testing.T, r *faultRun, a *consumer, aDone *atomic.Bool, refused <-chan struct{}, protoOpts []kgo.Opt) (stopResult, *offsets, *consumer) {
	t.Helper()
	stopped := make(chan stopResult, 1)
	go func() {
		began := time.Now()
		err := a.Stop(t)
		aDone.Store(true)
		stopped <- stopResult{time.Since(began), err}
	}()
	select {
	case <-refused:
	case <-time.After(wait):
		t.Fatalf("A's final commit did not reach the broker within %v", wait)
	}
	bSeen := newOffsets(r.hw)
	bc := startConsumer(t, "B", newFranzSourceEvery(t, r.b, r.group, r.topic, time.Hour, append([]kgo.Opt{kgo.ClientID("B")}, protoOpts...)...),
		countingBuilder("B", r.es, bSeen, nil))
	var res stopResult
	select {
	case res = <-stopped:
	case <-time.After(stopBound):
		t.Fatalf("A's Run did not return within %v of its cancellation:\n%s", stopBound, stacks())
	}
	return res, bSeen, bc
}

// revokeOfARecreatedTopic is the rest of a recreated-topic revoke test
// once A processed the 200 records of r's single-partition topic and
// committed nothing. Every commit of A is answered refuseWith until A
// logs a revoke while stopping (revokeSeen); that one, and any later,
// reaches the group. The first refusal starts the topic's deletion and
// creation again with 300 new records, which completes while the final
// commit is retried. A is stopped; the group must then keep no offset
// of the old topic on the new one, and B, the consumer on newB's
// source, must process all 300 records of the new topic.
func revokeOfARecreatedTopic(t *testing.T, r *faultRun, a *consumer, revokeSeen *atomic.Bool, refuseWith *kerr.Error, newB func() sluice.Source) {
	t.Helper()
	b, group, topic := r.b, r.group, r.topic
	var armed atomic.Bool
	first := make(chan struct{})
	var firstOnce sync.Once
	var mu sync.Mutex
	var commits []string
	controlCommits(b, func(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
		if !armed.Load() || req.Group != group {
			return nil
		}
		pass := revokeSeen.Load()
		line := fmt.Sprintf("gen/epoch %d:", req.Generation)
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				line += fmt.Sprintf(" %s%x/%d@%d", rt.Topic, rt.TopicID[:4], rp.Partition, rp.Offset)
			}
		}
		if !pass {
			line += " (answered " + refuseWith.Message + ")"
		}
		mu.Lock()
		commits = append(commits, line)
		mu.Unlock()
		if pass {
			return nil
		}
		firstOnce.Do(func() { close(first) })
		return refusalByID(req, refuseWith.Code)
	})
	producer, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	recreateErr := make(chan error, 1)
	go func() {
		select {
		case <-first:
		case <-a.Done():
			recreateErr <- errors.New("A's Run returned before its first commit")
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
		defer cancel()
		adm, err := b.Admin()
		if err != nil {
			recreateErr <- err
			return
		}
		if resp, err := adm.DeleteTopics(ctx, topic); err != nil || resp.Error() != nil {
			recreateErr <- fmt.Errorf("delete: %v %v", err, resp.Error())
			return
		}
		for {
			err := b.CreateTopicContext(ctx, topic, 1, nil)
			if err == nil {
				break
			}
			if ctx.Err() != nil || !errors.Is(err, kerr.TopicAlreadyExists) {
				recreateErr <- fmt.Errorf("create: %w", err)
				return
			}
			time.Sleep(50 * time.Millisecond) // the deletion completing: polled, not a synchronisation
		}
		// A new client: one that knew the old topic ID produces to it.
		var recs []*kgo.Record
		for i := range 300 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "new-%d", i)})
		}
		recreateErr <- producer.ProduceSync(ctx, recs...).FirstErr()
	}()

	armed.Store(true)
	took, runErr := a.stopTimed(t)
	armed.Store(false) // the next consumer's commits go through
	if err := <-recreateErr; err != nil {
		t.Fatalf("recreating %s: %v", topic, err)
	}
	left := b.Committed(t, group, topic)
	mu.Lock()
	t.Logf("A stopped in %v: Run = %v; revoke while stopping logged: %v; A's commits: %q; the group keeps %v",
		took, runErr, revokeSeen.Load(), commits, left)
	mu.Unlock()
	if off, ok := left[0]; ok && off != 0 {
		t.Errorf("the group keeps offset %d of partition 0 on the recreated topic, of which nothing was processed: "+
			"the next consumer skips its records 0 to %d (the old topic's final offset committed onto the new topic)", off, off-1)
	}

	// The next consumer of the group must process every record of the
	// new topic.
	newHW := map[int32]int64{0: 300}
	bSeen := newOffsets(newHW)
	bc := startConsumer(t, "B", newB(), countingBuilder("B", r.es, bSeen, nil))
	waitGroupAt(t, b, group, topic, newHW, bc)
	bc.stop(t)
	if n := bSeen.distinct(); n != 300 {
		t.Errorf("the next consumer processed %d of the new topic's 300 records: %d lost", n, 300-n)
	}
}

// processedPer returns how many records o counted per partition,
// repeats included.
func processedPer(o *offsets) map[int32]int64 {
	out := make(map[int32]int64, len(o.n))
	for p, cs := range o.n {
		for i := range cs {
			out[p] += int64(cs[i].Load())
		}
	}
	return out
}

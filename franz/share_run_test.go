package franz

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// shareTopicsBroker returns a broker made by newBroker (kafkatest.NewBroker,
// or kafkatest.NewKfake for a test that controls kfake) with opts, whose
// share groups heartbeat every 100ms on kfake, holding each of topics
// with one partition.
func shareTopicsBroker(t *testing.T, newBroker func(testing.TB, ...kafkatest.BrokerOption) *kafkatest.Broker, topics []string, opts ...kafkatest.BrokerOption) *kafkatest.Broker {
	t.Helper()
	b := newBroker(t, append([]kafkatest.BrokerOption{kafkatest.WithKfakeOptions(kfake.BrokerConfigs(map[string]string{
		"group.share.heartbeat.interval.ms": "100",
	}))}, opts...)...)
	for _, topic := range topics {
		b.CreateTopic(t, topic, 1)
	}
	return b
}

// shareRun is pipeline.Run of a share source of the topic deletion tests,
// started by startShareRun, with what those tests wait on.
type shareRun struct {
	t      *testing.T
	group  string
	driver kafkadriver.ShareDriver
	seen   chan string    // each record the graph reports
	got    map[string]int // how many times each record was seen
	src    *ShareSource
	cancel context.CancelFunc
	done   <-chan error
	// deadline passes recreateWait after Run started; each wait of the
	// run ends there.
	deadline <-chan time.Time
	// await waits until each record it is given was seen
	// (recordAwaiter).
	await func(want ...string)
}

// startShareRun starts pipeline.Run of a share source of cfg.Group (its
// share.auto.offset.reset set to earliest first) made with cfg on b, of
// the graph that graph builds, which reports the records it is given on
// seen.
func startShareRun(t *testing.T, b *kafkatest.Broker, cfg ShareConfig, graph func(seen chan<- string) pipeline.Builder) *shareRun {
	t.Helper()
	r := &shareRun{t: t, group: cfg.Group, seen: make(chan string, 1024), got: map[string]int{}}
	r.driver = kafkadriver.ShareDriver{Broker: b, Source: func(t *testing.T, group, _ string) sluice.Source {
		cfg := cfg
		cfg.Brokers, cfg.Group = b.Addrs(), group
		s, err := NewShareSource(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}}
	src := r.driver.NewShareSource(t, cfg.Group, cfg.Topics[0])
	r.src = src.(*ShareSource)
	r.cancel, r.done = startRun(t, src, graph(r.seen))
	r.deadline = time.After(recreateWait)
	r.await = recordAwaiter(t, r.seen, r.done, r.deadline, recreateWait, r.got)
	return r
}

// reportingGraph is a graph reporting each record it is given on seen
// (topicValueOffset), and finishing it at once.
func reportingGraph(seen chan<- string) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Map(in, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
			seen <- topicValueOffset(r)
			return r, nil
		}))
	}
}

// awaitConsumedAnew waits until the source says, on anew (a
// consumedAnewLogger's channel), that it consumes topic anew; another
// topic first fails the test.
func (r *shareRun) awaitConsumedAnew(anew <-chan string, topic string) {
	r.t.Helper()
	select {
	case got := <-anew:
		if got != topic {
			r.t.Fatalf("consumed %s anew, want %s", got, topic)
		}
	case err := <-r.done:
		r.t.Fatalf("Run returned %v before consuming %s anew", err, topic)
	case <-r.deadline:
		r.t.Fatalf("%s not consumed anew within %v", topic, recreateWait)
	}
}

// wantAcknowledged wants the share group to have acknowledged every
// record of topic's one partition (kafkadriver.ShareDriver.AwaitUnacknowledged).
func (r *shareRun) wantAcknowledged(topic string) {
	r.t.Helper()
	if lag := r.driver.AwaitUnacknowledged(r.t, r.group, topic, map[int32]int64{0: 0}); lag[0] != 0 || len(lag) != 1 {
		r.t.Errorf("share group %s's unacknowledged records of %s = %v, want {0: 0}", r.group, topic, lag)
	}
}

// stop ends Run, which must return nil (stopRun), and counts in got the
// records seen since the last await.
func (r *shareRun) stop() {
	r.t.Helper()
	stopRun(r.t, r.cancel, r.done)
	for len(r.seen) > 0 {
		r.got[<-r.seen]++
	}
}

// deliveredOnce fails the test for each record seen more than once.
func (r *shareRun) deliveredOnce() {
	r.t.Helper()
	for v, n := range r.got {
		if n > 1 {
			r.t.Errorf("record %s delivered %d times, want once", v, n)
		}
	}
}

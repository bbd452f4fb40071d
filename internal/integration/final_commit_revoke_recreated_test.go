package integration

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/source"
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

// TestFinalCommitRevokeOfARecreatedTopicKIP848: A (librdkafka, KIP-848)
// has processed the 200 records of a topic and committed nothing when it
// is stopped. Its final commit is answered STALE_MEMBER_EPOCH (retried;
// every attempt is refused until A logs a revoke while stopping, which
// under KIP-848 it does not) while the topic is deleted and created again
// with 300 new records; the broker then moves the partition by topic ID,
// revoking the old topic's. librdkafka commits by name, so neither that
// revoke nor a retry of the final commit may commit the old topic's
// offset (200) onto the new topic: the group keeps nothing of A, and the
// next consumer processes all 300 records of the new topic.
func TestFinalCommitRevokeOfARecreatedTopicKIP848(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewKfake(t, kafkatest.WithBrokerConfig(map[string]string{"group.consumer.heartbeat.interval.ms": "250"}))
	r := newFaultRun(t, b, "fgen-recreated-848", 1, 200)
	group, topic := r.group, r.topic

	var revokeSeen atomic.Bool
	src, err := source.NewSource(source.Config{
		GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: group, Topics: []string{topic}, CommitInterval: time.Hour, Logger: revokeWatchLogger(t, &revokeSeen)},
		Overrides:   map[string]any{"group.protocol": "consumer", "client.id": "A", "topic.metadata.refresh.interval.ms": 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := startAOwning(t, r, src, 1)
	if c := b.Committed(t, group, topic); len(c) != 0 {
		t.Fatalf("A committed %v; its background commit interval is an hour", c)
	}
	revokeOfARecreatedTopic(t, r, a, &revokeSeen, kerr.StaleMemberEpoch, func() sluice.Source {
		return sourceOf(t, b, group, topic, source.Config{GroupConfig: sluice.GroupConfig{CommitInterval: 50 * time.Millisecond},
			Overrides: map[string]any{"group.protocol": "consumer", "client.id": "B"}})
	})
}

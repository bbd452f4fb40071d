package source

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// librdkafka (v2.11.1) orders the operations on a partition by a version
// each one takes when it is created (rd_kafka_toppar_version_new_barrier)
// and drops one that is served after a newer one ("received outdated
// op"). The application's resume is created on the poll goroutine; when
// it runs while librdkafka's main thread starts the partition just
// assigned (its library resume and fetch start, on the answer to the
// OffsetFetch the assign call sent), it can take an older version than
// theirs and reach the queue after them: it is dropped, and the
// partition, paused by the application, is never fetched again. So a
// partition given up while paused is resumed before it is assigned again,
// when nothing in librdkafka touches it: the resume is served before the
// assign call's first step on the partition (SRVPEND, serving the
// pending assignment).
func TestLostWhilePausedIsResumedBeforeReassign(t *testing.T) {
	for _, strategy := range []string{"cooperative-sticky", "range"} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			lostWhilePausedResumedBeforeReassign(t, strategy)
		})
	}
}

func lostWhilePausedResumedBeforeReassign(t *testing.T, strategy string) {
	b := topicIn(t, kafkatest.NewKfake(t), 1, 300)

	g := newFakeGroup()
	g.pauseEvery = 1 // pause at the first delivery, never released
	src := newSource(t, b, "g", "in", map[string]any{"debug": "cgrp,topic", "partition.assignment.strategy": strategy})
	src.cfg.CommitInterval = time.Hour
	lines := newLogLines(src.log.Handler())
	src.log = slog.New(lines)
	r := start(t, src, g)
	g.waitUntil(t, wait, "a pause", func(f *fakeGroup) bool { return f.pauses > 0 })
	g.with(func(f *fakeGroup) { f.pauseEvery = 0 })

	b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: "g", Err: kerr.IllegalGeneration})
	g.waitUntil(t, wait, "re-delivery of all 300 records", func(f *fakeGroup) bool {
		return len(f.loses) > 0 && len(f.assigns) >= 2 && f.next[TP{Topic: "in", Partition: 0}] == 300
	})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}

	// Run returned: every log line librdkafka wrote was forwarded, in
	// the order librdkafka queued them.
	all := lines.all()
	lost := slices.IndexFunc(all, func(l string) bool { return l == "partitions lost" })
	if lost < 0 {
		t.Fatal("no loss logged")
	}
	after := all[lost:]
	resume := slices.IndexFunc(after, func(l string) bool {
		return strings.HasPrefix(l, "RESUME [thrd:app]: Application resuming")
	})
	pending := slices.IndexFunc(after, func(l string) bool {
		return strings.HasPrefix(l, "SRVPEND ") && strings.Contains(l, "pending assigned partition in [0]")
	})
	if resume < 0 || pending < 0 {
		t.Fatalf("after the loss: application resume at %d, serving of the pending assignment at %d; want both logged", resume, pending)
	}
	if resume > pending {
		t.Errorf("the partition lost while paused was resumed after librdkafka started serving its new assignment:\n%s",
			strings.Join(after[pending:resume+1], "\n"))
	}
}

// logLines is a slog.Handler that keeps the message of every record
// (librdkafka's prefixed with its tag) and passes the record on to next.
type logLines struct {
	next slog.Handler
	mu   *sync.Mutex
	msgs *[]string
}

func newLogLines(next slog.Handler) *logLines {
	return &logLines{next: next, mu: new(sync.Mutex), msgs: new([]string)}
}

func (h *logLines) Enabled(context.Context, slog.Level) bool { return true }

func (h *logLines) Handle(ctx context.Context, rec slog.Record) error {
	msg := rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "tag" {
			msg = a.Value.String() + " " + msg
			return false
		}
		return true
	})
	h.mu.Lock()
	*h.msgs = append(*h.msgs, msg)
	h.mu.Unlock()
	if h.next.Enabled(ctx, rec.Level) {
		return h.next.Handle(ctx, rec)
	}
	return nil
}

func (h *logLines) WithAttrs(as []slog.Attr) slog.Handler {
	return &logLines{next: h.next.WithAttrs(as), mu: h.mu, msgs: h.msgs}
}

func (h *logLines) WithGroup(name string) slog.Handler {
	return &logLines{next: h.next.WithGroup(name), mu: h.mu, msgs: h.msgs}
}

// all returns the messages kept so far, oldest first.
func (h *logLines) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(*h.msgs)
}

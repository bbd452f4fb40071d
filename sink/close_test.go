package sink_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// closeSlack is what Close may take beyond its close timeout: two
// one-second bounds (purged reports, client close) and scheduling.
const closeSlack = 2*time.Second + 500*time.Millisecond

// goneCluster returns the addresses of a cluster that is no longer there.
func goneCluster(t *testing.T) []string {
	t.Helper()
	b := kafkatest.NewBroker(t)
	addrs := b.Addrs()
	b.Close()
	return addrs
}

// closeWithin closes p and fails the test unless Close waited for the
// close timeout and returned within its bound.
func closeWithin(t *testing.T, p *sink.Producer, timeout time.Duration) error {
	t.Helper()
	start := time.Now()
	err := p.Close()
	if took := time.Since(start); took < timeout || took > timeout+closeSlack {
		t.Errorf("Close took %v, want between the close timeout %v and %v", took, timeout, timeout+closeSlack)
	}
	return err
}

// The output cluster is gone: Close waits for its timeout, gives up on the
// messages still queued and names each by the input record it came from;
// the Produce stage's deliveries fail, Run stops at the first record and
// nothing is committed. A second Close returns the same error at once.
func TestCloseGivesUpOnUndeliveredMessages(t *testing.T) {
	t.Parallel()
	const k, timeout = 5, 500 * time.Millisecond
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", 1)
	b.Produce(t, "in", input(1, 0, k)...)
	p, err := sink.NewProducer(sink.ProducerConfig{Brokers: goneCluster(t), CloseTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	build := func(_ *pipeline.Partition, s pipeline.Stream[pipeline.Record]) pipeline.End {
		return sink.Produce(s, p, "out", toMsg)
	}
	r := start(t, newSource(t, b, "g", "in"), build)
	r.WaitUntil(t, fmt.Sprintf("%d messages queued", k), func() bool { return sink.Pending(p) == k })

	err = closeWithin(t, p, timeout)
	var ce *sink.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("Close = %v, want a *sink.CloseError", err)
	}
	var want []sink.UndeliveredMessage
	for i := range int64(k) {
		want = append(want, sink.UndeliveredMessage{Topic: "out", Source: pipeline.TopicPartition{Topic: "in", Partition: 0}, Offset: i})
	}
	got := slices.SortedFunc(slices.Values(ce.Undelivered), func(a, b sink.UndeliveredMessage) int { return int(a.Offset - b.Offset) })
	if ce.Count() != k || ce.Unreported != 0 || ce.Client != nil || !slices.Equal(got, want) {
		t.Errorf("Close = %+v, want the %d messages %v", *ce, k, want)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "sink: closing the producer: 5 messages undelivered after 500ms (to out from in/0@") {
		t.Errorf("Close = %q, want it to count and name the messages", msg)
	}
	if again := p.Close(); again != err {
		t.Errorf("second Close = %v, want the first one's %v", again, err)
	}

	runErr := r.Wait(t)
	var se *pipeline.StageError
	if !errors.As(runErr, &se) || se.Offset != 0 || !errors.Is(runErr, sink.ErrClosed) {
		t.Errorf("Run = %v, want a StageError at offset 0 wrapping sink.ErrClosed", runErr)
	}
	if c := b.Committed(t, "g", "in"); len(c) != 0 {
		t.Errorf("committed %v, want nothing (no delivery succeeded)", c)
	}
}

// A dead-letter call waiting for its report when Close gives up returns an
// error wrapping ErrClosed, and Close names the invalid record.
func TestCloseFailsWaitingDeadLetter(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	p, err := sink.NewProducer(sink.ProducerConfig{Brokers: goneCluster(t), CloseTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	dlErr := make(chan error, 1)
	rec := pipeline.Record{Topic: "in", Partition: 2, Offset: 7, Value: []byte("bad")}
	go func() {
		dlErr <- p.DeadLetter("dlq")(context.Background(), pipeline.DeadLetter{Record: rec, Stage: "decode", Err: errors.New("bad")})
	}()
	pollUntil(t, "the dead letter queued", func() bool { return sink.Pending(p) == 1 })

	err = closeWithin(t, p, timeout)
	want := []sink.UndeliveredMessage{{Topic: "dlq", Source: pipeline.TopicPartition{Topic: "in", Partition: 2}, Offset: 7}}
	var ce *sink.CloseError
	if !errors.As(err, &ce) || !slices.Equal(ce.Undelivered, want) || ce.Count() != 1 {
		t.Errorf("Close = %v, want a CloseError naming %v", err, want)
	}
	if err := <-dlErr; !errors.Is(err, sink.ErrClosed) || !strings.Contains(err.Error(), "dead letter to dlq") {
		t.Errorf("DeadLetter = %v, want an error naming dlq and wrapping sink.ErrClosed", err)
	}
}

// After Close, a dead letter fails at once with ErrClosed.
func TestDeadLetterAfterClose(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	p, err := sink.NewProducer(sink.ProducerConfig{Brokers: b.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close of an idle producer = %v, want nil", err)
	}
	err = p.DeadLetter("dlq")(context.Background(), pipeline.DeadLetter{Record: pipeline.Record{Topic: "in"}, Err: errors.New("bad")})
	if !errors.Is(err, sink.ErrClosed) {
		t.Errorf("DeadLetter after Close = %v, want an error wrapping sink.ErrClosed", err)
	}
}

package franz_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// closeSlack is what Close may take beyond its close timeout: two
// one-second bounds (giving up, closing the client) and scheduling.
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
func closeWithin(t *testing.T, p *franz.Producer, timeout time.Duration) error {
	t.Helper()
	start := time.Now()
	err := p.Close()
	if took := time.Since(start); took < timeout || took > timeout+closeSlack {
		t.Errorf("Close took %v, want between the close timeout %v and %v", took, timeout, timeout+closeSlack)
	}
	return err
}

// The output cluster is gone: Close waits for its timeout, gives up on the
// records kgo still buffers and names each by the input record it came
// from; the Produce stage fails with ErrClosed at the first record and
// nothing is committed. A second Close returns the same error.
func TestCloseGivesUpOnUndeliveredMessages(t *testing.T) {
	t.Parallel()
	const k, timeout = 5, 500 * time.Millisecond
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", 1)
	b.Produce(t, "in", input(1, 0, k)...)
	p, err := franz.NewProducer(franz.ProducerConfig{Brokers: goneCluster(t), CloseTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	r := testkit.Start(t, newSource(t, b, "g", "in"), produceTo(p, "out"))
	r.WaitUntil(t, fmt.Sprintf("%d messages buffered", k), func() bool { return franz.ProducerPending(p) == k })

	err = closeWithin(t, p, timeout)
	var ce *franz.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("Close = %v, want a *franz.CloseError", err)
	}
	var want []franz.UndeliveredMessage
	for i := range int64(k) {
		want = append(want, franz.UndeliveredMessage{Topic: "out", Source: pipeline.TopicPartition{Topic: "in", Partition: 0}, Offset: i})
	}
	got := slices.SortedFunc(slices.Values(ce.Undelivered), func(a, b franz.UndeliveredMessage) int { return int(a.Offset - b.Offset) })
	if ce.Count() != k || ce.Unreported != 0 || ce.Client != nil || !slices.Equal(got, want) {
		t.Errorf("Close = %+v, want the %d messages %v", *ce, k, want)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "franz: closing the producer: 5 messages undelivered after 500ms (to out from in/0@") {
		t.Errorf("Close = %q, want it to count and name the messages", msg)
	}
	if again := p.Close(); again != err {
		t.Errorf("second Close = %v, want the first one's %v", again, err)
	}

	runErr := r.Wait(t)
	var se *pipeline.StageError
	if !errors.As(runErr, &se) || se.Offset != 0 || !errors.Is(runErr, franz.ErrClosed) {
		t.Errorf("Run = %v, want a StageError at offset 0 wrapping franz.ErrClosed", runErr)
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
	p, err := franz.NewProducer(franz.ProducerConfig{Brokers: goneCluster(t), CloseTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	dlErr := make(chan error, 1)
	rec := pipeline.Record{Topic: "in", Partition: 2, Offset: 7, Value: []byte("bad"), Timestamp: time.UnixMilli(1_700_000_000_000)}
	go func() {
		dlErr <- p.DeadLetter("dlq")(context.Background(), pipeline.DeadLetter{Record: rec, Stage: "decode", Err: errors.New("bad")})
	}()
	deadline := time.Now().Add(wait)
	for franz.ProducerPending(p) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the dead letter was not buffered")
		}
		time.Sleep(time.Millisecond) // polling the client's state, outside any Run
	}

	err = closeWithin(t, p, timeout)
	want := []franz.UndeliveredMessage{{Topic: "dlq", Source: pipeline.TopicPartition{Topic: "in", Partition: 2}, Offset: 7}}
	var ce *franz.CloseError
	if !errors.As(err, &ce) || !slices.Equal(ce.Undelivered, want) || ce.Count() != 1 {
		t.Errorf("Close = %v, want a CloseError naming %v", err, want)
	}
	if err := <-dlErr; !errors.Is(err, franz.ErrClosed) || !strings.Contains(err.Error(), "dead letter to dlq") {
		t.Errorf("DeadLetter = %v, want an error naming dlq and wrapping franz.ErrClosed", err)
	}
}

// After Close, a dead letter fails at once with ErrClosed (permanent), and
// a Produce stage stops Run with a StageError wrapping ErrClosed (with
// no offset: the stage sees the closed producer before its first record).
func TestClosedProducer(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", 1)
	b.Produce(t, "in", input(1, 0, 3)...)
	p, err := franz.NewProducer(franz.ProducerConfig{Brokers: b.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close of an idle producer = %v, want nil", err)
	}
	err = p.DeadLetter("dlq")(context.Background(), pipeline.DeadLetter{Record: pipeline.Record{Topic: "in"}, Err: errors.New("bad")})
	if !errors.Is(err, franz.ErrClosed) || !pipeline.IsPermanent(err) {
		t.Errorf("DeadLetter after Close = %v, want a permanent error wrapping franz.ErrClosed", err)
	}
	r := testkit.Start(t, newSource(t, b, "g", "in"), produceTo(p, "out"))
	runErr := r.Wait(t)
	var se *pipeline.StageError
	if !errors.As(runErr, &se) || se.Topic != "in" || !errors.Is(runErr, franz.ErrClosed) || !strings.Contains(runErr.Error(), "producing to out") {
		t.Errorf("Run = %v, want a StageError on in/0 producing to out wrapping franz.ErrClosed", runErr)
	}
}

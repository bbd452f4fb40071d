package producertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/sluice-go/sluice/sink"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// closeSlack is what Close may take beyond its close timeout: two
// one-second bounds (giving up on the reports, closing the client) and
// scheduling.
const closeSlack = 2*time.Second + 500*time.Millisecond

// goneCluster returns the address of a cluster that is no longer there:
// a port that stays reserved for the test (so that no broker started
// meanwhile can take it) and closes every connection at once, as a host
// whose broker is down does.
func goneCluster(t *T) []string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return []string{ln.Addr().String()}
}

// unclosedProducer makes a producer of cfg that the check closes itself.
func (s *suite[P]) unclosedProducer(t *T, cfg Config) P {
	t.Helper()
	p, err := s.h.NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// closeWithin closes p and fails the test unless Close waited for the
// close timeout and returned within its bound.
func (s *suite[P]) closeWithin(t *T, p P, timeout time.Duration) error {
	t.Helper()
	start := time.Now()
	err := p.Close()
	if took := time.Since(start); took < timeout || took > timeout+closeSlack {
		t.Errorf("Close took %v, want between the close timeout %v and %v", took, timeout, timeout+closeSlack)
	}
	return err
}

// closeGivesUp: the output cluster is gone: Close waits for its timeout,
// gives up on the messages the client still holds and names each by the
// input record it came from; the Produce stage fails with ErrClosed at the
// first record and nothing is committed. A second Close returns the same
// error.
func (s *suite[P]) closeGivesUp(t *T) {
	const k, timeout = 5, 500 * time.Millisecond
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", 1)
	b.Produce(t, "in", Input(1, 0, k)...)
	p := s.unclosedProducer(t, Config{Brokers: goneCluster(t), CloseTimeout: timeout})
	r := s.start(t, b, s.produceTo(p, "out"))
	r.WaitUntil(t, fmt.Sprintf("%d messages pending", k), func() bool { return s.h.Pending(p) == k })

	err := s.closeWithin(t, p, timeout)
	var ce *sluice.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("Close = %v, want a *CloseError", err)
	}
	var want []sluice.UndeliveredMessage
	for i := range int64(k) {
		want = append(want, sluice.UndeliveredMessage{Topic: "out", Source: sluice.TopicPartition{Topic: "in", Partition: 0}, Offset: i})
	}
	got := slices.SortedFunc(slices.Values(ce.Undelivered), func(a, b sluice.UndeliveredMessage) int { return int(a.Offset - b.Offset) })
	if ce.Count() != k || ce.Unreported != 0 || ce.Client != nil || !slices.Equal(got, want) {
		t.Errorf("Close = %+v, want the %d messages %v", *ce, k, want)
	}
	prefix := "closing the producer: 5 messages undelivered after 500ms (to out from in/0@"
	if msg := err.Error(); !strings.HasPrefix(msg, prefix) {
		t.Errorf("Close = %q, want it to count and name the messages (%q...)", msg, prefix)
	}
	if again := p.Close(); again != err {
		t.Errorf("second Close = %v, want the first one's %v", again, err)
	}

	runErr := r.Wait(t)
	var se *sluice.StageError
	if !errors.As(runErr, &se) || se.Offset != 0 || !errors.Is(runErr, s.h.ErrClosed) {
		t.Errorf("Run = %v, want a StageError at offset 0 wrapping %v", runErr, s.h.ErrClosed)
	}
	if c := b.Committed(t, "g", "in"); len(c) != 0 {
		t.Errorf("committed %v, want nothing (no delivery succeeded)", c)
	}
}

// closeFailsWaitingDeadLetter: a dead-letter call waiting for its report
// when Close gives up returns an error wrapping ErrClosed, and Close names
// the invalid record.
func (s *suite[P]) closeFailsWaitingDeadLetter(t *T) {
	const timeout = 200 * time.Millisecond
	p := s.unclosedProducer(t, Config{Brokers: goneCluster(t), CloseTimeout: timeout})
	dlErr := make(chan error, 1)
	rec := sluice.Record{Topic: "in", Partition: 2, Offset: 7, Value: []byte("bad"), Timestamp: inputEpoch}
	go func() {
		dlErr <- p.DeadLetter("dlq")(context.Background(), sluice.DeadLetter{Record: rec, Stage: "decode", Err: errors.New("bad")})
	}()
	pollUntil(t, "the dead letter pending", func() bool { return s.h.Pending(p) == 1 })

	err := s.closeWithin(t, p, timeout)
	want := []sluice.UndeliveredMessage{{Topic: "dlq", Source: sluice.TopicPartition{Topic: "in", Partition: 2}, Offset: 7}}
	var ce *sluice.CloseError
	if !errors.As(err, &ce) || !slices.Equal(ce.Undelivered, want) || ce.Count() != 1 {
		t.Errorf("Close = %v, want a CloseError naming %v", err, want)
	}
	if err := <-dlErr; !errors.Is(err, s.h.ErrClosed) || !strings.Contains(err.Error(), "dead letter to dlq") {
		t.Errorf("DeadLetter = %v, want an error naming dlq and wrapping %v", err, s.h.ErrClosed)
	}
}

// closedProducer: after Close, a dead letter fails at once with ErrClosed
// (permanent), and a Produce stage stops Run with a StageError wrapping
// ErrClosed (the backend's, which is also sink.ErrClosed) (with no offset: the stage sees the closed producer before
// its first record).
func (s *suite[P]) closedProducer(t *T) {
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "in", 1)
	b.Produce(t, "in", Input(1, 0, 3)...)
	p := s.unclosedProducer(t, Config{Brokers: b.Addrs()})
	if err := p.Close(); err != nil {
		t.Fatalf("Close of an idle producer = %v, want nil", err)
	}
	err := p.DeadLetter("dlq")(context.Background(), sluice.DeadLetter{Record: sluice.Record{Topic: "in"}, Err: errors.New("bad")})
	if !errors.Is(err, s.h.ErrClosed) || !errors.Is(err, sink.ErrClosed) || !sluice.IsPermanent(err) {
		t.Errorf("DeadLetter after Close = %v, want a permanent error wrapping %v and sink.ErrClosed", err, s.h.ErrClosed)
	}
	r := s.start(t, b, s.produceTo(p, "out"))
	runErr := r.Wait(t)
	var se *sluice.StageError
	if !errors.As(runErr, &se) || se.Topic != "in" || !errors.Is(runErr, s.h.ErrClosed) || !errors.Is(runErr, sink.ErrClosed) ||
		!strings.Contains(runErr.Error(), "producing to out") {
		t.Errorf("Run = %v, want a StageError on in/0 producing to out wrapping %v and sink.ErrClosed", runErr, s.h.ErrClosed)
	}
}

// pollUntil checks cond every millisecond until it holds, failing the
// test after wait; it is for the state of a client outside any Run.
func pollUntil(t *T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("%s: not reached after %v", what, wait)
		}
	}
}

package franz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/testkit"
)

// roomProducer returns a producer with no broker (what kgo takes stays
// buffered until Close gives up: the delivery timeout is an hour) whose own bounds are records and bytes
// (0: none), kgo's being far larger, so that kgo's Produce never waits;
// its buffer is filled with the messages of fill by a stage's SendChunk.
func roomProducer(t *testing.T, records, bytes int64, fill []produce.Outgoing) *Producer {
	t.Helper()
	p, err := NewProducer(ProducerConfig{Brokers: []string{"127.0.0.1:1"}, CloseTimeout: 100 * time.Millisecond, DeliveryTimeout: time.Hour,
		Opts: []kgo.Opt{kgo.MaxBufferedRecords(1000), kgo.MaxBufferedBytes(1 << 20)}})
	if err != nil {
		t.Fatal(err)
	}
	p.maxRecords, p.maxBytes = records, bytes
	p.first.joined = make(chan struct{}, 100)
	if len(fill) > 0 {
		if n, err := (client{p}).SendChunk(context.Background(), fill, make(chan produce.Event, len(fill))); n != len(fill) || err != nil {
			t.Fatalf("SendChunk of %d into an empty buffer = %d, %v", len(fill), n, err)
		}
	}
	return p
}

// sized returns n messages to out of size bytes each.
func sized(n, size int) []produce.Outgoing {
	os := make([]produce.Outgoing, n)
	for i := range os {
		os[i] = produce.Outgoing{Topic: "out", Message: sluice.Message{Value: bytes.Repeat([]byte{'v'}, size)}}
	}
	return os
}

// deadLetterOf starts a dead letter's Send of size bytes and returns once
// it went in (or failed) or joined the line of dead letters waiting; its
// error comes on the channel returned.
func deadLetterOf(t *testing.T, ctx context.Context, p *Producer, size int) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		o := produce.Outgoing{Topic: "dlq", Message: sluice.Message{Value: bytes.Repeat([]byte{'d'}, size)}}
		done <- (client{p}).Send(ctx, &o, make(chan produce.Event, 1))
	}()
	select {
	case err := <-done:
		done <- err
	case <-p.first.joined:
	case <-time.After(testkit.WaitTimeout):
		t.Fatalf("the dead letter of %d bytes neither went in nor waited", size)
	}
	return done
}

// waitJoined returns once a dead letter joined p's line of dead letters
// waiting for room.
func waitJoined(t *testing.T, p *Producer) {
	t.Helper()
	select {
	case <-p.first.joined:
	case <-time.After(testkit.WaitTimeout):
		t.Fatal("the dead letter never waited for room")
	}
}

// freeRoom does what a report does for a record of size bytes: the
// promise's count and wake-up. The record stays in kgo (no broker), so
// its count comes back (unfree) before Close reports it.
func freeRoom(p *Producer, size int64) {
	p.buffered.add(-1, -size)
	p.roomFreed()
}

func unfree(p *Producer, records, bytes int64) { p.buffered.add(records, bytes) }

// firstCounts are the records and bytes kept for the dead letters waiting.
func firstCounts(p *Producer) (int64, int64) {
	p.reserve.Lock()
	defer p.reserve.Unlock()
	return int64(len(p.first.line)), p.first.bytes
}

// A dead letter that waits for room until its context ends returns the
// context's cause, as the dead-letter destination's contract has it
// (produce's sendDeadLetter returns context.Cause(ctx) when the wait for
// a full queue ends with ctx, and the librdkafka producer does): not a
// send error wrapping it.
func TestDeadLetterWaitingForRoomReturnsTheContextsCause(t *testing.T) {
	errDrain := errors.New("drain timed out")
	dl := sluice.DeadLetter{Record: sluice.Record{Topic: "in", Offset: 7, Value: []byte("bad")}, Stage: "decode", Err: errors.New("bad")}
	t.Run("ended before", func(t *testing.T) {
		p := roomProducer(t, 2, 0, sized(2, 1))
		defer closeGivingUp(t, p)
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errDrain)
		if err := p.DeadLetter("dlq")(ctx, dl); err != errDrain {
			t.Errorf("dead letter with the buffer full and its context ended returned %q, want the context's cause %q", err, errDrain)
		}
	})
	t.Run("ended while waiting", func(t *testing.T) {
		p := roomProducer(t, 2, 0, sized(2, 1))
		defer closeGivingUp(t, p)
		ctx, cancel := context.WithCancelCause(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.DeadLetter("dlq")(ctx, dl) }()
		waitJoined(t, p)
		cancel(errDrain)
		if err := <-done; err != errDrain {
			t.Errorf("dead letter waiting for room until its context ended returned %q, want the context's cause %q", err, errDrain)
		}
	})
}

// A dead letter larger than kgo.MaxBufferedBytes can never fit the
// buffer: it fails at once with MESSAGE_TOO_LARGE, whatever the buffer
// holds, instead of waiting (ahead of the stages) for a record's room it
// does not need, here until its context ends.
func TestDeadLetterLargerThanTheBufferFailsAtOnceWithItsRecordsFull(t *testing.T) {
	p, err := NewProducer(ProducerConfig{Brokers: []string{"127.0.0.1:1"}, CloseTimeout: 100 * time.Millisecond, DeliveryTimeout: time.Hour,
		Opts: []kgo.Opt{kgo.MaxBufferedRecords(100), kgo.MaxBufferedBytes(64)}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeGivingUp(t, p)
	p.maxRecords = 2 // kgo's Produce never waits: it holds 100
	if n, err := (client{p}).SendChunk(context.Background(), sized(2, 1), make(chan produce.Event, 2)); n != 2 || err != nil {
		t.Fatalf("SendChunk of 2 into an empty buffer of 2 = %d, %v", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rec := sluice.Record{Topic: "in", Offset: 7, Value: make([]byte, 200)}
	err = p.DeadLetter("dlq")(ctx, sluice.DeadLetter{Record: rec, Stage: "decode", Err: errors.New("bad")})
	if !errors.Is(err, kerr.MessageTooLarge) || ctx.Err() != nil {
		t.Fatalf("dead letter of 200 B with kgo.MaxBufferedBytes(64) and the buffer's records full: %v (its context: %v); want MESSAGE_TOO_LARGE at once", err, ctx.Err())
	}
}

// A dead letter waiting for room is not passed over by dead letters
// that came after it (another partition's): while it waits, the stages
// leave it the room, and the room freed must reach it, not go to later,
// smaller dead letters one report after the other while it and every
// Produce stage wait.
func TestWaitingDeadLetterIsNotPassedByLaterOnes(t *testing.T) {
	// 100 bytes, as ten stage records of 10.
	p := roomProducer(t, 0, 100, sized(10, 10))
	defer closeGivingUp(t, p)
	big := deadLetterOf(t, context.Background(), p, 60)
	freed, later, stageRefused := int64(0), 0, 0
	for range 10 {
		freeRoom(p, 10)
		freed++
		// Another partition's dead letter of 10 bytes.
		small := deadLetterOf(t, context.Background(), p, 10)
		select {
		case err := <-small:
			if err != nil {
				t.Fatalf("a later dead letter: %v", err)
			}
			later++
		default:
		}
		if n, _ := (client{p}).SendChunk(context.Background(), sized(1, 1), make(chan produce.Event, 1)); n == 0 {
			stageRefused++
		}
	}
	select {
	case err := <-big:
		if err != nil {
			t.Errorf("the dead letter of 60 bytes: %v", err)
		}
	case <-time.After(5 * time.Second): // it would have gone in at the sixth report
		t.Errorf("%d bytes were freed by reports while a dead letter of 60 bytes waited; it still waits: %d later dead letters of 10 bytes went in ahead of it, and a stage's send found the buffer full %d times of 10",
			10*freed, later, stageRefused)
	}
	unfree(p, freed, 10*freed)
}

// Dead letters waiting at once (from several partitions) go in one per
// record of room freed, each ahead of the stages; the stages get room
// again once none waits, and nothing stays kept for them.
func TestDeadLettersWaitingTogetherEachGoInAheadOfTheStages(t *testing.T) {
	p := roomProducer(t, 2, 0, sized(2, 1))
	defer closeGivingUp(t, p)
	var dones []<-chan error
	for range 3 {
		dones = append(dones, deadLetterOf(t, context.Background(), p, 4))
	}
	for i := range 3 {
		freeRoom(p, 1)
		select {
		case err := <-dones[i]:
			if err != nil {
				t.Errorf("dead letter %d's Send: %v", i, err)
			}
		case <-time.After(testkit.WaitTimeout):
			t.Fatalf("dead letter %d did not go in after %d records of room were freed", i, i+1)
		}
		for _, d := range dones[i+1:] {
			if len(d) > 0 {
				t.Fatalf("a dead letter after the %d first went in with %d records of room freed", i+1, i+1)
			}
		}
		if n, err := (client{p}).SendChunk(context.Background(), sized(1, 1), make(chan produce.Event, 1)); n != 0 || err != errBufferFull {
			t.Fatalf("a stage's SendChunk with %d dead letters in and the buffer full = %d, %v; want 0, errBufferFull", i+1, n, err)
		}
	}
	if r, b := firstCounts(p); r != 0 || b != 0 || p.first.waiting.Load() != 0 {
		t.Errorf("%d records of %d bytes kept for dead letters once all went in, want none", r, b)
	}
	freeRoom(p, 1)
	if n, err := (client{p}).SendChunk(context.Background(), sized(1, 1), make(chan produce.Event, 1)); n != 1 || err != nil {
		t.Errorf("a stage's SendChunk with a record of room and no dead letter waiting = %d, %v; want 1, nil", n, err)
	}
	unfree(p, 3, 3)
}

// A dead letter that gives up while others wait takes only its own
// room out: the others still go in ahead of the stages, and the stages
// are not held back by what it kept.
func TestDeadLetterGivingUpAmongOthersLeavesOnlyItsRoom(t *testing.T) {
	p := roomProducer(t, 2, 10, sized(2, 1))
	defer closeGivingUp(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	leaving := deadLetterOf(t, ctx, p, 3)
	staying := deadLetterOf(t, context.Background(), p, 4)
	cancel()
	if err := <-leaving; err != errBufferFull {
		t.Fatalf("the dead letter whose context ended returned %v, want errBufferFull (nothing taken: its caller returns the context's cause)", err)
	}
	if r, b := firstCounts(p); r != 1 || b != 4 {
		t.Fatalf("%d records of %d bytes kept for dead letters with one of 4 bytes waiting, want 1 of 4", r, b)
	}
	freeRoom(p, 1)
	select {
	case err := <-staying:
		if err != nil {
			t.Fatalf("the dead letter still waiting: %v", err)
		}
	case <-time.After(testkit.WaitTimeout):
		t.Fatal("the dead letter still waiting was not woken by the room freed")
	}
	freeRoom(p, 1)
	if n, err := (client{p}).SendChunk(context.Background(), sized(1, 1), make(chan produce.Event, 1)); n != 1 || err != nil {
		t.Errorf("a stage's SendChunk with a record of room and no dead letter waiting = %d, %v; want 1, nil", n, err)
	}
	unfree(p, 2, 2)
}

// Bytes-only bounds: a waiting dead letter keeps its bytes out of the
// stages' reach (their messages fit only beside it), goes in when the
// bytes freed make it fit, and leaves nothing kept.
func TestDeadLetterWaitingForBytesKeepsThemFromTheStages(t *testing.T) {
	p := roomProducer(t, 0, 10, sized(10, 1))
	defer closeGivingUp(t, p)
	done := deadLetterOf(t, context.Background(), p, 4)
	for range 3 {
		freeRoom(p, 1)
	}
	// 7 bytes buffered, 4 kept: a stage's byte does not fit.
	if n, err := (client{p}).SendChunk(context.Background(), sized(1, 1), make(chan produce.Event, 1)); n != 0 || err != errBufferFull {
		t.Fatalf("a stage's SendChunk of 1 byte with 7 of 10 buffered and a dead letter of 4 waiting = %d, %v; want 0, errBufferFull", n, err)
	}
	freeRoom(p, 1)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the dead letter: %v", err)
		}
	case <-time.After(testkit.WaitTimeout):
		t.Fatal("the dead letter of 4 bytes still waits with 6 of 10 buffered")
	}
	if _, b := p.buffered.load(); b != 10 {
		t.Errorf("%d bytes buffered, want 10", b)
	}
	if r, b := firstCounts(p); r != 0 || b != 0 {
		t.Errorf("%d records of %d bytes kept for dead letters once it went in, want none", r, b)
	}
	unfree(p, 4, 4)
}

// Close while a dead letter waits and a stage finds the buffer full: the
// dead letter returns ErrClosed (permanent), the stage's next send too,
// nothing stays kept, and what kgo buffered is given up on.
func TestCloseWhileADeadLetterWaitsAndTheStagesFindTheBufferFull(t *testing.T) {
	p := roomProducer(t, 2, 0, sized(2, 1))
	dl := make(chan error, 1)
	go func() {
		rec := sluice.Record{Topic: "in", Offset: 3, Value: []byte("bad")}
		dl <- p.DeadLetter("dlq")(context.Background(), sluice.DeadLetter{Record: rec, Stage: "decode", Err: errors.New("bad")})
	}()
	waitJoined(t, p)
	if n, err := (client{p}).SendChunk(context.Background(), sized(1, 1), make(chan produce.Event, 1)); n != 0 || err != errBufferFull {
		t.Fatalf("a stage's SendChunk with the buffer full = %d, %v; want 0, errBufferFull", n, err)
	}
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-dl:
		if !errors.Is(err, ErrClosed) || !sluice.IsPermanent(err) {
			t.Errorf("the waiting dead letter at Close returned %v, want a permanent error wrapping ErrClosed", err)
		}
	case <-time.After(testkit.WaitTimeout):
		t.Fatal("the dead letter went on waiting after Close started")
	}
	var cerr *sluice.CloseError
	if err := <-closed; !errors.As(err, &cerr) {
		t.Errorf("Close: %v, want a *sluice.CloseError", err)
	}
	if n, err := (client{p}).SendChunk(context.Background(), sized(1, 1), make(chan produce.Event, 1)); n != 0 || !errors.Is(err, ErrClosed) {
		t.Errorf("a stage's SendChunk after Close = %d, %v; want 0, ErrClosed", n, err)
	}
	if r, b := firstCounts(p); r != 0 || b != 0 || p.first.waiting.Load() != 0 {
		t.Errorf("%d records of %d bytes kept for dead letters after Close, want none", r, b)
	}
	if r, b := p.buffered.load(); r != 0 || b != 0 {
		t.Errorf("%d records of %d bytes counted buffered after Close gave up on them, want none", r, b)
	}
}

// traffic is Produce stages keeping a producer's buffer full (each
// sending again as soon as a report of its own or QueueFullWait lets it,
// as a Produce stage does) and dead letters sent from several goroutines
// (a partition's dead-letter goroutine each), one at a time, each waiting
// for its report; every fifth is first sent with its partition's context
// ended (it goes in if there is room, else leaves at once, taking out the
// room it kept) and then again.
type traffic struct {
	p                    *Producer
	maxRecords, maxBytes int64
	ended                context.Context
	// reported counts the delivery reports read; closed the sends Close
	// refused.
	reported, closed atomic.Int64

	mu   sync.Mutex
	errs []error
}

func newTraffic(p *Producer, maxRecords, maxBytes int64) *traffic {
	ended, end := context.WithCancel(context.Background())
	end()
	return &traffic{p: p, maxRecords: maxRecords, maxBytes: maxBytes, ended: ended}
}

func (tf *traffic) fail(err error) {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	if len(tf.errs) < 20 {
		tf.errs = append(tf.errs, err)
	}
}

// overfilled checks that the receivers never reserved more than kgo
// buffers (kgo's Produce would wait for room, deaf to the partition's
// end).
func (tf *traffic) overfilled() {
	if r, b := tf.p.buffered.load(); r > tf.maxRecords || b > tf.maxBytes {
		tf.fail(fmt.Errorf("%d records of %d bytes counted buffered, over %d of %d", r, b, tf.maxRecords, tf.maxBytes))
	}
}

// read takes a delivery report as a receiver does; one failed after
// Close started is expected.
func (tf *traffic) read(what string, ev produce.Event) {
	_, err, _ := (client{tf.p}).Report(ev)
	gaveUp := (client{tf.p}).GaveUp(err)
	if err != nil && !gaveUp {
		tf.fail(fmt.Errorf("%s: delivery: %w", what, err))
	}
	tf.p.tr.Failed(gaveUp, sluice.UndeliveredMessage{Topic: what, Offset: -1})
	tf.reported.Add(1)
}

// stage sends n messages (sizes from 1 to 40 bytes) as Produce stage s,
// until ctx ends or Close refuses them, and reads every report due.
func (tf *traffic) stage(ctx context.Context, s, n int) {
	const room = 4
	p := tf.p
	reports := make(chan produce.Event, room)
	outstanding, next := 0, 0
	for next < n || outstanding > 0 {
		if next < n && outstanding < room {
			part := sized(min(n-next, room-outstanding), 1+(s*7+next)%40)
			k, err := (client{p}).SendChunk(ctx, part, reports)
			tf.overfilled()
			next += k
			outstanding += k
			switch {
			case err == nil || k > 0:
				continue
			case errors.Is(err, ErrClosed):
				tf.closed.Add(1)
				n = next // nothing more to send: wait for the reports due
			case err != errBufferFull:
				tf.fail(fmt.Errorf("stage %d: %w", s, err))
				return
			}
		}
		select {
		case ev := <-reports:
			tf.read(fmt.Sprintf("stage %d", s), ev)
			outstanding--
		case <-time.After(produce.QueueFullWait):
		case <-p.tr.Gone():
			if outstanding > 0 && len(reports) == 0 {
				tf.fail(fmt.Errorf("stage %d: %d reports never came before kgo's client closed", s, outstanding))
				return
			}
		case <-ctx.Done():
			tf.fail(fmt.Errorf("stage %d: %d of %d sent, %d outstanding when the test's time ran out", s, next, n, outstanding))
			return
		}
	}
}

// deadLetters sends n dead letters (sizes from 1 to 60 bytes) from
// goroutine d, until ctx ends or Close refuses one.
func (tf *traffic) deadLetters(ctx context.Context, d, n int) {
	p := tf.p
	report := make(chan produce.Event, 1)
	send := func(ctx context.Context, o *produce.Outgoing) error {
		err := (client{p}).Send(ctx, o, report)
		if err == nil {
			tf.overfilled()
		}
		return err
	}
	for i := range n {
		o := produce.Outgoing{Topic: "dlq", Message: sluice.Message{Value: bytes.Repeat([]byte{'d'}, 1+(d*13+i)%60)}}
		err := errBufferFull
		if i%5 == 0 {
			if err = send(tf.ended, &o); err != nil && err != errBufferFull && !errors.Is(err, ErrClosed) {
				tf.fail(fmt.Errorf("dead letter %d/%d with its context ended: %w", d, i, err))
				return
			}
		}
		if err != nil {
			err = send(ctx, &o)
		}
		switch {
		case errors.Is(err, ErrClosed):
			tf.closed.Add(1)
			return
		case err != nil:
			tf.fail(fmt.Errorf("dead letter %d/%d: %w", d, i, err))
			return
		}
		select {
		case ev := <-report:
			tf.read(fmt.Sprintf("dead letter %d/%d", d, i), ev)
		case <-p.tr.Gone():
			if len(report) == 0 {
				tf.fail(fmt.Errorf("dead letter %d/%d: its report never came before kgo's client closed", d, i))
				return
			}
		case <-ctx.Done():
			tf.fail(fmt.Errorf("dead letter %d/%d: no report when the test's time ran out", d, i))
			return
		}
	}
}

// run runs stages stages of perStage messages and deadLetterers
// goroutines of perDeadLetterer dead letters; done is closed once all
// returned.
func (tf *traffic) run(ctx context.Context, stages, perStage, deadLetterers, perDeadLetterer int) (done <-chan struct{}) {
	var wg sync.WaitGroup
	for s := range stages {
		wg.Go(func() { tf.stage(ctx, s, perStage) })
	}
	for d := range deadLetterers {
		wg.Go(func() { tf.deadLetters(ctx, d, perDeadLetterer) })
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	return all
}

// check reports the errors seen, and that nothing is counted buffered or
// kept for dead letters.
func (tf *traffic) check(t *testing.T) {
	t.Helper()
	tf.mu.Lock()
	for _, err := range tf.errs {
		t.Error(err)
	}
	tf.mu.Unlock()
	if r, b := tf.p.buffered.load(); r != 0 || b != 0 {
		t.Errorf("%d records of %d bytes counted buffered once all were reported, want none", r, b)
	}
	if r, b := firstCounts(tf.p); r != 0 || b != 0 || tf.p.first.waiting.Load() != 0 {
		t.Errorf("%d records of %d bytes kept for dead letters once none sends, want none", r, b)
	}
}

// Stages keeping the buffer full and dead letters from several
// goroutines, on a broker: every dead letter goes in (none waits for a
// wake-up that never comes), the stages' records all go out too, the
// buffer is never overfilled, and once everything is reported nothing is
// counted buffered or kept.
func TestDeadLettersAmongStagesKeepingTheBufferFullAllGoIn(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "out", "dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const maxRecords, maxBytes = 8, 400
	p, err := NewProducer(ProducerConfig{Brokers: c.ListenAddrs(), Opts: []kgo.Opt{kgo.MaxBufferedRecords(maxRecords), kgo.MaxBufferedBytes(maxBytes)}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeGivingUp(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tf := newTraffic(p, maxRecords, maxBytes)
	<-tf.run(ctx, 3, 400, 3, 60)
	tf.check(t)
	if got, want := tf.reported.Load(), int64(3*400+3*60); got != want {
		t.Errorf("%d reports read, want %d", got, want)
	}
}

// Close while stages keep the buffer full and dead letters wait for room
// (the promise goroutine taking the reservation lock to wake them while
// Close waits for the hand-overs and gives up on what is left): Close
// returns within its bounds, every dead letter waiting returns ErrClosed,
// every report due comes, and nothing stays counted or kept.
func TestCloseAmidDeadLettersAndStagesKeepingTheBufferFull(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "out", "dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const maxRecords, maxBytes = 4, 200
	const closeTimeout = time.Second
	p, err := NewProducer(ProducerConfig{Brokers: c.ListenAddrs(), CloseTimeout: closeTimeout,
		Opts: []kgo.Opt{kgo.MaxBufferedRecords(maxRecords), kgo.MaxBufferedBytes(maxBytes)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tf := newTraffic(p, maxRecords, maxBytes)
	done := tf.run(ctx, 4, 1<<30, 6, 1<<30)
	deadline := time.Now().Add(testkit.WaitTimeout)
	for tf.reported.Load() < 500 {
		if time.Now().After(deadline) {
			t.Fatalf("%d reports before the deadline, want 500", tf.reported.Load())
		}
		time.Sleep(time.Millisecond) // polling the count of reports, with a deadline
	}
	start := time.Now()
	var cerr *sluice.CloseError
	if err := p.Close(); err != nil && !errors.As(err, &cerr) {
		t.Errorf("Close: %v", err)
	}
	if took, bound := time.Since(start), closeTimeout+2*time.Second; took > bound {
		t.Errorf("Close took %v, want at most %v", took, bound)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("stages or dead letters still sending 10s after Close returned (%d reports read, %d sends refused)", tf.reported.Load(), tf.closed.Load())
	}
	tf.check(t)
	if got := tf.closed.Load(); got != 4+6 {
		t.Errorf("%d senders refused with ErrClosed, want all 10", got)
	}
}

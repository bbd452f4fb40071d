package testkit

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
)

// Harness runs pipeline.Run over a [Fake] for one test, so a user can unit
// test their graph with no broker. It works inside testing/synctest
// bubbles (create it inside the bubble), where its waits resolve
// instantly and deterministically. Every method fails the test on misuse;
// the harness is stopped at test cleanup, which reports Run's error with
// t.Error unless the test checked it (Stop, Wait) — see [Start].
type Harness struct {
	t       testing.TB
	fake    *Fake
	run     *Running
	timeout time.Duration
}

// WaitTimeout is how long WaitCommitted waits before it fails the test.
// Inside a synctest bubble the clock is fake, so it only fires when every
// goroutine is blocked: a deadlock.
const WaitTimeout = 5 * time.Minute

// New starts pipeline.Run(build, opts...) over a new Fake. The consumer
// holds no partitions until Assign.
func New(t testing.TB, build pipeline.Builder, opts ...pipeline.Option) *Harness {
	t.Helper()
	h := &Harness{t: t, fake: NewFake(), timeout: WaitTimeout}
	h.run = Start(t, h.fake, build, opts...)
	return h
}

// Fake returns the harness's source.
func (h *Harness) Fake() *Fake { return h.fake }

// check fails the test when a control call failed. When the failure comes
// from Run having returned (ErrStopped) or stops it (an Assign whose graph
// failed to build), the message names Run's error once Run returned, when
// it says more than err.
func (h *Harness) check(what string, err error) {
	h.t.Helper()
	if err == nil {
		return
	}
	if what != "Assign" && !errors.Is(err, ErrStopped) {
		h.t.Fatalf("testkit: %s: %v", what, err) // the call's own arguments
	}
	timer := time.NewTimer(h.timeout)
	defer timer.Stop()
	select {
	case <-h.run.Done():
	case <-timer.C:
		h.t.Fatalf("testkit: %s: %v (Run still running after %v)", what, err, h.timeout)
	}
	runErr := h.run.Err() // reported here: the cleanup need not report it again
	if runErr == nil || errors.Is(runErr, err) || runErr.Error() == err.Error() {
		h.t.Fatalf("testkit: %s: %v", what, err)
	}
	h.t.Fatalf("testkit: %s: %v (Run returned: %v)", what, err, runErr)
}

// Assign assigns partitions of topic; it returns once their graphs run.
func (h *Harness) Assign(topic string, partitions ...int32) {
	h.t.Helper()
	h.check("Assign", h.fake.Assign(topic, partitions...))
}

// Send appends values to a partition with consecutive offsets, with no
// key and no headers (see [Harness.SendMessages]).
func (h *Harness) Send(topic string, partition int32, values ...[]byte) {
	h.t.Helper()
	h.check("Send", h.fake.Send(topic, partition, values...))
}

// SendMessages appends records with the key, value and headers of msgs to
// a partition, with consecutive offsets.
func (h *Harness) SendMessages(topic string, partition int32, msgs ...sluice.Message) {
	h.t.Helper()
	h.check("SendMessages", h.fake.SendMessages(topic, partition, msgs...))
}

// SendRecords appends records to their partitions as given, numbering
// those whose Offset is 0 after their partition's last record (see
// [Fake.SendRecords]).
func (h *Harness) SendRecords(recs ...sluice.Record) {
	h.t.Helper()
	h.check("SendRecords", h.fake.SendRecords(recs...))
}

// Revoke revokes partitions gracefully; it returns once the revoke is
// acknowledged (drained, committed, closed).
func (h *Harness) Revoke(topic string, partitions ...int32) {
	h.t.Helper()
	h.check("Revoke", h.fake.Revoke(topic, partitions...))
}

// Lose takes partitions away as lost; it returns once their graphs exited.
func (h *Harness) Lose(topic string, partitions ...int32) {
	h.t.Helper()
	h.check("Lose", h.fake.Lose(topic, partitions...))
}

// Committed returns the partition's committed offset, -1 when none.
func (h *Harness) Committed(topic string, partition int32) int64 {
	return h.fake.Committed(topic, partition)
}

// WaitCommitted blocks until the partition's committed offset is at least
// offset. It fails the test if Run stops first or nothing moves for
// WaitTimeout (a deadlock, inside a synctest bubble).
func (h *Harness) WaitCommitted(topic string, partition int32, offset int64) {
	h.t.Helper()
	h.fake.waitCommitted(h.t, topic, partition, offset, h.timeout, h.run.Done(), func() string {
		return fmt.Sprintf("Run stopped with %v", h.run.Err())
	})
}

// Wait blocks until Run returns by itself (a stage failed) and returns its
// error. It fails the test after WaitTimeout.
func (h *Harness) Wait() error {
	h.t.Helper()
	return h.run.Wait(h.t)
}

// Stop shuts the consumer down gracefully (every partition revoked and
// committed) and returns Run's error, including what the shutdown reported
// (records whose dead-letter deliveries were still failing wrap
// sluice.ErrNotDeadLettered). It is idempotent.
func (h *Harness) Stop() error {
	h.run.stop()
	h.run.checked.Store(true)
	return h.run.err
}

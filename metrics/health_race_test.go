package metrics_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/metrics"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// slowStuckLog is a slog handler that holds the stuck detector's log line
// (with its goroutine dump, the slow part of a stuck report) until
// released, so that a test can complete the value or revoke its partition
// while the report is under way: Health must end up with the partition
// not stuck whichever finishes first.
type slowStuckLog struct {
	logging chan struct{} // receives when the stuck line is being logged
	release chan struct{}
}

func newSlowStuckLog() *slowStuckLog {
	return &slowStuckLog{logging: make(chan struct{}, 1), release: make(chan struct{})}
}

func (h *slowStuckLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *slowStuckLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *slowStuckLog) WithGroup(string) slog.Handler            { return h }
func (h *slowStuckLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "stuck") {
		h.logging <- struct{}{}
		<-h.release
	}
	return nil
}

// revokeSignal closes revoked when a partition revoke is reported.
type revokeSignal struct {
	revoked chan struct{}
}

func (r *revokeSignal) OnPartitionRevoked(sluice.TopicPartition, time.Duration, bool) {
	close(r.revoked)
}

// runStuck starts a pipeline whose only record, offset 0, blocks in its
// stage until unblock is closed, with Health (and more) observing and the
// stuck detector on (threshold 10 s), and returns once the stuck report is
// being logged.
func runStuck(t *testing.T, health *metrics.Health, log *slowStuckLog, unblock chan struct{}, more ...pipeline.Option) *testkit.Harness {
	h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			select {
			case <-unblock:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, stages.Name("write"))
	}, append(more, pipeline.WithHooks(health), pipeline.WithStuckThreshold(10*time.Second), pipeline.WithLogger(slog.New(log)))...)
	h.Assign("t", 0)
	h.Send("t", 0, []byte("x"))
	<-log.logging
	return h
}

// A stuck value that completes while its report is being logged must not
// leave the partition marked stuck: Health would fail liveness forever
// on an idle partition.
func TestStuckReportRacingTheValueCompletingDoesNotStick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		health := newHealth(t, metrics.WithHealthClock(time.Now)) // the bubble's clock
		log := newSlowStuckLog()
		unblock := make(chan struct{})
		h := runStuck(t, health, log, unblock)
		close(unblock)
		h.WaitCommitted("t", 0, 1)
		close(log.release)
		synctest.Wait()
		if err := health.Live(); err != nil {
			t.Fatalf("Live after the stuck value completed: %v", err)
		}
	})
}

// A stuck value whose partition is revoked while its report is being
// logged must not leave the partition marked stuck.
func TestStuckReportRacingARevokeDoesNotStick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		health := newHealth(t, metrics.WithHealthClock(time.Now))
		log := newSlowStuckLog()
		sig := &revokeSignal{revoked: make(chan struct{})}
		h := runStuck(t, health, log, make(chan struct{}), pipeline.WithHooks(sig))
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.Revoke("t", 0) // the drain times out: the value never completes
		}()
		<-sig.revoked // observers were told the partition is gone
		close(log.release)
		<-done
		synctest.Wait()
		if err := health.Live(); err != nil {
			t.Fatalf("Live after the stuck partition was revoked: %v", err)
		}
	})
}

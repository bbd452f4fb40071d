package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestFaultRetriedCommitDoesNotMoveBack: the coordinator answers one
// background commit NOT_COORDINATOR (as a moved coordinator does),
// COORDINATOR_NOT_AVAILABLE or REQUEST_TIMED_OUT, which librdkafka retries
// itself (rd_kafka_handle_OffsetCommit: REFRESH|RETRY, after
// retry.backoff.ms, through its logical coordinator handle). Meanwhile
// more records are processed. No commit request of the member may ask for
// less than an earlier one, and after Run returned the group's commit is
// the high watermark that the shutdown committed. The source sends its
// commits itself, one at a time, because librdkafka's auto-committer goes
// on sending newer offsets while it retries the older commit, which then
// lands last, even after the final commit (librdkafka's close waits for
// the retry): the group would be left at 2000 with 3000 processed, and a
// restart would redo 2000-2999.
//
// The retry backoff is raised to one second so that, were commits sent
// without waiting for one another, newer commits (every 50ms) would
// certainly come first; with the default 100ms it happens only sometimes.
func TestFaultRetriedCommitDoesNotMoveBack(t *testing.T) {
	t.Parallel()
	for _, f := range commitFaults {
		if !f.retried {
			continue
		}
		t.Run(f.name(), func(t *testing.T) {
			t.Parallel()
			retriedCommit(t, f.err)
		})
	}
}

func retriedCommit(t *testing.T, ferr *kerr.Error) {
	const parts, perPartition = 4, 3000
	r := newFaultRun(t, kafkatest.NewKfake(t), "fretry-"+strings.ToLower(strings.ReplaceAll(ferr.Message, "_", "-")), parts, perPartition)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw

	first, second := newGate(), newGate()
	obs := newCommitLog(b, group, topic)
	ov := map[string]any{"retry.backoff.ms": 1000, "retry.backoff.max.ms": 1000}
	a := r.start(t, "A", 50*time.Millisecond, ov, gates{1000: first, 2000: second}, pipeline.WithHooks(obs))
	waitGroupAt(t, b, group, topic, uniform(parts, 1000), a)

	h := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: ferr})
	first.open()
	waitHits(t, h, 1, "the commit of the records up to 2000", a)
	second.open()
	waitGroupAt(t, b, group, topic, hw, a) // the newer commit, sent once the retried one was answered
	a.stop(t)

	r.check(t, once)
	for _, reg := range r.watch.regressions() {
		t.Errorf("commit request moved back: %s", reg)
	}
	r.watch.logIfFailed(t)
}

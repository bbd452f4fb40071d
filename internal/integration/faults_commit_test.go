package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// commitFault is one error the group coordinator answers OffsetCommit
// requests with.
type commitFault struct {
	err *kerr.Error
	// applied: kfake stores the commit and still answers the error, as a
	// Kafka broker can for REQUEST_TIMED_OUT (the commit was written, the
	// answer timed out).
	applied bool
	// retried: librdkafka retries the request itself (REFRESH|RETRY in
	// rd_kafka_handle_OffsetCommit_error, twice, then it defers the commit
	// until the coordinator is back, for up to session.timeout.ms), so a
	// background commit reports only the outcome of the last attempt.
	retried bool
	// loses: librdkafka treats the error as "this member is gone": it
	// drops its assignment as lost and rejoins (rdkafka_cgrp.c,
	// rd_kafka_cgrp_op_handle_OffsetCommit).
	loses bool
}

var commitFaults = []commitFault{
	{err: kerr.CoordinatorNotAvailable, retried: true},
	{err: kerr.NotCoordinator, retried: true},
	{err: kerr.RebalanceInProgress},
	{err: kerr.UnknownMemberID, loses: true},
	{err: kerr.RequestTimedOut, retried: true, applied: true},
}

func (f commitFault) name() string { return f.err.Message }

// slug is a topic/group name part for f.
func (f commitFault) slug() string {
	return strings.ToLower(strings.ReplaceAll(f.err.Message, "_", "-"))
}

// TestFaultBackgroundCommit: the coordinator fails every background
// commit for a while, as records keep being processed. Each partition
// is held at offset 1000 until the group committed 1000 everywhere; then
// the fault starts and the rest is processed. While the fault lasts the
// group's commits stay at 1000 (unless the broker stores the commit while
// answering the error); no commit request ever asks for more than was
// processed; Run keeps going; the source hears the error; once the fault
// is removed the group commits the high watermarks. Without a loss every
// offset is processed exactly once; with UNKNOWN_MEMBER_ID librdkafka
// drops the assignment as lost on every faulted commit and the
// partitions restart exactly at the group's commit.
func TestFaultBackgroundCommit(t *testing.T) {
	eachCase(t, commitFaults, commitFault.name, backgroundCommitFault)
}

func backgroundCommitFault(t *testing.T, f commitFault) {
	const parts, perPartition, hold = 4, 2000, 1000
	r := newFaultRun(t, kafkatest.NewKfake(t), "fbg-"+f.slug(), parts, perPartition)

	g := newGate()
	obs := newCommitLog(r.b, r.group, r.topic)
	a := r.start(t, "A", 50*time.Millisecond, nil, gates{hold: g}, pipeline.WithHooks(obs), pipeline.WithDrainTimeout(5*time.Second))
	waitGroupAt(t, r.b, r.group, r.topic, uniform(parts, hold), a)

	h := r.b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: r.group, Err: f.err, Count: -1})
	g.open()
	waitFor(t, "every record processed", func() bool { return r.seen.distinct() == r.total }, a)
	waitHits(t, h, 3, "background commits", a)
	during := r.b.Committed(t, r.group, r.topic)
	a.stillRunning(t, "the commit fault")
	h.Remove()
	t.Logf("%d commits faulted; the group's commits during the fault: %v", h.Hits(), during)
	if want := uniform(parts, hold); !f.applied && !maps.Equal(during, want) {
		t.Errorf("commits during the fault: %v, want %v (every commit was rejected)", during, want)
	}

	waitGroupAt(t, r.b, r.group, r.topic, r.hw, a)
	a.stillRunning(t, "the recovery")
	lost, revoked := stopCountingLosses(t, a, obs)

	if !f.retried && !anyHasCode(obs.bgErrors(), f.err) {
		t.Errorf("the source never reported a background commit failing with %s; it reported %v", f.err.Message, obs.bgErrors())
	}
	times := once
	if f.loses {
		if lost == 0 {
			t.Errorf("%s on a commit: no partition lost; librdkafka drops the assignment on it", f.err.Message)
		}
		t.Logf("%d partition losses; %d processings in all for %d records", lost, r.seen.total.Load(), r.total)
		times = nil
	} else {
		wantNoLoss(t, lost, revoked)
	}
	r.check(t, times)
}

// TestFaultCommitAtRevoke: B joins while the coordinator fails A's commits,
// so the synchronous commit of the partitions A hands to B fails. A
// commits only synchronously here (its background interval is an hour)
// and has processed every record before B joins, so the revoke's commit is
// the only one that could have saved A's work. A keeps running; the
// source reports the commit's error; B starts each partition it takes
// exactly at the group's commit: from 0 (A's work on it is redone),
// or from the high watermark when the broker stored the commit while
// answering the error. Once the fault is removed and A leaves (its
// shutdown commit succeeds), the group commits the high watermarks.
func TestFaultCommitAtRevoke(t *testing.T) {
	eachCase(t, commitFaults, commitFault.name, revokeCommitFault)
}

func revokeCommitFault(t *testing.T, f commitFault) {
	const parts, perPartition = 4, 1000
	r := newFaultRun(t, kafkatest.NewKfake(t), "frv-"+f.slug(), parts, perPartition)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw
	opts := func(o sluice.Hook) []pipeline.Option {
		return []pipeline.Option{pipeline.WithHooks(o), pipeline.WithDrainTimeout(5 * time.Second)}
	}

	aObs := newCommitLog(b, group, topic)
	a := r.start(t, "A", time.Hour, nil, nil, opts(aObs)...)
	waitFor(t, "A processing every record", func() bool { return r.seen.distinct() == r.total && aObs.owns() == parts }, a)
	if c := b.Committed(t, group, topic); len(c) != 0 {
		t.Fatalf("A committed %v before any revoke; its background commit interval is an hour", c)
	}

	aID := memberID(t, b, group, "A")
	h := b.Cluster().Fault(kfake.Fault{
		Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: f.err, Count: -1,
		When: func(r kmsg.Request) bool { return r.(*kmsg.OffsetCommitRequest).MemberID == aID },
	})
	bObs := newCommitLog(b, group, topic)
	bc := r.start(t, "B", 50*time.Millisecond, nil, nil, opts(bObs)...)
	waitFor(t, "A revoking partitions for B, its commit failing", func() bool {
		return aObs.revoked.Load() > 0 && len(aObs.syncErrors()) > 0 && bObs.owns() > 0 && aObs.owns()+bObs.owns() == parts
	}, a, bc)
	a.stillRunning(t, "the failed revoke commit")
	h.Remove()
	fromA := bObs.ownedSet()
	t.Logf("A's revoke commit failed: %v (%d commits faulted); B took %v", aObs.syncErrors(), h.Hits(), fromA)
	if !anyHasCode(aObs.syncErrors(), f.err) {
		t.Errorf("A's synchronous commit errors %v: none is %s", aObs.syncErrors(), f.err.Message)
	}

	a.stop(t) // its shutdown commit goes through: the fault is gone
	waitGroupAt(t, b, group, topic, hw, bc)
	bc.stop(t)

	r.check(t, nil)
	es := r.es
	// A processed everything once before B joined (a later epoch of A,
	// after a loss, starts at the group's commit like any epoch). B's epochs are
	// exactly [start, hw): from A's failed revoke the start is 0, unless
	// the broker stored the commit anyway; from A's shutdown it is hw.
	es.mu.Lock()
	defer es.mu.Unlock()
	firstOfA := map[int32]bool{}
	for _, e := range es.all {
		e.mu.Lock()
		end, want := e.first+int64(e.n), hw[e.p]
		if e.member == "B" && fromA[e.p] && !f.applied {
			want = 0
		}
		first := e.member == "A" && !firstOfA[e.p]
		if first {
			firstOfA[e.p] = true
		}
		switch {
		case first && (e.start != 0 || e.n != int(hw[e.p])):
			t.Errorf("A/%d: processed %d records from %d, want all %d from 0", e.p, e.n, e.start, hw[e.p])
		case e.member == "B" && !f.loses && e.start != want:
			// (After a loss A rejoins as a new member whose commits
			// are not faulted, and B may take lost partitions: there
			// es.check's start == the group's commit is the rule.)
			t.Errorf("B/%d: started at %d, want %d", e.p, e.start, want)
		case e.member == "B" && e.n > 0 && end != hw[e.p]:
			t.Errorf("B/%d: processed up to %d, want the high watermark %d", e.p, end, hw[e.p])
		}
		e.mu.Unlock()
	}
}

// TestFaultCommitAtShutdown: A has processed everything and committed
// nothing (its background interval is an hour) when it is stopped while
// the coordinator fails commits, once or persistently. Run returns within
// stopBound, nil or an error wrapping the commit's (the final commit's
// failure does not hang the shutdown), and nothing is committed past what
// A processed. A new
// consumer then starts exactly at what the group kept (0 when the
// commit was lost, the high watermark when librdkafka's retry or kfake's
// stored-while-erroring REQUEST_TIMED_OUT saved it), processes the rest
// exactly once and commits the high watermarks.
func TestFaultCommitAtShutdown(t *testing.T) {
	t.Parallel()
	for _, f := range commitFaults {
		for _, count := range []int{1, -1} {
			name := fmt.Sprintf("%s/once", f.name())
			if count < 0 {
				name = fmt.Sprintf("%s/persistent", f.name())
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				shutdownCommitFault(t, f, count)
			})
		}
	}
}

func shutdownCommitFault(t *testing.T, f commitFault, count int) {
	const parts, perPartition = 4, 1000
	r := newFaultRun(t, kafkatest.NewKfake(t), fmt.Sprintf("fsd-%s-%d", f.slug(), count+1), parts, perPartition)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw

	aObs := newCommitLog(b, group, topic)
	a := r.start(t, "A", time.Hour, nil, nil, pipeline.WithHooks(aObs))
	waitFor(t, "A processing every record", func() bool { return r.seen.distinct() == r.total }, a)
	if c := b.Committed(t, group, topic); len(c) != 0 {
		t.Fatalf("A committed %v; its background commit interval is an hour", c)
	}

	h := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: f.err, Count: count})
	took, err := a.stopTimed(t)
	h.Remove()
	left := b.Committed(t, group, topic)
	t.Logf("A stopped in %v: Run = %v; %d commits faulted; sync commit errors %v; the group kept %v",
		took, err, h.Hits(), aObs.syncErrors(), left)
	if err != nil && !hasCode(err, f.err) {
		t.Errorf("A: Run = %v, want nil or an error naming %s", err, f.err.Message)
	}
	if h.Hits() == 0 {
		t.Fatalf("no commit reached the fault: the shutdown did not commit")
	}
	for p := range int32(parts) {
		if c, ok := left[p]; ok && c != hw[p] {
			t.Errorf("partition %d: the group kept %d after A's shutdown, want nothing or the high watermark %d", p, c, hw[p])
		}
	}
	switch {
	case f.applied && !maps.Equal(left, hw):
		t.Errorf("the broker stored every commit it answered %s, yet the group kept %v, want %v", f.err.Message, left, hw)
	case count < 0 && !f.applied && len(left) != 0:
		t.Errorf("every commit was rejected, yet the group kept %v", left)
	case count == 1 && f.retried && !maps.Equal(left, hw):
		t.Errorf("one commit failed with %s, which librdkafka retries, yet the group kept %v, want %v", f.err.Message, left, hw)
	}

	bObs := newCommitLog(b, group, topic)
	bc := r.start(t, "B", 50*time.Millisecond, nil, nil, pipeline.WithHooks(bObs))
	waitGroupAt(t, b, group, topic, hw, bc)
	bc.stop(t)

	// B starts exactly where the group was left.
	r.check(t, func(p int32, off int64) int32 {
		if c, ok := left[p]; ok && off < c {
			return 1
		}
		return 2
	})
}

// TestFaultCoordinatorHangsAtRevoke: the coordinator stops answering A
// (its requests wait at the broker: kfake's SleepControl) from the moment
// A's revoked partitions have drained, so the synchronous commit of the
// revoke gets no answer. The poll loop must not wait for it for ever
// (librdkafka's own request timeout is a minute, then it retries): A's
// revoke gives up within the source's bound, A keeps running, and once the
// coordinator answers again the group settles and commits the high
// watermarks, every ownership starting exactly at the group's commit.
func TestFaultCoordinatorHangsAtRevoke(t *testing.T) {
	t.Parallel()
	const parts, perPartition = 4, 1000
	r := newFaultRun(t, kafkatest.NewKfake(t), "fhang", parts, perPartition)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw
	total, seen, es := r.total, r.seen, r.es

	var bJoined, hang atomic.Bool
	release := make(chan struct{})
	var releaseOnce sync.Once
	unhang := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unhang)
	// The session outlasts the hang, so the broker keeps A as a member.
	ov := map[string]any{"session.timeout.ms": 20000}
	counting := countingBuilder("A", es, seen, nil)
	buildA := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		// Hooks run once the partition's stages exited, right before
		// its final offset is taken and committed.
		p.OnClose(func(context.Context) error {
			if bJoined.Load() {
				hang.Store(true)
			}
			return nil
		})
		return counting(p, in)
	}
	aObs := newCommitLog(b, group, topic)
	a := startConsumer(t, "A", newSourceWith(t, b, group, topic, "A", time.Hour, ov), buildA,
		pipeline.WithHooks(aObs), pipeline.WithDrainTimeout(5*time.Second))
	waitFor(t, "A processing every record", func() bool { return seen.distinct() == total && aObs.owns() == parts }, a)
	aID := memberID(t, b, group, "A")
	var slept atomic.Int64
	b.Cluster().ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		if hang.Load() && r.(*kmsg.OffsetCommitRequest).MemberID == aID {
			slept.Add(1)
			b.Cluster().SleepControl(func() { <-release })
		}
		return nil, nil, false // then the broker answers as usual
	})

	bJoined.Store(true)
	bObs := newCommitLog(b, group, topic)
	bc := r.start(t, "B", 50*time.Millisecond, ov, nil, pipeline.WithHooks(bObs))
	began := time.Now()
	waitFor(t, "A's revoke commit giving up", func() bool { return slept.Load() > 0 && len(aObs.syncErrors()) > 0 }, a, bc)
	t.Logf("A's revoke commit gave up after %v: %v", time.Since(began).Round(time.Millisecond), aObs.syncErrors())
	a.stillRunning(t, "the coordinator hang")
	hang.Store(false)
	unhang()

	waitFor(t, "B getting partitions", func() bool { return bObs.owns() > 0 }, a, bc)
	a.stop(t)
	waitGroupAt(t, b, group, topic, hw, bc)
	bc.stop(t)

	es.checkCounts(t, seen)
	r.check(t, nil)
}

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
	retried := slices.DeleteFunc(slices.Clone(commitFaults), func(f commitFault) bool { return !f.retried })
	eachCase(t, retried, commitFault.name, retriedCommit)
}

func retriedCommit(t *testing.T, f commitFault) {
	const parts, perPartition = 4, 3000
	r := newFaultRun(t, kafkatest.NewKfake(t), "fretry-"+f.slug(), parts, perPartition)
	b, group, topic, hw := r.b, r.group, r.topic, r.hw

	first, second := newGate(), newGate()
	obs := newCommitLog(b, group, topic)
	ov := map[string]any{"retry.backoff.ms": 1000, "retry.backoff.max.ms": 1000}
	a := r.start(t, "A", 50*time.Millisecond, ov, gates{1000: first, 2000: second}, pipeline.WithHooks(obs))
	waitGroupAt(t, b, group, topic, uniform(parts, 1000), a)

	h := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: f.err})
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

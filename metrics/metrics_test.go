package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/metrics"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

func values(vs ...string) [][]byte {
	out := make([][]byte, len(vs))
	for i, v := range vs {
		out[i] = []byte(v)
	}
	return out
}

// A real pipeline over the fake source runs a known scenario, and every
// metric it touches is exact: 10 records, one invalid (dead-lettered),
// two filtered, one transient store failure (retried once), then a
// revoke.
func TestEveryMetricOfAKnownRunIsExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		var mu sync.Mutex
		var stored []int
		failed := false
		build := func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			nums := stages.Map(in, parse, stages.Name("parse"))
			kept := stages.Filter(nums, func(n int) bool { return n%5 != 0 }, stages.Name("filter"))
			return stages.Each(kept, func(_ context.Context, n int) error {
				mu.Lock()
				defer mu.Unlock()
				if n == 7 && !failed {
					failed = true
					return errors.New("database hiccup")
				}
				stored = append(stored, n)
				return nil
			}, stages.Name("store"))
		}
		h := testkit.New(t, build, pipeline.WithHooks(m),
			pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error { return nil }))
		h.Assign("t", 0)
		m.OnHighWatermark(sluice.TopicPartition{Topic: "t", Partition: 0}, 10) // as the Kafka source would
		h.Send("t", 0, values("1", "2", "3", "bad", "4", "5", "6", "10", "7", "8")...)
		h.WaitCommitted("t", 0, 10)

		if fmt.Sprint(stored) != "[1 2 3 4 6 7 8]" {
			t.Fatalf("stored %v", stored)
		}
		const exposition = `
# HELP sluice_records_completed_total Records that became committable: processed, filtered or dead-lettered.
# TYPE sluice_records_completed_total counter
sluice_records_completed_total{topic="t"} 10
# HELP sluice_records_dead_lettered_total Records delivered to the dead-letter destination, by the stage that found them invalid.
# TYPE sluice_records_dead_lettered_total counter
sluice_records_dead_lettered_total{stage="parse",topic="t"} 1
# HELP sluice_records_delivered_total Records the source handed to the partition graphs (consumed).
# TYPE sluice_records_delivered_total counter
sluice_records_delivered_total{topic="t"} 10
# HELP sluice_records_filtered_total Values a stage dropped (stages.Filter).
# TYPE sluice_records_filtered_total counter
sluice_records_filtered_total{stage="filter",topic="t"} 2
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(exposition),
			"sluice_records_delivered_total", "sluice_records_completed_total",
			"sluice_records_filtered_total", "sluice_records_dead_lettered_total"); err != nil {
			t.Error(err)
		}

		// Stages: parse is called for all 10 values, Filter's predicate for
		// the 9 valid ones (every user function a stage exists to call is
		// timed), store for the 7 kept ones plus one retry.
		want(t, reg, 10, "sluice_stage_duration_seconds", "stage", "parse")
		want(t, reg, 9, "sluice_stage_duration_seconds", "stage", "filter")
		want(t, reg, 8, "sluice_stage_duration_seconds", "stage", "store")
		want(t, reg, 1, "sluice_stage_errors_total", "stage", "parse", "kind", "invalid")
		want(t, reg, 0, "sluice_stage_errors_total", "stage", "parse", "kind", "retryable")
		want(t, reg, 1, "sluice_stage_errors_total", "stage", "store", "kind", "retryable")
		want(t, reg, 0, "sluice_stage_errors_total", "stage", "store", "kind", "invalid")
		want(t, reg, 1, "sluice_stage_retries_total", "stage", "store")
		absent(t, reg, "sluice_stage_failures_total")
		absent(t, reg, "sluice_stuck_values_total")

		// In flight: nothing left. Lag: committed up to the high watermark.
		want(t, reg, 0, "sluice_inflight_records")
		want(t, reg, 0, "sluice_inflight_bytes")
		want(t, reg, 0, "sluice_consumer_lag_records", "topic", "t", "partition", "0")
		m.OnHighWatermark(sluice.TopicPartition{Topic: "t", Partition: 0}, 25)
		want(t, reg, 15, "sluice_consumer_lag_records", "topic", "t", "partition", "0")

		// Source: the fake polled, joined once and committed without error.
		want(t, reg, 1, "sluice_group_joins_total")
		if v, _ := sample(t, reg, "sluice_commits_total"); v < 1 {
			t.Errorf("sluice_commits_total = %v, want at least 1", v)
		}
		want(t, reg, 0, "sluice_commit_failures_total")
		if v, _ := sample(t, reg, "sluice_last_poll_timestamp_seconds"); v <= 0 || v > float64(time.Now().UnixNano())/1e9 {
			t.Errorf("sluice_last_poll_timestamp_seconds = %v, want a time up to now (%v)", v, time.Now())
		}

		want(t, reg, 1, "sluice_partitions_assigned_total", "topic", "t")
		want(t, reg, 1, "sluice_partitions_owned", "topic", "t")
		h.Revoke("t", 0)
		want(t, reg, 1, "sluice_partitions_revoked_total", "topic", "t")
		want(t, reg, 0, "sluice_partitions_owned", "topic", "t")
		want(t, reg, 1, "sluice_partition_drain_duration_seconds")
		want(t, reg, 0, "sluice_partition_drain_timeouts_total")
		absent(t, reg, "sluice_consumer_lag_records", "topic", "t", "partition", "0")
		// A watermark after the revoke does not bring the series back.
		m.OnHighWatermark(sluice.TopicPartition{Topic: "t", Partition: 0}, 30)
		absent(t, reg, "sluice_consumer_lag_records")
		absent(t, reg, "sluice_partitions_lost_total")

		if err := h.Stop(); err != nil {
			t.Fatalf("Run: %v", err)
		}
	})
}

// TestBackpressurePauseIsTimed pauses a partition with a one-record queue
// and checks the paused gauge and the seconds accumulated on resume.
func TestBackpressurePauseIsTimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		release := make(chan struct{})
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, holdUntil(0, release))
		}, pipeline.WithHooks(m), pipeline.WithPartitionQueue(2))
		h.Assign("t", 0)
		h.Send("t", 0, values("a", "b", "c")...)
		synctest.Wait()
		want(t, reg, 1, "sluice_partitions_paused", "topic", "t")
		want(t, reg, 3, "sluice_inflight_records")
		// Three one-byte values, each weighing its bytes plus the runtime's
		// per-record overhead.
		want(t, reg, float64(3*(1+pipeline.RecordOverhead)), "sluice_inflight_bytes")
		time.Sleep(3 * time.Second)
		close(release)
		h.WaitCommitted("t", 0, 3)
		synctest.Wait()
		want(t, reg, 0, "sluice_partitions_paused", "topic", "t")
		want(t, reg, 3, "sluice_paused_seconds_total", "topic", "t")
	})
}

// TestStuckValue uses the pipeline's stuck detector: a value blocked in a
// stage counts once, and Health fails liveness until it completes.
func TestStuckValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		health := newHealth(t, metrics.WithPollTimeout(time.Hour))
		release := make(chan struct{})
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, holdUntil(1, release), stages.Name("slow"))
		}, pipeline.WithHooks(m, health), pipeline.WithStuckThreshold(time.Second))
		h.Assign("t", 0)
		h.Send("t", 0, values("a", "b", "c")...)
		time.Sleep(5 * time.Second)
		want(t, reg, 1, "sluice_stuck_values_total", "stage", "slow")
		err := health.Live()
		if err == nil || !strings.Contains(err.Error(), `stage "slow" stuck on t/0 at offset 1`) {
			t.Fatalf("Live() = %v, want the stuck value", err)
		}
		close(release)
		h.WaitCommitted("t", 0, 3)
		if err := health.Live(); err != nil {
			t.Fatalf("Live() after the value completed = %v", err)
		}
		if err := health.Ready(); err != nil {
			t.Fatalf("Ready() = %v", err)
		}
	})
}

// A lost partition's lag series is deleted and the loss counted.
func TestLostPartitionDeletesItsLagAndIsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(in)
		}, pipeline.WithHooks(m))
		h.Assign("t", 0, 1)
		h.Send("t", 1, values("a", "b")...)
		h.WaitCommitted("t", 1, 2)
		// The commit hooks run after the fake recorded the commit: the
		// lag series starts once they did.
		synctest.Wait()
		m.OnHighWatermark(sluice.TopicPartition{Topic: "t", Partition: 1}, 5)
		want(t, reg, 3, "sluice_consumer_lag_records", "topic", "t", "partition", "1")
		absent(t, reg, "sluice_consumer_lag_records", "topic", "t", "partition", "0") // never committed
		h.Lose("t", 1)
		want(t, reg, 1, "sluice_partitions_lost_total", "topic", "t")
		want(t, reg, 1, "sluice_partitions_owned", "topic", "t")
		absent(t, reg, "sluice_consumer_lag_records")
	})
}

// TestStageFailure counts a fatal stage error.
func TestStageFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		health := newHealth(t)
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
				return sluice.Permanent(errors.New("schema mismatch"))
			}, stages.Name("write"))
		}, pipeline.WithHooks(m, health))
		h.Assign("t", 0)
		h.Send("t", 0, values("a")...)
		if err := h.Wait(); err == nil {
			t.Fatal("Run returned nil, want the stage error")
		}
		want(t, reg, 1, "sluice_stage_failures_total", "stage", "write")
		want(t, reg, 1, "sluice_stage_errors_total", "stage", "write", "kind", "permanent")
		absent(t, reg, "sluice_stage_retries_total")
		if err := health.Ready(); err == nil || !strings.Contains(err.Error(), "schema mismatch") {
			t.Fatalf("Ready() = %v, want the stage error", err)
		}
	})
}

// A failed commit is counted but moves no lag: the lag follows the last
// successful commit, and a stale high watermark never makes it negative.
func TestFailedCommitIsCountedAndMovesNoLag(t *testing.T) {
	reg, m := newMetrics(t)
	tp := sluice.TopicPartition{Topic: "t", Partition: 3}
	m.OnPartitionAssigned(tp)
	m.OnHighWatermark(tp, 100)
	absent(t, reg, "sluice_consumer_lag_records") // nothing committed yet
	m.OnCommitted([]sluice.Offset{{TopicPartition: tp, Next: 40}}, 20*time.Millisecond, errors.New("coordinator moved"))
	absent(t, reg, "sluice_consumer_lag_records") // a failed commit is no position
	m.OnCommitted([]sluice.Offset{{TopicPartition: tp, Next: 40}}, 30*time.Millisecond, nil)
	want(t, reg, 60, "sluice_consumer_lag_records", "topic", "t", "partition", "3")
	want(t, reg, 2, "sluice_commits_total")
	want(t, reg, 1, "sluice_commit_failures_total")
	want(t, reg, 2, "sluice_commit_duration_seconds")
	m.OnHighWatermark(tp, 30) // a stale watermark never makes lag negative
	want(t, reg, 0, "sluice_consumer_lag_records", "topic", "t", "partition", "3")
}

func TestPauseEndsOnRevoke(t *testing.T) {
	now := time.Unix(1000, 0)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	tp := sluice.TopicPartition{Topic: "t", Partition: 0}
	m.OnPartitionPaused(tp) // not assigned: ignored
	absent(t, reg, "sluice_partitions_paused")
	m.OnPartitionAssigned(tp)
	m.OnPartitionPaused(tp)
	m.OnPartitionPaused(tp) // twice: one pause
	want(t, reg, 1, "sluice_partitions_paused", "topic", "t")
	now = now.Add(1500 * time.Millisecond)
	m.OnPartitionResumed(tp)
	m.OnPartitionResumed(tp)
	want(t, reg, 1.5, "sluice_paused_seconds_total", "topic", "t")
	m.OnPartitionPaused(tp)
	now = now.Add(2 * time.Second)
	m.OnPartitionRevoked(tp, time.Second, true)
	want(t, reg, 0, "sluice_partitions_paused", "topic", "t")
	want(t, reg, 3.5, "sluice_paused_seconds_total", "topic", "t")
	want(t, reg, 1, "sluice_partition_drain_timeouts_total")
}

// Every poll sets the last poll's timestamp and is counted.
func TestPollSetsLastPollTimestamp(t *testing.T) {
	reg, m := newMetrics(t)
	want(t, reg, 0, "sluice_last_poll_timestamp_seconds")
	m.OnPolled(time.Unix(1700000000, 500_000_000))
	want(t, reg, 1700000000.5, "sluice_last_poll_timestamp_seconds")
	want(t, reg, 1, "sluice_polls_total")
}

// Stage errors are counted by kind (invalid, permanent, panic,
// retryable), and every call's duration observed.
func TestStageErrorsCountedByKind(t *testing.T) {
	reg, m := newMetrics(t)
	tp := sluice.TopicPartition{Topic: "t"}
	m.OnStageCall("s", tp, time.Millisecond, nil)
	m.OnStageCall("s", tp, time.Millisecond, sluice.Invalid(errors.New("x")))
	m.OnStageCall("s", tp, time.Millisecond, fmt.Errorf("wrapped: %w", sluice.Permanent(errors.New("x"))))
	m.OnStageCall("s", tp, time.Millisecond, &sluice.PanicError{Value: "boom"})
	m.OnStageCall("s", tp, time.Millisecond, errors.New("x"))
	m.OnStageCall("s", tp, time.Millisecond, errors.New("y"))
	for kind, n := range map[string]float64{metrics.KindInvalid: 1, metrics.KindPermanent: 1, metrics.KindPanic: 1, metrics.KindRetryable: 2} {
		want(t, reg, n, "sluice_stage_errors_total", "stage", "s", "kind", kind)
	}
	want(t, reg, 6, "sluice_stage_duration_seconds", "stage", "s")
}

func TestRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg); err != nil {
		t.Fatal(err)
	}
	_, err := metrics.New(reg)
	if err == nil || !strings.Contains(err.Error(), "sluice_records_delivered_total") {
		t.Fatalf("second New on one registry: %v, want an error naming the first metric", err)
	}
	// Distinct constant labels make a second consumer registrable.
	// Two consumers with distinct constant labels share a registry.
	shared := prometheus.NewRegistry()
	for _, name := range []string{"a", "b"} {
		if _, err := metrics.New(shared, metrics.WithConstLabels(prometheus.Labels{"pipeline": name})); err != nil {
			t.Fatalf("New with pipeline=%s: %v", name, err)
		}
	}
	// A failed New leaves nothing registered behind.
	reg2 := prometheus.NewRegistry()
	if err := reg2.Register(prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_inflight_bytes", Help: "taken"})); err != nil {
		t.Fatal(err)
	}
	_, err = metrics.New(reg2)
	if err == nil || !strings.Contains(err.Error(), "registering sluice_inflight_bytes") {
		t.Fatalf("New = %v, want an error naming sluice_inflight_bytes", err)
	}
	mfs, _ := reg2.Gather()
	if len(mfs) != 1 {
		t.Fatalf("%d families after a failed New, want only the one registered before", len(mfs))
	}
	if _, err := metrics.New(nil); err == nil {
		t.Fatal("New(nil) succeeded")
	}
	if _, err := metrics.New(prometheus.NewRegistry(), metrics.WithStageBuckets([]float64{1, 1})); err == nil ||
		!strings.Contains(err.Error(), "WithStageBuckets") {
		t.Fatalf("bad buckets: %v", err)
	}
}

// TestLint checks the metric names and help against Prometheus
// conventions.
func TestLint(t *testing.T) {
	reg, m := newMetrics(t)
	tp := sluice.TopicPartition{Topic: "t"}
	m.OnPartitionAssigned(tp)
	m.OnRecordsDelivered(tp, 1)
	m.OnValuesFiltered(tp, "f", 1)
	m.OnRecordDeadLettered(tp, "d")
	m.OnStageCall("s", tp, 0, nil)
	m.OnStageRetry("s", tp, 1, 0, errors.New("x"))
	m.OnStageFailed("s", tp, errors.New("x"))
	m.OnStuck("s", tp, 0, 0)
	m.OnPartitionPaused(tp)
	m.OnPartitionResumed(tp)
	m.OnCommitted([]sluice.Offset{{TopicPartition: tp, Next: 1}}, 0, nil)
	m.OnHighWatermark(tp, 2)
	m.OnPartitionRevoked(tp, 0, false)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestStageCallDoesNotAllocate guards the per-value path.
func TestStageCallDoesNotAllocate(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	tp := sluice.TopicPartition{Topic: "t"}
	m.OnStageCall("enrich", tp, time.Millisecond, nil)
	m.OnValuesFiltered(tp, "filter", 1)
	m.OnRecordsDelivered(tp, 1)
	if n := testing.AllocsPerRun(1000, func() {
		m.OnStageCall("enrich", tp, time.Millisecond, nil)
		m.OnValuesFiltered(tp, "filter", 1)
		m.OnRecordsDelivered(tp, 64)
		m.OnRecordsCompleted(tp, 64, 10)
		m.OnInFlight(10, 100)
	}); n != 0 {
		t.Fatalf("%v allocations per call, want 0", n)
	}
}

func BenchmarkStageCall(b *testing.B) {
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	tp := sluice.TopicPartition{Topic: "t"}
	names := []string{"decode", "enrich", "produce"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.OnStageCall(names[i%3], tp, time.Millisecond, nil)
			i++
		}
	})
}

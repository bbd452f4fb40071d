package metrics_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/metrics"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// A follower's held records and its leaders' offset are gauges per
// partition, deleted when the partition goes.
func TestFollowerGauges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		var lead atomic.Int64
		lead.Store(3)
		leaders := follow.LeadersFunc(func(_ context.Context, tps []pipeline.TopicPartition) (map[pipeline.TopicPartition]int64, error) {
			out := map[pipeline.TopicPartition]int64{}
			for _, tp := range tps {
				out[tp] = lead.Load()
			}
			return out, nil
		})
		fake := testkit.NewFake()
		src, err := follow.New(fake, leaders, follow.WithInterval(100*time.Millisecond), follow.WithHook(m))
		if err != nil {
			t.Fatal(err)
		}
		run := testkit.Start(t, src, func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
			return stages.Discard(in)
		}, pipeline.WithHooks(m))
		if err := fake.Send("orders", 0, []byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e")); err != nil {
			t.Fatal(err)
		}
		if err := fake.Assign("orders", 0); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		want(t, reg, 2, "sluice_follower_held_records", "topic", "orders", "partition", "0")
		want(t, reg, 3, "sluice_follower_leader_offset", "topic", "orders", "partition", "0")
		lead.Store(5)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		want(t, reg, 0, "sluice_follower_held_records", "topic", "orders", "partition", "0")
		want(t, reg, 5, "sluice_follower_leader_offset", "topic", "orders", "partition", "0")
		if err := fake.Revoke("orders", 0); err != nil {
			t.Fatal(err)
		}
		absent(t, reg, "sluice_follower_held_records", "topic", "orders", "partition", "0")
		absent(t, reg, "sluice_follower_leader_offset", "topic", "orders", "partition", "0")
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
	})
}

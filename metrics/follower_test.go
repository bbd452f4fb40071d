package metrics_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/metrics"
)

// A follower's held records and its leaders' offset are gauges per
// partition, deleted when the partition goes.
func TestFollowerGauges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lead atomic.Int64
		lead.Store(3)
		reg, fake, run := startFollower(t, &lead)
		if err := fake.Send("orders", 0, []byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e")); err != nil {
			t.Fatal(err)
		}
		if err := fake.Assign("orders", 0); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		want(t, reg, 2, "sluice_follower_held_records", "topic", "orders", "partition", "0")
		want(t, reg, 3, "sluice_follower_leader_offset", "topic", "orders", "partition", "0")
		want(t, reg, 0, "sluice_follower_lag_records", "topic", "orders", "partition", "0")
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
		absent(t, reg, "sluice_follower_lag_records", "topic", "orders", "partition", "0")
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
	})
}

// sluice_follower_lag_records is the leaders' offset minus the next offset
// the follower has not handed on; it is absent while either is unknown
// (nothing received since the assignment, a leader group with no commit)
// and deleted when the partition goes.
func TestFollowerLagGauge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lead atomic.Int64
		lead.Store(8)
		reg, fake, run := startFollower(t, &lead)
		labels := []string{"topic", "orders", "partition", "0"}
		if err := fake.Assign("orders", 0); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		want(t, reg, 8, "sluice_follower_leader_offset", labels...)
		absent(t, reg, "sluice_follower_lag_records", labels...) // nothing received yet
		if err := fake.Send("orders", 0, []byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		want(t, reg, 3, "sluice_follower_lag_records", labels...)
		lead.Store(-1)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		want(t, reg, -1, "sluice_follower_leader_offset", labels...)
		absent(t, reg, "sluice_follower_lag_records", labels...)
		lead.Store(12)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		want(t, reg, 7, "sluice_follower_lag_records", labels...)
		if err := fake.Revoke("orders", 0); err != nil {
			t.Fatal(err)
		}
		absent(t, reg, "sluice_follower_lag_records", labels...)
		absent(t, reg, "sluice_follower_held_records", labels...)
		if err := fake.Assign("orders", 0); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		want(t, reg, 12, "sluice_follower_leader_offset", labels...)
		want(t, reg, 0, "sluice_follower_held_records", labels...)
		absent(t, reg, "sluice_follower_lag_records", labels...) // a new ownership: nothing received yet
		if err := run.Stop(t); err != nil {
			t.Fatal(err)
		}
		absent(t, reg, "sluice_follower_leader_offset", labels...)
	})
}

// A follower reports a status per delivery: once the partition's series
// exist, OnFollowerStatus does not allocate.
func TestFollowerStatusDoesNotAllocate(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	st := follow.Status{TopicPartition: sluice.TopicPartition{Topic: "orders", Partition: 321}, Leaders: 100, Owned: true}
	m.OnFollowerStatus(st)
	allocs := testing.AllocsPerRun(1000, func() {
		st.Lag = (st.Lag + 1) % 50
		m.OnFollowerStatus(st)
	})
	if allocs != 0 {
		t.Fatalf("OnFollowerStatus allocates %v times per call, want 0", allocs)
	}
}

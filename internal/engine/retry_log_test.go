package engine

import (
	"testing"
	"time"
)

func TestRetryLogAllowsABurstThenOnePerSecondAndCountsTheRest(t *testing.T) {
	var l retryLog
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range retryLogBurst {
		if ok, dropped := l.allow(t0); !ok || dropped != 0 {
			t.Fatalf("warning %d of the burst: allow = %v, %d; want true, 0", i+1, ok, dropped)
		}
	}
	for i := range 5 {
		if ok, _ := l.allow(t0.Add(time.Duration(i) * 100 * time.Millisecond)); ok {
			t.Fatalf("warning %d past the burst within 0.5s was allowed", i+1)
		}
	}
	// 1s after the burst one token is back: the warning says 5 were left out.
	if ok, dropped := l.allow(t0.Add(time.Second)); !ok || dropped != 5 {
		t.Fatalf("after a second: allow = %v, %d; want true, 5", ok, dropped)
	}
	if ok, _ := l.allow(t0.Add(1500 * time.Millisecond)); ok {
		t.Fatal("a second warning within the same second was allowed")
	}
	// A quiet spell refills the whole burst, no more.
	later := t0.Add(time.Hour)
	for i := range retryLogBurst {
		ok, dropped := l.allow(later)
		want := 0
		if i == 0 {
			want = 1
		}
		if !ok || dropped != want {
			t.Fatalf("warning %d after an hour: allow = %v, %d; want true, %d", i+1, ok, dropped, want)
		}
	}
	if ok, _ := l.allow(later); ok {
		t.Fatal("the refilled burst exceeded retryLogBurst")
	}
}

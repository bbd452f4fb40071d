package engine

import (
	"math"
	"math/big"
	"testing"
)

func TestThreeQuartersIsExactUpToMaxInt64(t *testing.T) {
	for _, n := range []int64{0, 1, 2, 3, 4, 5, 7, 1000, 1<<62 - 1, 1 << 62, math.MaxInt64 - 1, math.MaxInt64} {
		want := new(big.Int).Div(new(big.Int).Mul(big.NewInt(n), big.NewInt(3)), big.NewInt(4))
		if got := threeQuarters(n); !want.IsInt64() || got != want.Int64() {
			t.Errorf("threeQuarters(%d) = %d, want %v", n, got, want)
		}
	}
}

// A partition the budget holds back keeps receiving records (the franz
// source hands over whatever kgo fetched) while admission takes records
// from the front of its queue. The queue must then reuse its array
// instead of regrowing and copying it on every delivery: after the first
// round its capacity stays put, and the records keep their order.
func TestWaitingQueueReusesItsArray(t *testing.T) {
	rt := &Group{}
	g := &graph{}
	next := int64(0)
	deliver := func(n int) {
		recs := make([]Record, n)
		for i := range recs {
			recs[i] = Record{Offset: next}
			next++
		}
		rt.waitLocked(g, recs)
	}
	admitted := int64(0)
	admit := func(n int) {
		for i := range n {
			if got := g.waiting[i].Offset; got != admitted {
				t.Fatalf("admitted offset %d, want %d", got, admitted)
			}
			admitted++
		}
		clear(g.waiting[:n]) // as admitWaitingLocked does
		g.waiting = g.waiting[n:]
	}
	deliver(128)
	admit(64)
	deliver(128)
	admit(128)
	c := cap(g.waitBuf)
	for round := range 1000 {
		deliver(128)
		admit(128)
		if cap(g.waitBuf) != c {
			t.Fatalf("round %d: the waiting array grew from %d to %d slots with at most %d records waiting", round, c, cap(g.waitBuf), 64+128)
		}
	}
	if len(g.waiting) != 64 {
		t.Fatalf("%d records waiting, want 64", len(g.waiting))
	}
	rt.unwaitLocked(g)
	for i, r := range g.waitBuf {
		if r.Offset != 0 {
			t.Fatalf("waitBuf[%d] still holds offset %d after unwait: the records must be dropped", i, r.Offset)
		}
	}
}

// Saturated holds while records wait for admission or either in-flight
// limit is reached, and not below them.
func TestSaturated(t *testing.T) {
	rt := &Group{cfg: Config{MaxInFlight: 10, MaxInFlightBytes: 1000}}
	for _, c := range []struct {
		in, bytes int64
		waiting   int32
		want      bool
	}{
		{0, 0, 0, false},
		{9, 999, 0, false},
		{10, 0, 0, true},
		{0, 1000, 0, true},
		{0, 0, 1, true},
	} {
		rt.inflight.Store(c.in)
		rt.bytes.Store(c.bytes)
		rt.nwaiting.Store(c.waiting)
		if got := rt.Saturated(); got != c.want {
			t.Errorf("%d records, %d bytes in flight, %d waiting: Saturated() = %v, want %v", c.in, c.bytes, c.waiting, got, c.want)
		}
	}
}

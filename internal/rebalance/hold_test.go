package rebalance

import (
	"slices"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
)

// resumable makes g list tps at its next Resumable and wakes the loop.
func (g *fakeGroup) listResumable(tps ...TP) {
	g.mu.Lock()
	g.resumable = append(g.resumable, tps...)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func span(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

// Records the client returns for a partition after Deliver asked to
// pause it are held by the core, not delivered; when Resumable lists the
// partition they are delivered in order, and only then is the client
// resumed.
func TestPausedPartitionsRecordsAreHeldUntilResumable(t *testing.T) {
	g := newFakeGroup()
	g.logging, g.pauseAt = true, 100
	c, b := newCore(g)
	c.assign([]TP{tp0, tp1})
	for i := range 300 {
		c.Add(rec(tp0, int64(i)))
	}
	c.Add(rec(tp1, 0))
	c.Flush()
	if got := g.got[tp0]; !slices.Equal(got, span(0, MaxBatch)) {
		t.Fatalf("delivered %v of in/0 before the resume, want 0..%d (the delivery that paused it)", got, MaxBatch-1)
	}
	if n, _ := c.Held(); n != 300-MaxBatch {
		t.Fatalf("holds %d records, want %d", n, 300-MaxBatch)
	}
	if got := b.calls(); got != "pause" {
		t.Fatalf("backend calls %q, want one pause", got)
	}
	c.resume() // nothing listed: nothing moves
	g.listResumable(tp0)
	c.resume()
	if got := g.got[tp0]; !slices.Equal(got, span(0, 300)) {
		t.Errorf("delivered %v of in/0, want 0..299 in order", got)
	}
	if n, bytes := c.Held(); n != 0 || bytes != 0 {
		t.Errorf("holds %d records (%d bytes) after the resume, want none", n, bytes)
	}
	if got := b.calls(); got != "pause resume" {
		t.Errorf("backend calls %q, want pause, then resume once all was delivered", got)
	}
	if got := g.got[tp1]; !slices.Equal(got, []int64{0}) {
		t.Errorf("delivered %v of in/1, want [0]", got)
	}
}

// A held partition whose delivery asks to pause again stays paused in
// the client, keeps the rest, and gets it at its next turn.
func TestHeldDeliveryPausedAgain(t *testing.T) {
	g := newFakeGroup()
	g.logging = true
	c, b := newCore(g)
	c.assign([]TP{tp0})
	g.pauseNext = true
	for i := range 3 * MaxBatch {
		c.Add(rec(tp0, int64(i)))
	}
	c.Flush()
	g.pauseNext = true // the first held delivery pauses it again
	g.listResumable(tp0)
	c.resume()
	if n, _ := c.Held(); n != MaxBatch {
		t.Fatalf("holds %d records, want %d", n, MaxBatch)
	}
	if got := b.calls(); got != "pause" {
		t.Fatalf("backend calls %q, want only the first pause (the client stays paused)", got)
	}
	g.listResumable(tp0)
	c.resume()
	if got := g.got[tp0]; !slices.Equal(got, span(0, 3*MaxBatch)) {
		t.Errorf("delivered %v, want 0..%d in order", got, 3*MaxBatch-1)
	}
	if got := b.calls(); got != "pause resume" {
		t.Errorf("backend calls %q, want pause resume", got)
	}
}

// Giving a partition up, closing, and a rewind (DropHeld) drop what the
// core held of it: never delivered, never committed.
func TestHeldRecordsDropped(t *testing.T) {
	for name, drop := range map[string]func(c *Core){
		"giveUp":   func(c *Core) { c.giveUp([]TP{tp0}) },
		"DropHeld": func(c *Core) { c.DropHeld([]TP{tp0}) },
		"LoseAll":  func(c *Core) { c.LoseAll() },
	} {
		t.Run(name, func(t *testing.T) {
			g := newFakeGroup()
			c, _ := newCore(g)
			c.assign([]TP{tp0, tp1})
			g.pauseNext = true
			for i := range 2 * MaxBatch {
				c.Add(rec(tp0, int64(i)))
			}
			c.Flush()
			g.pauseNext = true
			for i := range 2 * MaxBatch {
				c.Add(rec(tp1, int64(i)))
			}
			c.Flush()
			drop(c)
			want := MaxBatch
			if name == "LoseAll" {
				want = 0
			}
			if n, _ := c.Held(); n != want {
				t.Errorf("holds %d records, want %d (in/1's)", n, want)
			}
			g.listResumable(tp0)
			c.resume()
			if got := g.delivered[tp0]; got != MaxBatch {
				t.Errorf("delivered %d of in/0, want %d (none held)", got, MaxBatch)
			}
		})
	}
}

// What the core holds stays within an eighth of each in-flight limit
// (at least MaxBatch records): Room caps what a backend takes from its
// client, 0 once the records or the bytes held reach it; and a delivery
// weighs at most an eighth of the byte limit (one record may weigh more).
func TestRoomAndDeliverySize(t *testing.T) {
	g := newFakeGroup()
	g.logging = true
	g.maxRecords, g.maxBytes = 8000, 80<<10 // share: 1000 records, 10 KiB
	c, _ := newCore(g)
	c.assign([]TP{tp0})
	if got := c.Room(); got != 1 {
		t.Fatalf("Room = %d before any record was weighed, want 1", got)
	}
	value := make([]byte, 1024-pipeline.RecordOverhead) // weighs 1 KiB
	r := func(o int64) sluice.Record { x := rec(tp0, o); x.Value = value; return x }
	g.pauseNext = true
	for i := range 25 {
		c.Add(r(int64(i)))
	}
	c.Flush()
	if !slices.Equal(g.sizes, []int{10}) {
		t.Fatalf("deliveries of %v records, want one of 10 (10 KiB)", g.sizes)
	}
	if n, bytes := c.Held(); n != 15 || bytes != 15<<10 {
		t.Fatalf("holds %d records, %d bytes; want 15, 15 KiB", n, bytes)
	}
	if got := c.Room(); got != 0 {
		t.Errorf("Room = %d holding 15 KiB (share 10 KiB), want 0", got)
	}
	g.listResumable(tp0)
	c.resume()
	if !slices.Equal(g.sizes, []int{10, 10, 5}) {
		t.Errorf("deliveries of %v records, want 10, 10, 5", g.sizes)
	}
	if got := c.Room(); got != 10 {
		t.Errorf("Room = %d after records of 1 KiB, want 10 (the byte share)", got)
	}
	big := rec(tp0, 25)
	big.Value = make([]byte, 20<<10)
	c.Add(big)
	c.Add(r(26))
	c.Flush()
	if !slices.Equal(g.sizes[3:], []int{1, 1}) {
		t.Errorf("deliveries of %v records for a 20 KiB record then a 1 KiB one, want 1, 1", g.sizes[3:])
	}
}

// Room is one record until a record was weighed (the byte share cannot
// be counted in records before), then the records and bytes left of the
// share; SpareRoom is what is left of half the share, 0 from that half
// on.
func TestRoomAndSpareRoom(t *testing.T) {
	g := newFakeGroup()
	g.pauseNext = true
	c, _ := newCore(g)
	c.assign([]TP{tp0})
	share := c.lim.holdRecords
	if got := c.Room(); got != 1 {
		t.Fatalf("Room before any record = %d, want 1", got)
	}
	if got := c.SpareRoom(); got != 0 {
		t.Fatalf("SpareRoom before any record = %d, want 0", got)
	}
	c.Add(rec(tp0, 0))
	c.Flush() // delivered; the partition pauses
	if got := c.Room(); got != share {
		t.Fatalf("Room with nothing held = %d, want the share %d", got, share)
	}
	if got := c.SpareRoom(); got != share/2 {
		t.Fatalf("SpareRoom with nothing held = %d, want half the share %d", got, share/2)
	}
	for i := range share/2 - 1 {
		c.Add(rec(tp0, int64(1+i)))
	}
	c.Flush() // held: tp0 is paused
	if got := c.SpareRoom(); got != 1 {
		t.Fatalf("SpareRoom holding %d = %d, want 1", share/2-1, got)
	}
	c.Add(rec(tp0, int64(share/2)))
	c.Flush()
	if got, want := c.Room(), share-share/2; got != want {
		t.Fatalf("Room holding half the share = %d, want %d", got, want)
	}
	if got := c.SpareRoom(); got != 0 {
		t.Fatalf("SpareRoom holding half the share = %d, want 0", got)
	}
}

package engine

import (
	"math/rand/v2"
	"testing"
)

// TestTrackerMatchesAModel drives the tracker with random deliveries,
// splits (Retain), batches (join) and completions, in random order, and
// checks after every step that the committable offset is exactly 1 + the
// last offset of the longest fully completed prefix, and that the budget
// callback accounts for every record once.
func TestTrackerMatchesAModel(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var released int
		tr := newTracker(&segmentPool{}, func(n int, _ int64) { released += n })

		var offsets []int64              // by sequence number
		var live []Ticket                // tickets held by "values" in flight
		members := map[Ticket][]uint64{} // joined ticket -> member seqs (with multiplicity)
		offset := int64(0)

		// model's view of who a ticket refers to
		seqsOf := func(tk Ticket) []uint64 {
			if tk.joined() {
				return members[tk]
			}
			return []uint64{tk.id - 1}
		}
		for step := 0; step < 400; step++ {
			switch op := rng.IntN(10); {
			case op < 3: // deliver 1..5 records, with gaps in offsets
				n := 1 + rng.IntN(5)
				batch := make([]Record, n)
				for i := range batch {
					offset += 1 + int64(rng.IntN(3))
					batch[i] = Record{Offset: offset}
				}
				first := tr.add(batch)
				for i := range batch {
					offsets = append(offsets, batch[i].Offset)
					live = append(live, ticketAt(first+uint64(i)))
				}
			case op < 5 && len(live) > 0: // split a value into k+1
				i := rng.IntN(len(live))
				k := 1 + rng.IntN(3)
				if f := tr.retain(live[i], k); f != nil {
					t.Fatalf("seed %d step %d: retain of a live ticket: fault %v", seed, step, f.kind)
				}
				for range k {
					live = append(live, live[i])
				}
			case op < 6 && len(live) > 1: // batch 2..4 values into one
				n := min(len(live), 2+rng.IntN(3))
				rng.Shuffle(len(live), func(a, b int) { live[a], live[b] = live[b], live[a] })
				parts := append([]Ticket(nil), live[:n]...)
				live = live[n:]
				j, f := tr.join(parts)
				if f != nil {
					t.Fatalf("seed %d step %d: join of live tickets: fault %v", seed, step, f.kind)
				}
				var ms []uint64
				for _, p := range parts {
					ms = append(ms, seqsOf(p)...)
				}
				members[j] = ms
				live = append(live, j)
			case len(live) > 0: // complete a random value
				i := rng.IntN(len(live))
				tk := live[i]
				live = append(live[:i], live[i+1:]...)
				if f := tr.done(tk); f != nil {
					t.Fatalf("seed %d step %d: completion of a live ticket: fault %v", seed, step, f.kind)
				}
			}
			// The model: a record is done when no live value refers to
			// it, directly or through a batch; the committable offset
			// follows the longest done prefix.
			held := map[uint64]bool{}
			for _, l := range live {
				for _, s := range seqsOf(l) {
					held[s] = true
				}
			}
			want := int64(-1)
			done := 0
			for s, off := range offsets {
				if held[uint64(s)] {
					break
				}
				want = off + 1
				done++
			}
			tr.mu.Lock()
			early := 0
			for i := range tr.size {
				if tr.q.at(tr.base+uint64(i)).refs == 0 {
					early++
				}
			}
			if early != tr.early {
				t.Fatalf("seed %d step %d: %d live slots completed, tracker counts %d", seed, step, early, tr.early)
			}
			tr.mu.Unlock()
			if got := tr.committable(); got != want {
				t.Fatalf("seed %d step %d: committable %d, model %d", seed, step, got, want)
			}
			if released != done {
				t.Fatalf("seed %d step %d: released %d records, model %d", seed, step, released, done)
			}
		}
	}
}

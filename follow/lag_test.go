package follow_test

import (
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
)

// wantStatus fails the test unless the newest status of t0 is want.
func wantStatus(t *testing.T, hooks *statuses, step string, want follow.Status) {
	t.Helper()
	if got := hooks.last()[want.TopicPartition]; got != want {
		t.Fatalf("%s: status %+v, want %+v", step, got, want)
	}
}

// Lag is the leaders' offset minus the offset of the next record not
// handed on (one past the last handed on, or the first held), never below
// zero, and -1 until a record arrived.
func TestLagIsLeadersMinusPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startRig(t, map[int32]int64{0: 8})
		t0 := tp("orders", 0)
		if err := r.fake.Assign("orders", 0); err != nil {
			t.Fatal(err)
		}
		settle()
		wantStatus(t, r.hooks, "assigned, nothing received", follow.Status{TopicPartition: t0, Leaders: 8, Lag: -1, Owned: true})
		steps := []struct {
			name    string
			send    int   // records appended before the step
			leaders int64 // the leaders' offset for the step
			held    int
			lag     int64
		}{
			{"0..4 handed on", 5, 8, 0, 3},
			{"0..7 handed on", 3, 8, 0, 0},
			{"8..11 held at the leaders", 4, 8, 4, 0},
			{"leaders at 10: 10, 11 held", 0, 10, 2, 0},
			{"leaders at 20: 0..11 handed on", 0, 20, 0, 8},
			{"leaders reset back to 4", 0, 4, 0, 0},
		}
		for _, s := range steps {
			r.leaders.set("orders", 0, s.leaders)
			if s.send > 0 {
				if err := r.fake.Send("orders", 0, values(s.send)...); err != nil {
					t.Fatal(err)
				}
			}
			settle()
			wantStatus(t, r.hooks, s.name, follow.Status{TopicPartition: t0, Leaders: s.leaders, Held: s.held, Lag: s.lag, Owned: true})
		}
		if err := r.fake.Revoke("orders", 0); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, r.hooks, "revoked", follow.Status{TopicPartition: t0, Leaders: 4, Lag: -1})
		r.stop(t)
	})
}

// Lag is unknown (-1) while the leaders have committed nothing, even with
// records held; once they did, the first held record is the position.
func TestLagUnknownWithoutLeaderCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startWithRecords(t, nil, 3, 0)
		t0 := tp("orders", 0)
		wantStatus(t, r.hooks, "no leader commit", follow.Status{TopicPartition: t0, Leaders: -1, Held: 3, Lag: -1, Owned: true})
		r.leaders.set("orders", 0, 0) // nothing handed on yet: the position is the first held record
		settle()
		wantStatus(t, r.hooks, "leaders at 0", follow.Status{TopicPartition: t0, Leaders: 0, Held: 3, Lag: 0, Owned: true})
		r.leaders.set("orders", 0, 1)
		settle()
		wantStatus(t, r.hooks, "leaders at 1", follow.Status{TopicPartition: t0, Leaders: 1, Held: 2, Lag: 0, Owned: true})
		r.stop(t)
	})
}

// A new ownership starts with an unknown position: Lag is -1 again until
// a record arrives, not the value of the previous ownership.
func TestLagResetsOnReassign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startWithRecords(t, map[int32]int64{0: 9}, 5, 0)
		t0 := tp("orders", 0)
		wantStatus(t, r.hooks, "first ownership", follow.Status{TopicPartition: t0, Leaders: 9, Lag: 4, Owned: true})
		if err := r.fake.Revoke("orders", 0); err != nil {
			t.Fatal(err)
		}
		if err := r.fake.Assign("orders", 0); err != nil { // resumes at the committed 5: nothing to deliver
			t.Fatal(err)
		}
		settle()
		wantStatus(t, r.hooks, "assigned again", follow.Status{TopicPartition: t0, Leaders: 9, Lag: -1, Owned: true})
		if err := r.fake.Send("orders", 0, values(2)...); err != nil { // offsets 5, 6
			t.Fatal(err)
		}
		settle()
		wantStatus(t, r.hooks, "5, 6 handed on", follow.Status{TopicPartition: t0, Leaders: 9, Lag: 2, Owned: true})
		r.stop(t)
	})
}

// Lag counts offsets, gaps included, from the last record handed on; a
// first held record past the leaders (a gap they committed into) is lag 0,
// not negative.
func TestLagCountsOffsetsAcrossGaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startRig(t, map[int32]int64{0: 10})
		t0 := tp("orders", 0)
		at := func(offs ...int64) []sluice.Record {
			var out []sluice.Record
			for _, o := range offs {
				out = append(out, sluice.Record{Topic: "orders", Partition: 0, Offset: o})
			}
			return out
		}
		if err := r.fake.SendRecords(at(0, 2, 5)...); err != nil {
			t.Fatal(err)
		}
		if err := r.fake.Assign("orders", 0); err != nil {
			t.Fatal(err)
		}
		settle()
		wantStatus(t, r.hooks, "0, 2, 5 handed on", follow.Status{TopicPartition: t0, Leaders: 10, Lag: 4, Owned: true})
		if err := r.fake.SendRecords(at(12, 15)...); err != nil {
			t.Fatal(err)
		}
		settle()
		wantStatus(t, r.hooks, "12, 15 held", follow.Status{TopicPartition: t0, Leaders: 10, Held: 2, Lag: 0, Owned: true})
		r.stop(t)
	})
}

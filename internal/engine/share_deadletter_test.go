package engine_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// ranGraph records every record a graph received, in order.
type ranGraph struct {
	mu   sync.Mutex
	recs []sluice.Record
}

func (r *ranGraph) build(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Each(in, func(_ context.Context, rec sluice.Record) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.recs = append(r.recs, rec)
		return nil
	})
}

// offsets returns the offsets of the records received, and how many of
// them were not records of topic t (a zero Record has topic "").
func (r *ranGraph) offsets() (offs []int64, foreign int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recs {
		if rec.Topic != "t" {
			foreign++
		}
		offs = append(offs, rec.Offset)
	}
	return offs, foreign
}

// collectAcks adds the outcomes reported so far to got, failing t on a
// second outcome for one record.
func collectAcks(t *testing.T, g sluice.AckGroup, got map[int64]sluice.AckOutcome) {
	t.Helper()
	for _, a := range g.Acks(nil) {
		if prev, dup := got[a.Offset]; dup {
			t.Errorf("offset %d: outcome %v after %v", a.Offset, a.Outcome, prev)
		}
		got[a.Offset] = a.Outcome
	}
}

func offsetsFrom(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

func acceptedAll(offs []int64) map[int64]sluice.AckOutcome {
	m := map[int64]sluice.AckOutcome{}
	for _, o := range offs {
		m[o] = sluice.AckAccepted
	}
	return m
}

// ackSource is a source that turns share mode on, assigns tp and runs
// deliver; it shuts the group down once deliver returned.
func ackSource(tp sluice.TopicPartition, deliver func(ag sluice.AckGroup) error) scriptSource {
	return func(_ context.Context, g sluice.Group) error {
		defer g.Shutdown()
		ag := g.(sluice.AckGroup)
		if err := ag.TrackAcks(); err != nil {
			return err
		}
		if err := ag.Assign([]sluice.TopicPartition{tp}); err != nil {
			return err
		}
		return deliver(ag)
	}
}

// A record handed to DeadLetterRecord never runs through the graph: not
// when the partition gets more deliveries while its dead letter is being
// stored, nor (as a zero Record in its place) when they come after it was
// stored. It is accepted only once its dead letter was stored; the
// records delivered around it run and are accepted.
func TestDeadLetterRecordNeverRunsTheGraph(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := sluice.TopicPartition{Topic: "t"}
		ran := &ranGraph{}
		store := make(chan struct{}) // closed: the dead-letter destination stores
		var stored []int64
		got := map[int64]sluice.AckOutcome{}
		src := ackSource(tp, func(ag sluice.AckGroup) error {
			poison := func(off int64) {
				if !ag.DeadLetterRecord(tp, shareRecords(off)[0], errors.New("delivered too often")) {
					t.Errorf("DeadLetterRecord(%d) refused an assigned partition", off)
				}
			}
			ag.Deliver(tp, shareRecords(0, 1, 2))
			synctest.Wait()
			poison(3)
			ag.Deliver(tp, shareRecords(4, 5))
			synctest.Wait() // the dead letter of 3 waits for store
			collectAcks(t, ag, got)
			if want := acceptedAll([]int64{0, 1, 2, 4, 5}); !maps.Equal(got, want) {
				t.Errorf("outcomes while the dead letter of 3 was being stored: %v, want %v", got, want)
			}
			close(store)
			synctest.Wait()
			collectAcks(t, ag, got)
			if got[3] != sluice.AckAccepted {
				t.Errorf("outcome of 3 once its dead letter was stored: %v, want accepted", got[3])
			}
			poison(6)
			synctest.Wait() // 6 is stored, accepted, and left the tracker
			ag.Deliver(tp, shareRecords(7, 8))
			synctest.Wait()
			collectAcks(t, ag, got)
			return nil
		})
		err := pipeline.Run(t.Context(), src, ran.build,
			pipeline.WithDeadLetter(func(ctx context.Context, dl sluice.DeadLetter) error {
				<-store
				stored = append(stored, dl.Record.Offset)
				return nil
			}))
		if err != nil {
			t.Fatal(err)
		}
		offs, foreign := ran.offsets()
		if want := []int64{0, 1, 2, 4, 5, 7, 8}; !slices.Equal(offs, want) || foreign != 0 {
			t.Errorf("the graph ran offsets %v (%d records not of topic t), want %v and none", offs, foreign, want)
		}
		if !slices.Equal(stored, []int64{3, 6}) {
			t.Errorf("dead letters stored: %v, want [3 6]", stored)
		}
		if want := acceptedAll(offsetsFrom(0, 9)); !maps.Equal(got, want) {
			t.Errorf("outcomes %v, want %v", got, want)
		}
	})
}

// A record handed to DeadLetterRecord in the last slot of a segment (the
// tracker's 64th record), whose segment was given back once it and the
// records before it finished, is passed over by the next delivery: the
// records after it run and are accepted.
func TestDeadLetterRecordAtTheEndOfASegment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := sluice.TopicPartition{Topic: "t"}
		ran := &ranGraph{}
		var stored []int64
		got := map[int64]sluice.AckOutcome{}
		src := ackSource(tp, func(ag sluice.AckGroup) error {
			ag.Deliver(tp, shareRecords(offsetsFrom(0, 63)...))
			synctest.Wait()
			if !ag.DeadLetterRecord(tp, shareRecords(63)[0], errors.New("delivered too often")) {
				return errors.New("DeadLetterRecord refused an assigned partition")
			}
			synctest.Wait() // all 64 finished: the first segment is back in the pool
			ag.Deliver(tp, shareRecords(offsetsFrom(64, 130)...))
			synctest.Wait()
			collectAcks(t, ag, got)
			return nil
		})
		err := pipeline.Run(t.Context(), src, ran.build,
			pipeline.WithDeadLetter(func(ctx context.Context, dl sluice.DeadLetter) error {
				stored = append(stored, dl.Record.Offset)
				return nil
			}))
		if err != nil {
			t.Fatal(err)
		}
		offs, foreign := ran.offsets()
		if want := append(offsetsFrom(0, 63), offsetsFrom(64, 130)...); !slices.Equal(offs, want) || foreign != 0 {
			t.Errorf("the graph ran offsets %v (%d records not of topic t), want %v and none", offs, foreign, want)
		}
		if !slices.Equal(stored, []int64{63}) {
			t.Errorf("dead letters stored: %v, want [63]", stored)
		}
		if want := acceptedAll(offsetsFrom(0, 130)); !maps.Equal(got, want) {
			t.Errorf("outcomes %v, want %v", got, want)
		}
	})
}

// In share mode a record one branch of a Tee found invalid is handed to
// the dead-letter destination, and stored there, while the other branch
// exhausts its retries on it. docs/share.md: an invalid record is
// "dead-lettered, then ACCEPT". A RELEASE after the dead letter was stored
// has the broker deliver the record again, and the branch finds it
// invalid again: a second dead letter of the same record.
func TestShareDeadLetteredRecordIsNotReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &shareSource{tp: sluice.TopicPartition{Topic: "t"}, recs: shareRecords(0)}
		var mu sync.Mutex
		dead := 0
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			br := stages.Tee(in, 2)
			a := stages.Each(br[0], func(context.Context, sluice.Record) error {
				return sluice.Invalid(errors.New("bad data"))
			}, stages.Name("validate"))
			b := stages.Each(br[1], func(context.Context, sluice.Record) error {
				return errors.New("service down")
			}, stages.Name("write"))
			return pipeline.All(a, b)
		}
		err := pipeline.Run(t.Context(), src, build,
			pipeline.WithRetry(sluice.RetryPolicy{Attempts: 2, Initial: time.Millisecond}),
			pipeline.WithDeadLetter(func(context.Context, sluice.DeadLetter) error {
				mu.Lock()
				defer mu.Unlock()
				dead++
				return nil
			}))
		if err != nil || src.err != nil {
			t.Fatalf("Run = %v, source: %v; want both nil", err, src.err)
		}
		if dead != 1 {
			t.Fatalf("%d dead letters, want 1", dead)
		}
		if got := src.acks[0]; got != sluice.AckAccepted {
			t.Errorf("outcome of the dead-lettered record %v, want %v (it is delivered again and dead-lettered a second time)", got, sluice.AckAccepted)
		}
	})
}

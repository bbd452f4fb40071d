package engine_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// shareSource is a share-group source in miniature: it turns share mode
// on, assigns one partition, delivers recs (in the given, unordered,
// offset order) and hands poison to DeadLetterRecord, then collects
// outcomes until it has one per record, and shuts down.
type shareSource struct {
	tp     sluice.TopicPartition
	recs   []sluice.Record
	poison []sluice.Record
	acks   map[int64]sluice.AckOutcome
	err    error // of TrackAcks or DeadLetterRecord
}

func (s *shareSource) Run(ctx context.Context, g sluice.Group) error {
	ag := g.(sluice.AckGroup)
	if s.err = ag.TrackAcks(); s.err != nil {
		g.Shutdown()
		return nil
	}
	if err := ag.Assign([]sluice.TopicPartition{s.tp}); err != nil {
		g.Shutdown()
		return nil
	}
	ag.Deliver(s.tp, s.recs)
	for _, r := range s.poison {
		if !ag.DeadLetterRecord(s.tp, r, errors.New("delivered too often")) {
			s.err = errors.New("DeadLetterRecord refused an assigned partition")
		}
	}
	s.acks = map[int64]sluice.AckOutcome{}
	var buf []sluice.Ack
	for len(s.acks) < len(s.recs)+len(s.poison) {
		select {
		case <-g.Wake():
		case <-ctx.Done():
			g.Shutdown()
			return nil
		}
		buf = ag.Acks(buf[:0])
		for _, a := range buf {
			if _, dup := s.acks[a.Offset]; dup {
				s.err = errors.New("two outcomes for one record")
			}
			s.acks[a.Offset] = a.Outcome
		}
	}
	g.Shutdown()
	return nil
}

// shareBuild: offset 2 is invalid, 3 fails every attempt, 4 is filtered
// out, everything else succeeds.
func shareBuild(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	kept := stages.Filter(in, func(r sluice.Record) bool { return r.Offset != 4 })
	checked := stages.Map(kept, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
		switch r.Offset {
		case 2:
			return r, sluice.Invalid(errors.New("bad data"))
		case 3:
			return r, errors.New("service down")
		}
		return r, nil
	}, stages.Name("check"))
	return stages.Discard(checked)
}

func shareRecords(offs ...int64) []sluice.Record {
	var out []sluice.Record
	for _, o := range offs {
		out = append(out, sluice.Record{Topic: "t", Partition: 0, Offset: o})
	}
	return out
}

// TestShareModeOutcomes: in share mode every record gets exactly one
// outcome, whatever the offset order: done and filtered are accepted,
// invalid is accepted once dead-lettered, retries exhausted release the
// record and Run goes on (nil, not a StageError), a record handed to
// DeadLetterRecord is dead-lettered without running the graph.
func TestShareModeOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &shareSource{tp: sluice.TopicPartition{Topic: "t"},
			recs: shareRecords(5, 3, 1, 4, 2), poison: shareRecords(9)}
		var mu sync.Mutex
		dead := map[int64]string{}
		err := pipeline.Run(t.Context(), src, shareBuild,
			pipeline.WithRetry(sluice.RetryPolicy{Attempts: 2, Initial: time.Millisecond}),
			pipeline.WithDeadLetter(func(_ context.Context, dl sluice.DeadLetter) error {
				mu.Lock()
				defer mu.Unlock()
				dead[dl.Record.Offset] = dl.Stage
				return nil
			}))
		if err != nil || src.err != nil {
			t.Fatalf("Run = %v, source: %v; want both nil", err, src.err)
		}
		want := map[int64]sluice.AckOutcome{1: sluice.AckAccepted, 2: sluice.AckAccepted,
			3: sluice.AckReleased, 4: sluice.AckAccepted, 5: sluice.AckAccepted, 9: sluice.AckAccepted}
		if !maps.Equal(src.acks, want) {
			t.Errorf("outcomes %v, want %v", src.acks, want)
		}
		if w := map[int64]string{2: "check", 9: sluice.MaxDeliveriesStage}; !maps.Equal(dead, w) {
			t.Errorf("dead letters %v, want %v", dead, w)
		}
	})
}

// TestShareModeRejectsWithoutDeadLetter: without a destination an
// invalid record is rejected (Run goes on), as is a record handed to
// DeadLetterRecord.
func TestShareModeRejectsWithoutDeadLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &shareSource{tp: sluice.TopicPartition{Topic: "t"},
			recs: shareRecords(1, 2), poison: shareRecords(7)}
		if err := pipeline.Run(t.Context(), src, shareBuild); err != nil || src.err != nil {
			t.Fatalf("Run = %v, source: %v; want both nil", err, src.err)
		}
		want := map[int64]sluice.AckOutcome{1: sluice.AckAccepted, 2: sluice.AckRejected, 7: sluice.AckRejected}
		if !maps.Equal(src.acks, want) {
			t.Errorf("outcomes %v, want %v", src.acks, want)
		}
	})
}

// lateShareSource calls TrackAcks after an Assign.
type lateShareSource struct{ err error }

func (s *lateShareSource) Run(_ context.Context, g sluice.Group) error {
	_ = g.Assign([]sluice.TopicPartition{{Topic: "t"}})
	s.err = g.(sluice.AckGroup).TrackAcks()
	g.Shutdown()
	return nil
}

func TestTrackAcksAfterAssignIsAnError(t *testing.T) {
	src := &lateShareSource{}
	if err := pipeline.Run(t.Context(), src, shareBuild); err != nil {
		t.Fatal(err)
	}
	if src.err == nil {
		t.Fatal("TrackAcks after Assign: no error")
	}
}

// TestShareModeOffNoOutcomes: without TrackAcks, Acks reports nothing
// and retries exhausted stop Run as before.
func TestShareModeOffNoOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []sluice.Ack
		src := scriptSource(func(ctx context.Context, g sluice.Group) error {
			tp := sluice.TopicPartition{Topic: "t"}
			_ = g.Assign([]sluice.TopicPartition{tp})
			g.Deliver(tp, shareRecords(1, 3))
			<-ctx.Done()
			got = g.(sluice.AckGroup).Acks(nil)
			g.Shutdown()
			return nil
		})
		err := pipeline.Run(t.Context(), src, shareBuild, pipeline.WithRetry(sluice.RetryPolicy{Attempts: 2, Initial: time.Millisecond}))
		var se *sluice.StageError
		if !errors.As(err, &se) || se.Offset != 3 {
			t.Fatalf("Run = %v, want a StageError at offset 3", err)
		}
		if len(got) != 0 {
			t.Errorf("Acks without share mode = %v, want none", got)
		}
	})
}

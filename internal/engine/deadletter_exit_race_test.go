package engine

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/goroutinetest"
)

// A goroutine that is not one of the partition's (as a shared batch's
// writer is) fails a value of the partition as invalid while its only
// stage exits at a revoke. Either the dead letter is queued before the
// queue closes, starting the partition's dead-letter goroutine: the
// revoke then returns only once it was delivered, and commits past it;
// or it is refused (deadLetter returns false) and nothing is delivered
// or committed. Repeated under real scheduling, with -race; the graph's
// end is signalled once per round (a second close would panic, a
// missing one hang the revoke).
func TestDeadLetterFromAnotherGoroutineRacesWithTheLastStageExit(t *testing.T) {
	const rounds = 2000
	tp := TopicPartition{Topic: "t"}
	type held struct {
		s *Stage
		t Ticket
	}
	got := make(chan held, 1)
	var delivered atomic.Int32
	cfg := roomyConfig()
	cfg.DeadLetter = func(context.Context, DeadLetter) error {
		delivered.Add(1)
		return nil
	}
	build := func(_ *Partition, in Stream[Record]) End {
		return AddEnd(in, StageSpec{Kind: "End"}, func(s *Stage, in *Inlet[Record]) error {
			for {
				c, ok := in.Recv()
				if !ok {
					return nil
				}
				for _, it := range c {
					got <- held{s, it.Ticket} // kept: the other goroutine completes it
				}
				in.Release(c)
			}
		})
	}
	var queued, refused int
	err := Run(context.Background(), cfg, build, func(ctx context.Context, rt *Group) error {
		defer rt.Shutdown()
		for round := range rounds {
			delivered.Store(0)
			if err := rt.Assign([]TopicPartition{tp}); err != nil {
				return err
			}
			rt.Deliver(tp, []Record{{Topic: "t", Offset: 0}})
			h := <-got
			g, _ := rt.m.Worker(tp)
			res := make(chan bool, 1)
			go func() {
				for range round % 4 {
					runtime.Gosched()
				}
				res <- g.deadLetter(h.s, h.t, sluice.Invalid(errors.New("bad record")))
			}()
			offs := rt.Revoke([]TopicPartition{tp})
			n := delivered.Load()
			if <-res {
				queued++
				if want := []Offset{{TopicPartition: tp, Next: 1}}; n != 1 || !slices.Equal(offs, want) {
					t.Fatalf("round %d: dead letter queued; at the revoke's return %d delivered and Revoke = %v, want 1 and %v", round, n, offs, want)
				}
			} else {
				refused++
				if n != 0 || len(offs) != 0 {
					t.Fatalf("round %d: dead letter refused; %d delivered and Revoke = %v, want 0 and none", round, n, offs)
				}
			}
		}
		return nil
	})
	goroutinetest.AwaitGone(t, "engine.(*graph).runDeadLetters(")
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	t.Logf("dead letter queued before the queue closed in %d rounds, refused in %d", queued, refused)
}

// The same race at the level of the graph's own functions, with nothing
// else in the graph: a dead letter queued by another goroutine while the
// graph's last goroutine ends (exitOne). The graph ends once, and only
// after the dead letter, if it was queued, was delivered.
func TestDeadLetterQueuedAsTheLastGoroutineEnds(t *testing.T) {
	const rounds = 5000
	tp := TopicPartition{Topic: "t"}
	var delivered atomic.Int32
	cfg := roomyConfig()
	cfg.DeadLetter = func(context.Context, DeadLetter) error {
		delivered.Add(1)
		return nil
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	rt := newGroup(ctx, cancel, cfg, nil)
	var queued, refused int
	for round := range rounds {
		delivered.Store(0)
		g := newGraph(rt, tp)
		g.live.Store(1)
		g.ending.Store(1)
		seq := g.tr.addUnfed(Record{Topic: "t", Offset: int64(round)})
		s := &Stage{name: "x", g: g}
		res := make(chan bool, 1)
		go func() {
			for range round % 4 {
				runtime.Gosched()
			}
			res <- g.deadLetter(s, ticketAt(seq), sluice.Invalid(errors.New("bad record")))
		}()
		for range (round / 4) % 8 {
			runtime.Gosched()
		}
		g.exitOne()
		<-g.exited
		n := delivered.Load()
		if <-res {
			queued++
			if n != 1 {
				t.Fatalf("round %d: the graph ended with its queued dead letter delivered %d times, want 1", round, n)
			}
		} else {
			refused++
			if n != 0 {
				t.Fatalf("round %d: dead letter refused but delivered %d times", round, n)
			}
		}
		g.cancel(nil)
	}
	goroutinetest.AwaitGone(t, "engine.(*graph).runDeadLetters(")
	t.Logf("dead letter queued before the queue closed in %d rounds, refused in %d", queued, refused)
}

package engine

import (
	"fmt"
	"sync"
	"weak"
)

// This file holds the build-time checks of package pipeline/stagekit: a
// stage's own configuration error, consumer-wide stages (one object for
// every partition of one Run) and marks on streams.

// CheckStage fails the build with a *BuildError naming the stage that
// spec is about to add to in's graph when problem is not nil (the stage's
// constructor found a bad argument), when sh, a consumer-wide object the
// stage uses, may not be used there (see [Shared.claim]), or when one of
// uses may not (see [Use]). Call it from the builder, right before adding
// the stage. A zero in is left to the stage's own Add call, which reports
// it.
func CheckStage[T any](in Stream[T], spec StageSpec, problem error, sh *Shared, uses []Use) {
	if in.e == nil {
		return
	}
	g := in.e.g
	name := spec.Name
	if name == "" {
		kind := spec.Kind
		if kind == "" {
			kind = "stage"
		}
		name = fmt.Sprintf("%s#%d", kind, g.nstages+1)
	}
	if problem != nil {
		panic(buildPanic{fmt.Sprintf("stage %q: %v", name, problem)})
	}
	if sh != nil {
		if err := sh.claim(g, spec.Kind, g.nstages+1); err != nil {
			panic(buildPanic{fmt.Sprintf("stage %q: %v", name, err)})
		}
	}
	for _, u := range uses {
		if err := claimSlot(g, sharedSlot{kind: u.Kind, topic: g.tp.Topic, pos: g.nstages + 1, use: true}, u.Object); err != nil {
			panic(buildPanic{fmt.Sprintf("stage %q: %v", name, err)})
		}
	}
}

// Use is a consumer-wide object a stage uses that, unlike a [Shared] one,
// may serve several stages of a graph and several Runs: a limit on calls
// (stages.Limiter, stages.KeyLock). Only one rule applies, a build error:
// within one Run, every graph of one topic that uses an object of this
// Kind at a given stage position uses the same one. A different one there
// means the builder creates it, once per partition, instead of once
// before Run.
type Use struct {
	// Kind names the object in errors ("Limiter").
	Kind string
	// Object is the object, compared by identity: a pointer.
	Object any
}

// Shared is the declaration of a consumer-wide object: one that serves
// every partition of one Run (a batch shared by all partitions). The
// object embeds or holds one Shared, and every stage that uses it passes
// it to CheckStage. The rules, each a build error:
//
//   - it belongs to the first Run that uses it: a second Run may not;
//   - each partition's graph uses it at most once;
//   - within one Run, every graph of one topic that has a consumer-wide
//     object of this kind at a given stage position has the same one: a
//     different one there means the builder creates it, once per
//     partition, instead of once before Run.
//
// The zero Shared is ready to use. Its methods are safe for concurrent use.
type Shared struct {
	mu   sync.Mutex
	run  weak.Pointer[Group] // the Run it belongs to; zero until first used
	last weak.Pointer[graph] // the graph that used it last
}

// sharedSlot is where, in the graphs of one Run, a consumer-wide object is
// used.
type sharedSlot struct {
	kind  string
	topic string
	pos   int
	use   bool // a Use (its Kind names the object), not a Shared (the stage's kind)
}

func (sh *Shared) claim(g *graph, kind string, pos int) error {
	run, self := weak.Make(g.rt), weak.Make(g)
	sh.mu.Lock()
	switch {
	case sh.run == (weak.Pointer[Group]{}):
		sh.run = run
	case sh.run != run:
		sh.mu.Unlock()
		return fmt.Errorf("this %s is already used by another pipeline.Run; create one per Run", kind)
	case sh.last == self:
		sh.mu.Unlock()
		return fmt.Errorf("this %s is used twice in one partition's graph; use it once per graph (join the streams first)", kind)
	}
	sh.last = self
	sh.mu.Unlock()

	return claimSlot(g, sharedSlot{kind: kind, topic: g.tp.Topic, pos: pos}, sh)
}

// claimSlot records that g's Run holds obj at slot, or returns an error
// when another graph of the Run holds a different object there. The
// record is the Run's own (Group.slots), so it goes away with the Run.
func claimSlot(g *graph, slot sharedSlot, obj any) error {
	rt := g.rt
	rt.slotsMu.Lock()
	defer rt.slotsMu.Unlock()
	if rt.slots == nil {
		rt.slots = make(map[sharedSlot]any)
	}
	if other, ok := rt.slots[slot]; ok && other != obj {
		return fmt.Errorf("another partition's graph has a different %s at this place: the builder creates one per partition; create it once, before pipeline.Run, and use it in every graph", slot.kind)
	}
	rt.slots[slot] = obj
	return nil
}

// Mark attaches mark to the stream, for the stage that will consume it:
// a stage marks its output so that a stage wired directly to it knows
// what its values are (Batch's slices hold the values of its joined
// tickets, in order). Call it from the builder.
func Mark[T any](s Stream[T], mark any) {
	if s.e != nil {
		s.e.mark = mark
	}
}

// Marked returns the mark of the stream (nil if none). Call it from the
// builder, before consuming s.
func Marked[T any](s Stream[T]) any {
	if s.e == nil {
		return nil
	}
	return s.e.mark
}

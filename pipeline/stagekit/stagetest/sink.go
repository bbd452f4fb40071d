package stagetest

import (
	"fmt"
	"sync"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// arrival is one output value the suite's sink received.
type arrival struct {
	origin   []int // the inputs it carries
	sink     int   // the sink (output of a Fan) that holds its ticket
	ticket   stagekit.Ticket
	release  bool // the check asked for its completion
	complete bool // its ticket was completed
}

// recorder is shared by the suite's sinks of one graph: it records the
// output values in arrival order and, when holding, completes each only
// once the check released it.
type recorder[U any] struct {
	origin func(U) []int
	n      int  // inputs
	hold   bool // complete output values only when released

	mu       sync.Mutex
	arrived  []*arrival
	wakes    []chan struct{} // per sink: released values to complete
	problems []string        // origins out of range
	changed  chan struct{}   // signalled at each arrival
}

func newRecorder[U any](origin func(U) []int, n int, hold bool) *recorder[U] {
	return &recorder[U]{origin: origin, n: n, hold: hold, changed: make(chan struct{}, 1)}
}

// sink adds one sink stage to in's graph.
func (r *recorder[U]) sink(in pipeline.Stream[U]) pipeline.End {
	r.mu.Lock()
	id := len(r.wakes)
	wake := make(chan struct{}, 1)
	r.wakes = append(r.wakes, wake)
	r.mu.Unlock()
	spec := stagekit.StageSpec{Name: fmt.Sprintf("stagetest.sink#%d", id), Kind: "stagetest.sink"}
	return stagekit.AddEnd(in, spec, func(s *stagekit.Stage, inl *stagekit.Inlet[U]) error {
		return stagekit.RunLoop(s, inl, stagekit.Loop[U, struct{}]{
			OnChunk: func(chunk []stagekit.Item[U]) error {
				for _, it := range chunk {
					if r.add(id, it) {
						s.Done(it.Ticket)
					}
				}
				return nil
			},
			Wake: func() <-chan struct{} { return wake },
			OnWake: func() error {
				s.Done(r.released(id)...)
				return nil
			},
		})
	})
}

// add records it, arrived at sink id, and reports whether to complete it
// now.
func (r *recorder[U]) add(id int, it stagekit.Item[U]) bool {
	origin := append([]int(nil), r.origin(it.Value)...)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, i := range origin {
		if i < 0 || i >= r.n {
			r.problems = append(r.problems, fmt.Sprintf("an output value's Origin is %v: index %d is not an input (0 to %d)", origin, i, r.n-1))
		}
	}
	a := &arrival{origin: origin, sink: id, ticket: it.Ticket, release: !r.hold, complete: !r.hold}
	r.arrived = append(r.arrived, a)
	select {
	case r.changed <- struct{}{}:
	default:
	}
	return !r.hold
}

// released returns the tickets of sink id that were released and not yet
// completed, marking them completed.
func (r *recorder[U]) released(id int) []stagekit.Ticket {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ts []stagekit.Ticket
	for _, a := range r.arrived {
		if a.sink == id && a.release && !a.complete {
			a.complete = true
			ts = append(ts, a.ticket)
		}
	}
	return ts
}

// release asks for the completion of the k-th arrived value.
func (r *recorder[U]) release(k int) {
	r.mu.Lock()
	a := r.arrived[k]
	a.release = true
	wake := r.wakes[a.sink]
	r.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default:
	}
}

// count returns how many arrived values are there.
func (r *recorder[U]) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.arrived)
}

// carried returns, for each input, how many arrived values carry it
// (all, or only the released ones).
func (r *recorder[U]) carried(releasedOnly bool) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := make([]int, r.n)
	for _, a := range r.arrived {
		if releasedOnly && !a.release {
			continue
		}
		for _, i := range a.origin {
			if i >= 0 && i < r.n {
				c[i]++
			}
		}
	}
	return c
}

// coverage is the number of (arrived value, input) pairs.
func (r *recorder[U]) coverage() int {
	n := 0
	for _, c := range r.carried(false) {
		n += c
	}
	return n
}

func (r *recorder[U]) originProblems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.problems...)
}

// originOf returns the inputs the k-th arrived value carries.
func (r *recorder[U]) originOf(k int) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.arrived[k].origin
}

package stagetest

import (
	"errors"

	"github.com/sluice-go/sluice/pipeline"
)

// DefaultInputs is the number of input values the suite sends when
// Stage.Inputs is 0.
const DefaultInputs = 12

// Stage describes the stage under test to [Run]: how to add it to a graph
// and what it does to values in ways the suite cannot know by itself.
// Exactly one of Build, Fan and End is set; Input is required, and Origin
// for a stage with outputs (Build or Fan).
type Stage[T, U any] struct {
	// Name names the stage in failure messages.
	Name string

	// Build adds the stage to the graph of in, a stream of the values
	// Input made, and returns its output, to which the suite attaches its
	// sink. It is called once per partition graph, from the builder.
	Build func(in pipeline.Stream[T]) pipeline.Stream[U]
	// Fan is Build for a stage with several outputs (stages.Route,
	// stages.Tee): the suite attaches a sink to each, and the outputs
	// together must carry what Fanout says.
	Fan func(in pipeline.Stream[T]) []pipeline.Stream[U]
	// End is Build for a stage that ends a graph (stages.Each): it
	// completes every value itself.
	End func(in pipeline.Stream[T]) pipeline.End

	// BeforeRun, when not nil, is called at the start of each of the
	// suite's pipeline.Runs (one per check), from the check's synctest
	// bubble, before any graph is built; the checks run one at a time.
	// A stage using a consumer-wide object, which must be created once per
	// Run (stages.SharedBatcher), creates it here for Build, Fan or End
	// to use: some checks build the partition's graph twice in one Run.
	BeforeRun func()

	// Input makes the i-th input value, from the record at offset i (i
	// from 0 to Inputs-1). Inputs should be distinct, so that Origin can
	// tell them apart.
	Input func(i int) T
	// Origin returns the indices of the inputs an output value was derived
	// from: one index for a value mapped from one input, several for a
	// batch. The suite uses it to know which records an output holds
	// uncommitted.
	Origin func(v U) []int

	// Filters reports whether the stage filters v out: it yields no output
	// and its record commits at once. Nil means no input is filtered.
	Filters func(v T) bool
	// Fanout is how many output values carry v (whose Origin lists v's
	// index): 1 for a map or a batch, n for a stage copying v to n
	// branches, the number of elements for a stage splitting v. Nil means
	// 1 for every input.
	Fanout func(v T) int
	// Invalid reports whether the stage fails v with an error marked
	// sluice.Invalid (the test wires the stage's function to do so):
	// v yields no output and its record is dead-lettered once, then
	// commits. Nil means no input is invalid.
	Invalid func(v T) bool

	// Inputs is how many input values the suite sends (DefaultInputs when
	// 0).
	Inputs int
}

// check returns what is wrong with the description, or nil.
func (s *Stage[T, U]) check() error {
	n := 0
	for _, set := range []bool{s.Build != nil, s.Fan != nil, s.End != nil} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return errors.New("set exactly one of Build, Fan and End")
	case s.Input == nil:
		return errors.New("the Input field is nil")
	case s.End == nil && s.Origin == nil:
		return errors.New("the Origin field is nil (required with Build and Fan)")
	case s.Inputs < 0:
		return errors.New("the Inputs field is negative")
	}
	return nil
}

// inputs is the number of inputs the suite sends.
func (s *Stage[T, U]) inputs() int {
	if s.Inputs == 0 {
		return DefaultInputs
	}
	return s.Inputs
}

// plan is what the description says about each input.
type plan struct {
	invalid []bool
	outputs []int // output values expected to carry each input
}

func (s *Stage[T, U]) plan() plan {
	n := s.inputs()
	p := plan{invalid: make([]bool, n), outputs: make([]int, n)}
	for i := range n {
		v := s.Input(i)
		switch {
		case s.Invalid != nil && s.Invalid(v):
			p.invalid[i] = true
		case s.End != nil, s.Filters != nil && s.Filters(v):
		case s.Fanout != nil:
			p.outputs[i] = s.Fanout(v)
		default:
			p.outputs[i] = 1
		}
	}
	return p
}

// invalidOffsets returns the offsets of the invalid inputs.
func (p plan) invalidOffsets() []int64 {
	var offs []int64
	for i, bad := range p.invalid {
		if bad {
			offs = append(offs, int64(i))
		}
	}
	return offs
}

// total is the number of (output value, input) pairs expected.
func (p plan) total() int {
	n := 0
	for _, o := range p.outputs {
		n += o
	}
	return n
}

// committable returns the offset the partition must have committed when
// completed[i] tells, for each input with outputs, how many of them were
// completed: the first input not done. An input with no outputs is done
// (filtered at once, invalid once dead-lettered).
func (p plan) committable(completed []int) int64 {
	for i, o := range p.outputs {
		if completed[i] < o {
			return int64(i)
		}
	}
	return int64(len(p.outputs))
}

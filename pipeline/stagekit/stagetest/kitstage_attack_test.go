package stagetest_test

import (
	"errors"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/pipeline/stagekit/stagetest"
)

// pairs is a stage written against stagekit alone: it selects on the
// inlet's channel (C) and the context, joins every two values into one
// output (Join; an odd last one is passed on alone at the drain), copies
// an input whose fan is 2 (Retain), fails an invalid one,
// fills Buffer chunks, Sends them and Releases what it received. The
// values of type T and U are of odd sizes and alignments.
func pairs[T, U any](in pipeline.Stream[T], idx func(T) int, fan func(T) int, invalid func(T) bool, mk func(a, b int) U) pipeline.Stream[U] {
	return stagekit.AddStage(in, stagekit.StageSpec{Kind: "Pairs", Holds: 2},
		func(s *stagekit.Stage, inl *stagekit.Inlet[T], out *stagekit.Outlet[U]) error {
			var held []stagekit.Item[T] // at most one, copied out of its chunk
			ctx := s.Context()
			flush := func() bool {
				if len(held) == 0 {
					return true
				}
				b := out.Buffer()
				b = append(b, stagekit.Item[U]{Value: mk(idx(held[0].Value), -1), Ticket: held[0].Ticket})
				held = held[:0]
				return out.Send(b)
			}
			for {
				select {
				case <-ctx.Done():
					return nil
				case c, ok := <-inl.C():
					if !ok {
						if !flush() {
							return nil
						}
						return nil
					}
					if ctx.Err() != nil {
						inl.Release(c)
						return nil
					}
					b := out.Buffer()
					for _, it := range c {
						switch {
						case invalid(it.Value):
							if err := s.Fail(it.Ticket, sluice.Invalid(errors.New("odd value"))); err != nil {
								inl.Release(c)
								return err
							}
						case fan(it.Value) == 2:
							s.Retain(it.Ticket, 1)
							i := idx(it.Value)
							b = append(b, stagekit.Item[U]{Value: mk(i, -1), Ticket: it.Ticket}, stagekit.Item[U]{Value: mk(i, -1), Ticket: it.Ticket})
						case len(held) == 0:
							held = append(held, it)
						default:
							t := s.Join([]stagekit.Ticket{held[0].Ticket, it.Ticket})
							b = append(b, stagekit.Item[U]{Value: mk(idx(held[0].Value), idx(it.Value)), Ticket: t})
							held = held[:0]
						}
					}
					inl.Release(c)
					if !out.Send(b) {
						return nil
					}
					// An empty, non-nil chunk is recycled, not sent.
					if !out.Send([]stagekit.Item[U]{}) {
						return nil
					}
				}
			}
		})
}

// tiny is a one-byte value, empty a zero-size one inside a struct with a
// zero-length array, wide a value with pointers spanning several words.
type (
	tiny  struct{ b byte }
	empty struct{ _ [0]int }
	wide  struct {
		a, b int
		_    [37]byte
		p    *int
		x    any
		_    [0]int
	}
)

func pairsConformance[T, U any](t *testing.T, name string, in func(int) T, idx func(T) int, mk func(a, b int) U, origin func(U) []int) {
	t.Run(name, func(t *testing.T) {
		stagetest.Run(t, stagetest.Stage[T, U]{
			Name: "Pairs",
			Build: func(s pipeline.Stream[T]) pipeline.Stream[U] {
				return pairs(s, idx, func(v T) int { return fanOf(idx(v)) }, func(v T) bool { return idx(v)%7 == 3 }, mk)
			},
			Input:   in,
			Origin:  origin,
			Invalid: func(v T) bool { return idx(v)%7 == 3 },
			Fanout:  func(v T) int { return fanOf(idx(v)) },
			Inputs:  23,
		})
	})
}

func fanOf(i int) int {
	if i%5 == 4 {
		return 2
	}
	return 1
}

func origins(a, b int) []int {
	if b < 0 {
		return []int{a}
	}
	return []int{a, b}
}

// A stage written only against stagekit, moving values of odd sizes and
// alignments through Buffer, Send, Release, C, Split and Join, passes
// the conformance suite.
func TestStagekitOnlyStageConformance(t *testing.T) {
	pairsConformance(t, "tiny to wide",
		func(i int) tiny { return tiny{byte(i)} }, func(v tiny) int { return int(v.b) },
		func(a, b int) wide { return wide{a: a, b: b, p: new(int), x: a} },
		func(w wide) []int { return origins(w.a, w.b) })
	pairsConformance(t, "pointer to interface",
		func(i int) *int { return &i }, func(v *int) int { return *v },
		func(a, b int) any { return [2]int{a, b} },
		func(v any) []int { p := v.([2]int); return origins(p[0], p[1]) })
	pairsConformance(t, "large array to int16",
		func(i int) [4096]int64 { var v [4096]int64; v[4095] = int64(i); return v }, func(v [4096]int64) int { return int(v[4095]) },
		func(a, b int) [2]int16 { return [2]int16{int16(a), int16(b)} },
		func(v [2]int16) []int { return origins(int(v[0]), int(v[1])) })
	type idxEmpty struct {
		_ empty
		i uint8
	}
	pairsConformance(t, "zero-size field",
		func(i int) idxEmpty { return idxEmpty{i: uint8(i)} }, func(v idxEmpty) int { return int(v.i) },
		func(a, b int) [2]int { return [2]int{a, b} },
		func(v [2]int) []int { return origins(v[0], v[1]) })
}

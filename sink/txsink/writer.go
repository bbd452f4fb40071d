package txsink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Writer writes values to a [Store] in transactions: at least once, or,
// with Options.ExactlyOnce, exactly once together with the partitions'
// positions (see the package documentation). Create one per consumer
// group with [New]; its Write stage serves every partition, and in
// exactly-once mode it is also the source's offset store. Its methods
// are safe for concurrent use.
type Writer[T any] struct {
	store Store[T]
	o     Options[T]
	err   error // a bad argument of New: Write fails the build with it

	mu     sync.Mutex
	group  string                             // the group of the first Claim
	claims map[sluice.TopicPartition]Position // claimed, not yet taken by a stage
}

var _ sluice.OffsetStore = (*Writer[int])(nil)

// New returns a Writer of store. A nil store or a bad option is reported
// when Write is called, as a build error naming the stage.
func New[T any](store Store[T], o Options[T]) *Writer[T] {
	w := &Writer[T]{store: store, o: o, claims: make(map[sluice.TopicPartition]Position)}
	if err := w.o.check(); err != nil {
		w.err = fmt.Errorf("txsink.New: %w", err)
	} else if store == nil {
		w.err = errors.New("txsink.New: store is nil")
	}
	return w
}

// Claim implements sluice.OffsetStore for a source's Config: the source
// calls it at every assignment. It claims tps in the store (raising their
// owner epochs, which fences their previous owners), keeps the positions
// for the partitions' Write stages and returns where each partition with
// a stored position resumes. It fails when the Writer is not in
// exactly-once mode, or serves another group already.
func (w *Writer[T]) Claim(ctx context.Context, group string, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	if w.err != nil {
		return nil, w.err
	}
	if !w.o.ExactlyOnce {
		return nil, fmt.Errorf("%s: the Writer is a source's offset store only with Options.ExactlyOnce", w.o.Name)
	}
	w.mu.Lock()
	if w.group != "" && w.group != group {
		w.mu.Unlock()
		return nil, fmt.Errorf("%s: the Writer serves group %q and cannot claim for group %q: create one Writer per group", w.o.Name, w.group, group)
	}
	w.group = group
	w.mu.Unlock()
	pos, err := w.store.Claim(ctx, group, tps)
	if err != nil {
		return nil, err
	}
	start := make(map[sluice.TopicPartition]int64, len(tps))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, tp := range tps {
		p, ok := pos[tp]
		if !ok {
			return nil, fmt.Errorf("%s: the store's Claim returned no position for %s[%d]", w.o.Name, tp.Topic, tp.Partition)
		}
		w.claims[tp] = p
		if p.Next >= 0 {
			start[tp] = p.Next
		}
	}
	return start, nil
}

// take hands the claimed position of tp to its Write stage, once.
func (w *Writer[T]) take(tp sluice.TopicPartition) (string, Position, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.claims[tp]
	delete(w.claims, tp)
	return w.group, p, ok
}

// Write adds the Writer's terminal stage to a partition's graph, from a
// pipeline.Builder: it batches the values, writes each batch in one
// transaction and completes the values' records once it committed (see
// the package documentation for errors, exactly-once and revokes). On a
// graceful revoke or shutdown it writes what it holds before the
// partition goes, and in exactly-once mode, once the graph finished,
// stores the partition's final position if it moved past the last one
// stored (dead letters delivered after the last rows, records filtered
// out), so that the next owner resumes there; once the partition's
// context is done (lost, drain timed out) it writes nothing more.
func (w *Writer[T]) Write(in pipeline.Stream[T]) pipeline.End {
	spec := stagekit.StageSpec{Name: w.o.Name, Kind: "txsink.Write", Problem: w.err}
	return stagekit.AddEnd(in, spec, func(s *stagekit.Stage, inl *stagekit.Inlet[T]) error {
		pw, err := w.partition(s)
		if err != nil {
			return s.Fail(stagekit.Ticket{}, err)
		}
		return stagekit.RunLoop(s, inl, stagekit.Loop[T, struct{}]{
			OnChunk: pw.chunk,
			Timer:   pw.timer,
			OnTick:  func(_ time.Time) error { return pw.flush() },
			OnDrain: func() error { pw.drained = true; return pw.flush() },
		})
	})
}

// partition returns the writer of s's partition, with its claimed
// position in exactly-once mode.
func (w *Writer[T]) partition(s *stagekit.Stage) (*partWriter[T], error) {
	part := s.Partition()
	tp := sluice.TopicPartition{Topic: part.Topic, Partition: part.Partition}
	pw := &partWriter[T]{w: w, s: s, tp: tp, pr: s.Probe(), timer: stagekit.NewTimer(), last: -1}
	if !w.o.ExactlyOnce {
		return pw, nil
	}
	group, pos, ok := w.take(tp)
	if !ok {
		return nil, fmt.Errorf("%s: exactly-once write of %s[%d] without a claim: set the source's Config.OffsetStore to this Writer", w.o.Name, tp.Topic, tp.Partition)
	}
	pw.eos, pw.group, pw.pos = true, group, pos
	pw.invalid = make(map[int64]bool, len(pos.Invalid))
	for _, off := range pos.Invalid {
		pw.invalid[off] = true
	}
	slices.Sort(pw.pos.Invalid)
	part.OnClose(pw.storeFinal)
	return pw, nil
}

package exactlyonce

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// stubTxn is a transactional producer in memory: produce adds an output to
// the open transaction; Commit makes its outputs and offsets visible,
// Abort drops them.
type stubTxn struct {
	mu       sync.Mutex
	open     bool
	pending  []string
	visible  []string          // outputs of committed transactions, in order
	commits  [][]sluice.Offset // offsets of each committed transaction
	aborts   int
	failNext error // returned by the next Commit
	// committed is the group's committed offset of each partition (what
	// the committed transactions committed); rewinds lists every Rewind
	// call as the offsets it sought to (-1: none committed).
	committed map[int32]int64
	rewinds   [][]sluice.Offset
	// onAbort, if set, runs once the transaction aborted, outside the lock.
	onAbort    func()
	failAbort  error // returned by every Abort
	failRewind error // returned by every Rewind
	// gone are the partitions whose topic Rewind reports gone.
	gone      map[int32]bool
	misplaced []string
}

func (s *stubTxn) Begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open {
		return errors.New("stub: Begin with a transaction open")
	}
	s.open = true
	return nil
}

func (s *stubTxn) Commit(_ context.Context, offs []sluice.Offset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return errors.New("stub: Commit without a transaction")
	}
	if err := s.failNext; err != nil {
		s.failNext = nil
		return err
	}
	s.open = false
	s.visible = append(s.visible, s.pending...)
	s.pending = nil
	sorted := slices.Clone(offs)
	slices.SortFunc(sorted, func(a, b sluice.Offset) int { return int(a.Partition - b.Partition) })
	s.commits = append(s.commits, sorted)
	if s.committed == nil {
		s.committed = map[int32]int64{}
	}
	for _, o := range offs {
		s.committed[o.Partition] = o.Next
	}
	return nil
}

func (s *stubTxn) Abort(context.Context) error {
	s.mu.Lock()
	s.open = false
	s.pending = nil
	s.aborts++
	hook, err := s.onAbort, s.failAbort
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return err
}

// Rewind records the committed offsets a consumer would seek tps to, and
// reports the partitions of gone gone (not sought, not recorded).
func (s *stubTxn) Rewind(_ context.Context, tps []sluice.TopicPartition) ([]sluice.TopicPartition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open {
		return nil, errors.New("stub: Rewind with a transaction open")
	}
	var to []sluice.Offset
	var gone []sluice.TopicPartition
	for _, tp := range tps {
		if s.gone[tp.Partition] {
			gone = append(gone, tp)
			continue
		}
		next, ok := s.committed[tp.Partition]
		if !ok {
			next = -1
		}
		to = append(to, sluice.Offset{TopicPartition: tp, Next: next})
	}
	s.rewinds = append(s.rewinds, to)
	return gone, s.failRewind
}

func (s *stubTxn) rewound() [][]sluice.Offset {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rewinds)
}

// produce is what a produce stage does: the output joins the open
// transaction (an output outside one is recorded as misplaced).
func (s *stubTxn) produce(out string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		s.misplaced = append(s.misplaced, out)
		return
	}
	s.pending = append(s.pending, out)
}

func (s *stubTxn) pendingOutputs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pending)
}

func (s *stubTxn) state() (visible []string, commits [][]sluice.Offset, aborts int, misplaced []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.visible), slices.Clone(s.commits), s.aborts, slices.Clone(s.misplaced)
}

// driver is a sluice.Source whose poll loop runs the calls a test sends
// it, on the Group wrapped by Wrap, one at a time.
type driver struct {
	txn   *stubTxn
	cfg   Config
	calls chan func(g *Group)
	ready chan *Group
	// wrap, if set, wraps the runtime's group before Insert does.
	wrap func(sluice.Group) sluice.Group
	// outer is the group Insert returned: the wrapping group when it is a
	// Layer, else the Group. Read it on the poll loop only.
	outer sluice.Group
}

func newDriver(txn *stubTxn, cfg Config) *driver {
	return &driver{txn: txn, cfg: cfg, calls: make(chan func(*Group)), ready: make(chan *Group, 1)}
}

func (d *driver) Run(ctx context.Context, inner sluice.Group) error {
	if d.wrap != nil {
		inner = d.wrap(inner)
	}
	feed, g := Insert(ctx, inner, d.txn, d.cfg)
	d.outer = feed
	d.ready <- g
	for {
		select {
		case <-ctx.Done():
			g.Shutdown()
			return g.Err()
		case fn := <-d.calls:
			fn(g)
		}
	}
}

// do runs fn on the poll loop and waits for it.
func (d *driver) do(fn func(g *Group)) {
	done := make(chan struct{})
	d.calls <- func(g *Group) { fn(g); close(done) }
	<-done
}

// start runs fn on the poll loop and returns a channel closed when it
// returned.
func (d *driver) start(fn func(g *Group)) <-chan struct{} {
	done := make(chan struct{})
	go func() { d.do(fn); close(done) }()
	return done
}

// gates holds chosen outputs in a stage until the test opens them: an
// output with a gate waits until it is open, the others pass at once.
// Its gates are fixed when it is made.
type gates map[string]chan struct{}

func newGates(outs ...string) gates {
	g := gates{}
	for _, o := range outs {
		g[o] = make(chan struct{})
	}
	return g
}

func (g gates) wait(ctx context.Context, out string) error {
	ch, ok := g[out]
	if !ok {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g gates) open(out string) { close(g[out]) }

// run starts pipeline.Run on d (testkit.Start) and returns the wrapped
// group and a function that stops Run and returns its error.
func run(t *testing.T, d *driver, build pipeline.Builder, opts ...pipeline.Option) (*Group, func() error) {
	t.Helper()
	r := testkit.Start(t, d, build, opts...)
	return <-d.ready, func() error { return r.Stop(t) }
}

func tp(p int32) sluice.TopicPartition { return sluice.TopicPartition{Topic: "in", Partition: p} }

func recs(p int32, from, to int64) []sluice.Record {
	var out []sluice.Record
	for o := from; o < to; o++ {
		out = append(out, sluice.Record{Topic: "in", Partition: p, Offset: o, Value: []byte{byte(o)}})
	}
	return out
}

func offs(pairs ...int64) []sluice.Offset {
	var out []sluice.Offset
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, sluice.Offset{TopicPartition: tp(int32(pairs[i])), Next: pairs[i+1]})
	}
	return out
}

const testBarrier = 2 * time.Second

// startFanOut starts Run on a new driver of txn with the fanOut graphs
// of txn and gs, and returns the driver and the function that stops Run.
func startFanOut(t *testing.T, txn *stubTxn, gs gates, opts ...pipeline.Option) (*driver, func() error) {
	t.Helper()
	d := newDriver(txn, Config{})
	_, stop := run(t, d, fanOut(txn, gs), opts...)
	return d, stop
}

// feed assigns the partitions of batches and delivers each batch, on the
// poll loop.
func (d *driver) feed(batches ...[]sluice.Record) {
	d.do(func(g *Group) {
		var tps []sluice.TopicPartition
		for _, b := range batches {
			tps = append(tps, tp(b[0].Partition))
		}
		_ = g.Assign(tps)
		for _, b := range batches {
			g.Deliver(tp(b[0].Partition), b)
		}
	})
}

// checkCommits checks the offsets of each committed transaction.
func checkCommits(t *testing.T, txn *stubTxn, want ...[]sluice.Offset) {
	t.Helper()
	if _, commits, _, _ := txn.state(); !slices.EqualFunc(commits, want, slices.Equal) {
		t.Fatalf("commits %v, want %v", commits, want)
	}
}

// checkCommitted checks that txn committed the offsets commits, in
// order, and the outputs want, in any order (each as many times as want
// holds it); it returns txn's aborts and its outputs produced outside a
// transaction.
func checkCommitted(t *testing.T, txn *stubTxn, want []string, commits ...[]sluice.Offset) (aborts int, misplaced []string) {
	t.Helper()
	checkCommits(t, txn, commits...)
	visible, _, aborts, misplaced := txn.state()
	if got := sorted(visible); !slices.Equal(got, want) {
		t.Fatalf("committed outputs %v, want %v", got, want)
	}
	return aborts, misplaced
}

// checkOneAbort checks that txn aborted once and committed nothing:
// no outputs visible, no offsets.
func checkOneAbort(t *testing.T, txn *stubTxn) {
	t.Helper()
	if visible, commits, aborts, _ := txn.state(); len(visible) != 0 || len(commits) != 0 || aborts != 1 {
		t.Fatalf("visible %v commits %v aborts %d; want nothing committed, one abort", visible, commits, aborts)
	}
}

// checkNoRewind checks that txn rewound no partition.
func checkNoRewind(t *testing.T, txn *stubTxn) {
	t.Helper()
	if got := txn.rewound(); len(got) != 0 {
		t.Fatalf("rewinds %v, want none", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fed is feed, returning once every goroutine of the bubble is blocked
// (the records delivered are processed as far as they can be).
func (d *driver) fed(batches ...[]sluice.Record) {
	d.feed(batches...)
	synctest.Wait()
}

// commitAndStop waits until every goroutine of the bubble is blocked (the
// records delivered are processed), has the group commit (Offsets) and
// stops Run, failing the test unless Run returned nil.
func commitAndStop(t *testing.T, d *driver, stop func() error) {
	t.Helper()
	synctest.Wait()
	d.do(func(g *Group) { g.Offsets() })
	if err := stop(); err != nil {
		t.Fatalf("Run returned %v, want nil", err)
	}
}

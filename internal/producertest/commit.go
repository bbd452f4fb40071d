package producertest

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// writesExactly: every input record is produced exactly once, with the
// key, value and headers ToMessage made; the input commits exactly to its
// end.
func (s *suite[P]) writesExactly(t *T) {
	const parts, n = 3, 200
	b := kafkatest.NewBroker(t)
	p := s.setUp(t, b, parts, n, "out", 2)
	in := b.ReadAll(t, "in")

	s.drain(t, b, parts, n, s.produceTo(p, "out"))

	out := b.ReadAll(t, "out")
	if len(out) != len(in) {
		t.Errorf("produced %d records, want %d", len(out), len(in))
	}
	byKey := map[string]sluice.Record{}
	for _, o := range out {
		if _, dup := byKey[string(o.Key)]; dup {
			t.Errorf("key %s produced twice", o.Key)
		}
		byKey[string(o.Key)] = o
	}
	for _, i := range in {
		o, ok := byKey[string(i.Key)]
		want, _ := ToMessage(i)
		switch {
		case !ok:
			t.Errorf("input %d@%d (key %s) not produced", i.Partition, i.Offset, i.Key)
		case string(o.Value) != string(want.Value) || headersString(o.Headers) != headersString(want.Headers):
			t.Errorf("output for key %s = value %q headers %s, want %q %s",
				i.Key, o.Value, headersString(o.Headers), want.Value, headersString(want.Headers))
		}
	}
}

// commitsOnlyAfterDelivery: while the broker refuses the output topic's
// produce requests with a retriable error, the client retries and no
// input offset is committed; once it accepts them, everything is
// delivered once (the producer is idempotent) and the input commits
// exactly to its end.
func (s *suite[P]) commitsOnlyAfterDelivery(t *T) {
	const n = 50
	b := kafkatest.NewKfake(t)
	p := s.setUp(t, b, 2, n, "out", 1)
	refused := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.NotEnoughReplicas, Count: -1})

	r := s.start(t, b, s.produceTo(p, "out"))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	// Twenty refused produce requests: the records were consumed and
	// produced, and the commit interval (50ms) passed many times.
	if err := refused.Wait(ctx, 20); err != nil {
		t.Fatalf("waiting for refused produce requests: %v", err)
	}
	if c := b.Committed(t, "g", "in"); len(c) != 0 {
		t.Errorf("committed %v while no delivery had succeeded, want nothing", c)
	}
	refused.Remove()
	WaitCommitted(t, b, r, "g", "in", map[int32]int64{0: n, 1: n})
	Stop(t, r)
	if out := b.ReadAll(t, "out"); len(out) != 2*n {
		t.Errorf("produced %d records, want %d", len(out), 2*n)
	}
}

package producertest

import (
	"errors"
	"slices"
	"strings"

	"github.com/sluice-go/sluice/sink"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// deliveryFailure: a delivery that fails for good (a non-retriable
// produce error) stops Run with a StageError at the first record whose
// delivery failed, naming the topic and the cause; the partition commits
// exactly up to it.
func (s *suite[P]) deliveryFailure(t *T) {
	const k = 10
	b := kafkatest.NewKfake(t)
	p := s.setUp(t, b, 1, k, "out", 1)

	r := s.start(t, b, s.produceTo(p, "out", stages.Name("to-out")))
	WaitCommitted(t, b, r, "g", "in", map[int32]int64{0: k})
	b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.InvalidRecord, Count: -1})
	b.Produce(t, "in", Input(1, k, 5)...)

	err := r.Wait(t)
	var se *sluice.StageError
	if !errors.As(err, &se) {
		t.Fatalf("Run = %v, want a *sluice.StageError", err)
	}
	isInvalid := s.h.Errors.IsInvalidRecord == nil || s.h.Errors.IsInvalidRecord(err)
	if se.Stage != "to-out" || se.Topic != "in" || se.Partition != 0 || se.Offset != k ||
		!strings.Contains(err.Error(), "delivery to out failed") || !strings.Contains(err.Error(), s.h.Errors.InvalidRecord) || !isInvalid {
		t.Errorf("Run = %v (%+v), want stage to-out failing at in/0@%d on the delivery to out with INVALID_RECORD (%q)",
			err, *se, k, s.h.Errors.InvalidRecord)
	}
	if c := b.Committed(t, "g", "in"); c[0] != k || len(c) != 1 {
		t.Errorf("committed %v, want {0: %d}", c, k)
	}
	if out := b.ReadAll(t, "out"); len(out) != k {
		t.Errorf("produced %d records, want the %d delivered before the failure", len(out), k)
	}
}

// permanentCase is a dead letter that cannot be delivered for a reason
// retrying cannot fix.
type permanentCase[P sink.Producer] struct {
	name  string
	cfg   Config // Brokers is set by the check
	value int    // size of the invalid record's value
	topic string
	setup func(*suite[P], *T, *kafkatest.Broker, P) // nil: none
	want  func(*suite[P]) string                    // what the error names
}

func permanentCases[P sink.Producer]() []permanentCase[P] {
	return []permanentCase[P]{
		{name: "closed producer", topic: "dlq", want: func(s *suite[P]) string { return s.h.ErrClosed.Error() },
			setup: func(s *suite[P], t *T, _ *kafkatest.Broker, p P) {
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "fatal error", topic: "dlq", want: func(s *suite[P]) string { return s.h.Errors.Fatal },
			setup: func(s *suite[P], t *T, _ *kafkatest.Broker, p P) {
				if s.h.InjectFatal == nil {
					t.Skip("the backend has no fatal client error to inject")
				}
				s.h.InjectFatal(p)
			}},
		{name: "message too large", topic: "dlq", cfg: Config{MaxMessageBytes: 1000}, value: 2000,
			want: func(s *suite[P]) string { return s.h.Errors.TooLarge }},
		// kfake, like Kafka with auto.create.topics.enable=false, never
		// creates the topic; the client gives up after its metadata
		// retries. (Without SkipTopicCheck, Run would refuse to start:
		// the topic check clause.)
		{name: "unknown topic", topic: "no-such-topic", cfg: Config{UnknownTopicFailsFast: true, SkipTopicCheck: true},
			want: func(s *suite[P]) string { return s.h.Errors.UnknownTopic }},
		{name: "invalid record", topic: "dlq", want: func(s *suite[P]) string { return s.h.Errors.InvalidRecord },
			setup: func(_ *suite[P], _ *T, b *kafkatest.Broker, _ P) {
				b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "dlq", Err: kerr.InvalidRecord, Count: -1})
			}},
	}
}

// deadLetterPermanent: a dead letter that cannot be delivered for a
// reason retrying cannot fix stops Run at once (no retry, although the
// default policy retries) with a StageError at the invalid record that
// names the cause; the partition commits exactly up to it and its dead
// letter is not stored.
func (s *suite[P]) deadLetterPermanent(t *T, tc permanentCase[P]) {
	const n = 20 // offset 3 is the first invalid record
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 1)
	b.CreateTopic(t, "dlq", 1)
	recs := Input(1, 0, n)
	recs[3].Value = make([]byte, max(tc.value, len(recs[3].Value)))
	b.Produce(t, "in", recs...)
	cfg := tc.cfg
	cfg.Brokers = b.Addrs()
	p := s.newProducer(t, cfg)
	if tc.setup != nil {
		tc.setup(s, t, b, p)
	}
	want := tc.want(s)
	var obs retries
	r := s.start(t, b, dlqBuilder,
		pipeline.WithDeadLetter(p.DeadLetter(tc.topic)), pipeline.WithHooks(&obs))
	err := r.Wait(t)
	var se *sluice.StageError
	if !errors.As(err, &se) {
		t.Fatalf("Run = %v, want a *sluice.StageError", err)
	}
	if se.Stage != "decode" || se.Partition != 0 || se.Offset != 3 || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), "dead-letter delivery failed") {
		t.Errorf("Run = %v, want stage decode failing at in/0@3 on the dead letter with %q", err, want)
	}
	if got := obs.n.Load(); got != 0 {
		t.Errorf("the dead letter was retried %d times, want none", got)
	}
	if c := b.Committed(t, "g", "in"); c[0] != 3 || len(c) != 1 {
		t.Errorf("committed %v, want {0: 3}", c)
	}
	// Dead letters of later records may have been handed over with it,
	// and stored; its own is not.
	for part, offs := range DeadLetterOffsets(t, b.ReadAll(t, "dlq")) {
		if part != 0 || slices.ContainsFunc(offs, func(o int64) bool { return o <= 3 }) {
			t.Errorf("dead letters of in/%d at %v stored, want none at or before offset 3", part, offs)
		}
	}
}

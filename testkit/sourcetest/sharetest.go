package sourcetest

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// ShareDriver is the environment of a share group source under test
// (Kafka share groups, KIP-932): something holding partitioned topics and
// share groups, and sources consuming them. Its methods are called from
// several tests at once (each scenario uses its own topic and group) and
// must be safe for concurrent use. A method fails t (t.Fatal) when the
// environment fails.
type ShareDriver interface {
	Topics

	// NewShareSource returns a share source consuming topic as a member
	// of share group group, which starts at the first record of each
	// partition (share.auto.offset.reset=earliest: the driver sets the
	// group up so). The broker locks a record it hands to a member for
	// at least 30 s (Kafka's default), so that a record a source
	// releases comes back long before its lock would expire. The suite
	// runs each source once, one source of a group at a time.
	NewShareSource(t *testing.T, group, topic string) sluice.Source

	// Unacknowledged returns, by partition of topic, how many records
	// below the partition's end group has neither acknowledged nor
	// archived (the share-partition lag of KIP-1226): records available
	// or locked for a member. Partitions the group has no state for yet
	// are absent. It is called while a source of the group runs.
	Unacknowledged(t *testing.T, group, topic string) map[int32]int64

	// MaxDeliveries is the delivery limit of the sources NewShareSource
	// returns: they hand a record the broker delivered more times than
	// that to DeadLetterRecord. It is below the broker's own limit
	// (group.share.delivery.count.limit), and 0 when the sources have
	// none (the MaxDeliveries scenario is then skipped).
	MaxDeliveries() int
}

// ShutdownTimeout bounds how long a source's Run may take to return once
// ctx is done, past the drain (pipeline.WithDrainTimeout): flushing what
// it must, closing its client.
var ShutdownTimeout = 10 * time.Second

// RunShare runs every share scenario against d, each as a parallel
// subtest of t. Every source in them is checked by a [CheckingAckGroup];
// a scenario fails on any violation, and a failed scenario reports the
// clauses it exercises (§11 and §12, which the checker cannot see, are
// checked by the scenarios only).
//
// The scenarios cover: every record delivered once and accepted; invalid
// records dead-lettered and accepted, or rejected without a dead-letter
// destination, and not delivered again; a record whose retries ran out
// released, delivered again and accepted; a record failing every delivery
// handed to DeadLetterRecord once the broker delivered it MaxDeliveries
// times (dead-lettered and accepted, or rejected without a destination); a
// graceful shutdown with a record hanging, which returns within the
// drain timeout plus ShutdownTimeout, acknowledges what finished and
// releases the rest to the next member, each record processed once in
// all; Run returning promptly when cancelled while idle; and partitions
// paused by backpressure and resumed, nothing lost or repeated.
func RunShare(t *testing.T, d ShareDriver) {
	runScenarios(t, d, []scenario[ShareDriver]{
		{"AcceptEachOnce", shareAcceptEachOnce, []int{ClauseShareAssign, ClauseAcknowledge}},
		{"InvalidRejected", shareInvalid(false), []int{ClauseAcknowledge}},
		{"InvalidDeadLettered", shareInvalid(true), []int{ClauseAcknowledge}},
		{"ReleasedComesBack", shareReleasedComesBack, []int{ClauseAcknowledge, ClauseShareAssign}},
		{"MaxDeliveriesDeadLettered", shareMaxDeliveries(true), []int{ClauseMaxDeliveries}},
		{"MaxDeliveriesRejected", shareMaxDeliveries(false), []int{ClauseMaxDeliveries}},
		{"ShutdownReleasesUnfinished", shareShutdown, []int{ClauseRelease, ClauseAcknowledge, ClauseShutdown}},
		{"CancelWhileIdle", shareCancelIdle, []int{ClauseShutdown}},
		{"PauseAndResume", sharePauseResume, []int{ClausePause, ClauseAcknowledge}},
	})
}

// startShare runs pipeline.Run over a checked share source of
// group/topic. At cleanup, once Run stopped, every contract violation the
// source made fails t.
func startShare(t *testing.T, d ShareDriver, group, topic string, build pipeline.Builder, opts ...pipeline.Option) (*testkit.Running, *CheckedShareSource) {
	t.Helper()
	src := CheckShare(d.NewShareSource(t, group, topic))
	t.Cleanup(func() { src.Verify(t) }) // runs after Start's cleanup stopped Run
	return testkit.Start(t, src, build, opts...), src
}

// waitAcknowledged waits until group has acknowledged (or archived) every
// record of the parts partitions of topic.
func waitAcknowledged(t *testing.T, d ShareDriver, r *testkit.Running, group, topic string, parts int32) {
	t.Helper()
	var got map[int32]int64
	r.WaitUntil(t, "every record acknowledged", func() bool {
		got = d.Unacknowledged(t, group, topic)
		return maps.Equal(got, uniform(parts, 0))
	})
}

// checkOutcomes checks, for each of the first n records of every one of
// parts partitions, the outcomes the source took with Acks (in order)
// against want(p, offset); nil wants none (the record was never finished
// by this source).
func checkOutcomes(t *testing.T, src *CheckedShareSource, topic string, parts int32, n int64, want func(p int32, off int64) []sluice.AckOutcome) {
	t.Helper()
	cg := src.Group()
	bad := 0
	for p := range parts {
		for off := range n {
			got, deliveries := cg.Outcomes(sluice.TopicPartition{Topic: topic, Partition: p}, off)
			if w := want(p, off); !slices.Equal(got, w) {
				if bad++; bad <= 5 {
					t.Errorf("%s/%d@%d: outcomes %v taken (delivered %d times), want %v", topic, p, off, got, deliveries, w)
				}
			}
		}
	}
}

func outcomes(os ...sluice.AckOutcome) []sluice.AckOutcome { return os }

// stopWithin stops r, which must return nil within the drain plus
// ShutdownTimeout.
func stopWithin(t *testing.T, r *testkit.Running, drain time.Duration) {
	t.Helper()
	began := time.Now()
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if took := time.Since(began); took > drain+ShutdownTimeout {
		t.Errorf("Run returned %v after ctx was done, want at most the drain timeout (%v) plus %v", took, drain, ShutdownTimeout)
	}
}

// noneHeld checks that the source took the outcome of every record it
// delivered.
func noneHeld(t *testing.T, src *CheckedShareSource) {
	t.Helper()
	if held := src.Group().Held(); len(held) > 0 {
		t.Errorf("%d records delivered without an outcome taken (Acks): %v", len(held), fmt.Sprint(held[:min(len(held), 5)]))
	}
}

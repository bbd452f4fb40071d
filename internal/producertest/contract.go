package producertest

import (
	"fmt"
	"testing"
)

// The clauses of the producer contract, each the name of the subtest that
// checks it and the beginning of every failure message of that subtest.
// Rules quotes each in full.
const (
	ClauseCommitAfterDelivery = "commit only after delivery"
	ClauseDeadLetterBytes     = "dead letters: byte for byte with provenance headers"
	ClauseDeadLetterOrder     = "dead letters: in offset order per partition"
	ClauseErrorKinds          = "errors by kind"
	ClauseCloseBounds         = "close bounds"
	ClauseTopicCheck          = "topic check"
	ClauseBuild               = "build"
)

// Rules states each clause of the producer contract, by its name.
var Rules = map[string]string{
	ClauseCommitAfterDelivery: "An input offset is committed only once every message made from it (Produce output or dead letter) was delivered; " +
		"while the broker refuses them nothing is committed, the client retries, and each message is stored exactly once.",
	ClauseDeadLetterBytes: "A dead letter carries its record's key, value, timestamp and headers untouched, " +
		"followed by the sluice.dlq.* headers naming its topic, partition, offset, error and stage.",
	ClauseDeadLetterOrder: "A partition's dead letters are handed over without waiting for each other's delivery and stored in offset order, each once; " +
		"when they start failing, Run stops at the first record whose dead letter failed and commits exactly up to it.",
	ClauseErrorKinds: "A delivery failure retrying cannot fix (permanent) stops Run at once, with a StageError at the record whose message failed naming the cause; " +
		"a transient one is retried (by the client; a dead letter also by the retry policy) and stops Run only once it outlasts the delivery timeout.",
	ClauseCloseBounds: "Close returns within its close timeout and a bounded slack, gives up on the messages still undelivered and names each by its input record; " +
		"calls waiting on them fail with ErrClosed, nothing of them is committed, and a closed producer refuses work with ErrClosed.",
	ClauseTopicCheck: "A missing or empty topic is named before anything is consumed: the dead-letter topic when Run starts, " +
		"the output topic at the first build, the input topic before the source joins its group; ProducerConfig.SkipTopicCheck turns the producer's checks off.",
	ClauseBuild: "A Produce stage given a nil producer, an empty topic, a nil toMsg, a zero producer value or a producer created inside the builder, " +
		"fails the build with a *sluice.BuildError naming the stage and the mistake.",
}

// T is the *testing.T of a check: its failures begin with the clause the
// check is for, and when the check failed its output ends with the rule
// of that clause.
type T struct {
	*testing.T
	clause string
}

func clauseT(t *testing.T, clause string) *T {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the check is for the clause %q: %s", clause, Rules[clause])
		}
	})
	return &T{T: t, clause: clause}
}

// Errorf reports a failure that names the clause.
func (t *T) Errorf(format string, args ...any) {
	t.T.Helper()
	t.T.Errorf("%s: %s", t.clause, fmt.Sprintf(format, args...))
}

// Fatalf reports a failure that names the clause and stops the check.
func (t *T) Fatalf(format string, args ...any) {
	t.T.Helper()
	t.T.Fatalf("%s: %s", t.clause, fmt.Sprintf(format, args...))
}

// Error reports a failure that names the clause.
func (t *T) Error(args ...any) {
	t.T.Helper()
	t.T.Errorf("%s: %s", t.clause, fmt.Sprint(args...))
}

// Fatal reports a failure that names the clause and stops the check.
func (t *T) Fatal(args ...any) {
	t.T.Helper()
	t.T.Fatalf("%s: %s", t.clause, fmt.Sprint(args...))
}

// Run runs f as a subtest of the same clause.
func (t *T) Run(name string, f func(t *T)) bool {
	t.T.Helper()
	return t.T.Run(name, func(tt *testing.T) { f(&T{T: tt, clause: t.clause}) })
}

package producertest

import (
	"fmt"

	"github.com/sluice-go/sluice/sink"

	"github.com/twmb/franz-go/pkg/kerr"
)

// check is one subtest of a clause.
type check[P sink.Producer] struct {
	name     string
	parallel bool
	fn       func(s *suite[P], t *T)
}

// clauseChecks are the checks of one clause of the contract.
type clauseChecks[P sink.Producer] struct {
	clause string
	checks []check[P]
}

// clauses lists every check of the producer contract under the clause it
// checks, in the order Run runs them.
func clauses[P sink.Producer]() []clauseChecks[P] {
	return []clauseChecks[P]{
		{ClauseBuild, []check[P]{
			{"producer created inside the builder", false, (*suite[P]).producerInBuilder},
			{"bad arguments", true, (*suite[P]).badArguments},
		}},
		{ClauseCommitAfterDelivery, append([]check[P]{
			{"every record produced once", true, (*suite[P]).writesExactly},
			{"nothing committed while deliveries are refused", true, (*suite[P]).commitsOnlyAfterDelivery},
		}, transientFaultChecks[P]()...)},
		{ClauseDeadLetterBytes, []check[P]{
			{"record and origin", true, (*suite[P]).deadLetterCarriesRecord},
		}},
		{ClauseDeadLetterOrder, []check[P]{
			{"handed over together, stored in order", true, (*suite[P]).deadLettersInOrder},
			{"failing midway stops Run at the first", true, (*suite[P]).deadLettersFailingMidway},
		}},
		{ClauseErrorKinds, append([]check[P]{
			{"permanent delivery failure stops Run", true, (*suite[P]).deliveryFailure},
		}, errorCaseChecks[P]()...)},
		{ClauseCloseBounds, []check[P]{
			{"gives up on undelivered messages", true, (*suite[P]).closeGivesUp},
			{"fails a waiting dead letter", true, (*suite[P]).closeFailsWaitingDeadLetter},
			{"closed producer refuses work", true, (*suite[P]).closedProducer},
		}},
		{ClauseTopicCheck, []check[P]{
			{"missing dead-letter topic fails Run at start", true, (*suite[P]).missingDeadLetterTopic},
			{"empty dead-letter topic fails Run at start", true, (*suite[P]).emptyDeadLetterTopic},
			{"SkipTopicCheck starts with a missing dead-letter topic", true, (*suite[P]).skipTopicCheck},
			{"missing output topic fails the first build", true, (*suite[P]).missingOutputTopic},
			{"missing input topic fails Run before joining", true, (*suite[P]).missingInputTopic},
		}},
	}
}

// transientFaultChecks: every fault case under each retriable broker
// error, retried until delivered.
func transientFaultChecks[P sink.Producer]() []check[P] {
	var cs []check[P]
	for _, fault := range []*kerr.Error{kerr.NotLeaderForPartition, kerr.RequestTimedOut} {
		for _, fc := range faultCases[P]() {
			cs = append(cs, check[P]{fmt.Sprintf("transient faults/%s/%s", fc.name, fault.Message), true,
				func(s *suite[P], t *T) { s.transientFaults(t, fc, fault) }})
		}
	}
	return cs
}

// errorCaseChecks: every permanent dead-letter failure, and every fault
// case with a fault outlasting the delivery timeout.
func errorCaseChecks[P sink.Producer]() []check[P] {
	var cs []check[P]
	for _, pc := range permanentCases[P]() {
		cs = append(cs, check[P]{"permanent dead-letter failure stops Run/" + pc.name, true,
			func(s *suite[P], t *T) { s.deadLetterPermanent(t, pc) }})
	}
	for _, fc := range faultCases[P]() {
		cs = append(cs, check[P]{"transient fault outlasting the delivery timeout/" + fc.name, true,
			func(s *suite[P], t *T) { s.persistentFault(t, fc) }})
	}
	return cs
}

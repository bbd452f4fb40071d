package producertest

import "testing"

// Every clause has a rule, and every check Run runs belongs to one.
func TestEveryClauseHasARule(t *testing.T) {
	for _, c := range []string{ClauseCommitAfterDelivery, ClauseDeadLetterBytes, ClauseDeadLetterOrder,
		ClauseErrorKinds, ClauseCloseBounds, ClauseTopicCheck, ClauseBuild} {
		if Rules[c] == "" {
			t.Errorf("clause %q has no rule", c)
		}
	}
	if len(Rules) != 7 {
		t.Errorf("%d rules, want one per clause (7)", len(Rules))
	}
}

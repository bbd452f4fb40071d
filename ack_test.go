package sluice

import "testing"

func TestAckOutcomeString(t *testing.T) {
	for o, want := range map[AckOutcome]string{AckAccepted: "accepted", AckRejected: "rejected", AckReleased: "released", 0: "AckOutcome(0)"} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int8(o), got, want)
		}
	}
}

package main

import (
	"errors"
	"fmt"
	"testing"
)

// The kill of the joiner after its JoinGroup reply waits for the
// rebalance's last round, counting the rounds from the group's states
// as the broker describes them (no generation; a classic group shows
// assignments only while Stable).
func TestJoinedPastPreparingWaitsForTheLastRound(t *testing.T) {
	// g is a group of p0.1 and p1.1, and the joiner p2.2 owning joiner
	// if joiner is not nil.
	g := func(state string, joiner []int32) groupState {
		s := groupState{state: state, members: map[string][]int32{"p0.1": {}, "p1.1": {}}}
		if joiner != nil {
			s.members["p2.2"] = joiner
		}
		return s
	}
	none, some := []int32{}, []int32{3, 7}
	type look struct {
		g    groupState
		kill bool
	}
	for _, tc := range []struct {
		name  string
		need  int
		looks []look
	}{
		{"range", 1, []look{
			{g("Stable", nil), false}, // not a member yet
			{g("PreparingRebalance", none), false},
			{g("CompletingRebalance", none), true},
		}},
		{"range, first seen past its JoinGroup reply", 1, []look{
			{g("CompletingRebalance", none), true},
		}},
		{"range, first seen stable owning nothing", 1, []look{
			{g("Stable", none), false},
			{g("Stable", some), true},
		}},
		{"cooperative-sticky", 2, []look{
			{g("PreparingRebalance", nil), false},
			{g("PreparingRebalance", none), false},
			{g("CompletingRebalance", none), false}, // the first round
			{groupState{err: errors.New("timeout")}, false},
			{g("Stable", none), false}, // between the rounds
			{g("PreparingRebalance", none), false},
			{g("CompletingRebalance", none), true}, // the last round's sync
		}},
		{"cooperative-sticky, the second PreparingRebalance missed", 2, []look{
			{g("PreparingRebalance", none), false},
			{g("Stable", none), false},
			{g("CompletingRebalance", none), false},
			{g("Stable", some), true}, // owning partitions: the last round is over
		}},
		{"cooperative-sticky, first seen past its first JoinGroup reply", 2, []look{
			{g("CompletingRebalance", none), false},
			{g("PreparingRebalance", none), false},
			{g("Stable", none), false}, // CompletingRebalance missed
			{g("Stable", some), true},
		}},
		{"KIP-848", 0, []look{
			{g("Assigning", nil), false},
			{g("Stable", none), false}, // a member owning nothing yet
			{g("Reconciling", none), true},
		}},
	} {
		r := joinRounds{id: "p2.2", need: tc.need}
		for i, l := range tc.looks {
			r.observe(l.g)
			got, why := r.joinedPastPreparing(l.g)
			if got != l.kill || (!got && why == "") {
				t.Errorf("%s, look %d (%v): joinedPastPreparing = %v %q, want %v; rounds %s", tc.name, i, l.g, got, why, l.kill,
					fmt.Sprintf("%d of %d", r.answered, r.need))
			}
		}
	}
}

package main

import (
	"fmt"
	"testing"
)

func TestPlansAreDeterministicGivenTheSeed(t *testing.T) {
	for seed := int64(1); seed < 20; seed++ {
		if a, b := fmt.Sprint(randomPlan(seed, 3, 16)), fmt.Sprint(randomPlan(seed, 3, 16)); a != b {
			t.Fatalf("seed %d: two plans differ:\n%s\n%s", seed, a, b)
		}
		if a, b := fmt.Sprint(shortPlan(seed, 3)), fmt.Sprint(shortPlan(seed, 3)); a != b {
			t.Fatalf("seed %d: two short plans differ:\n%s\n%s", seed, a, b)
		}
	}
	if fmt.Sprint(randomPlan(1, 3, 16)) == fmt.Sprint(randomPlan(2, 3, 16)) {
		t.Fatal("seeds 1 and 2 give the same plan")
	}
}

func TestShortPlanHasEveryKindOnceAndKillsAnExistingMember(t *testing.T) {
	for seed := int64(1); seed < 50; seed++ {
		p := shortPlan(seed, 3)
		want := []stepKind{termRestart, killRestart, killInRebalance, stopAll, killJoinerJoined}
		if len(p) != len(want) {
			t.Fatalf("seed %d: %d steps", seed, len(p))
		}
		for i, st := range p {
			if st.kind != want[i] || st.slot < 0 || st.slot >= 3 || st.victim < 0 || st.victim >= 3 {
				t.Fatalf("seed %d: step %d = %+v", seed, i, st)
			}
		}
		if p[2].victim == p[2].slot {
			t.Fatalf("seed %d: the short plan kills the joining member before its JoinGroup reply: %v", seed, p[2])
		}
		if p[4].victim != p[4].slot {
			t.Fatalf("seed %d: the last step kills slot %d, not the joiner %d", seed, p[4].victim, p[4].slot)
		}
	}
}

func TestUniformPlansHaveOnlyTheirKind(t *testing.T) {
	for _, tc := range []struct {
		plan string
		kind stepKind
	}{{planStopAll, stopAll}, {planJoinerJoined, killJoinerJoined}} {
		p := planFor(tc.plan, 7, 3, 20)
		if len(p) != 20 {
			t.Fatalf("-plan %s -rounds 20: %d steps", tc.plan, len(p))
		}
		for i, st := range p {
			if st.kind != tc.kind || st.slot < 0 || st.slot >= 3 || st.victim != st.slot {
				t.Fatalf("-plan %s: step %d = %+v, want %v of the slot restarted", tc.plan, i, st, tc.kind)
			}
		}
		if a, b := fmt.Sprint(p), fmt.Sprint(planFor(tc.plan, 7, 3, 20)); a != b {
			t.Fatalf("-plan %s: two plans of seed 7 differ:\n%s\n%s", tc.plan, a, b)
		}
	}
	if a, b := fmt.Sprint(planFor(planRandom, 3, 3, 16)), fmt.Sprint(randomPlan(3, 3, 16)); a != b {
		t.Fatalf("-plan random is not the random plan:\n%s\n%s", a, b)
	}
}

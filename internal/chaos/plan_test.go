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
		want := []stepKind{termRestart, killRestart, killInRebalance, stopAll}
		if len(p) != len(want) {
			t.Fatalf("seed %d: %d steps", seed, len(p))
		}
		for i, st := range p {
			if st.kind != want[i] || st.slot < 0 || st.slot >= 3 || st.victim < 0 || st.victim >= 3 {
				t.Fatalf("seed %d: step %d = %+v", seed, i, st)
			}
		}
		if p[2].victim == p[2].slot {
			t.Fatalf("seed %d: the short plan kills the joining member: %v", seed, p[2])
		}
	}
}

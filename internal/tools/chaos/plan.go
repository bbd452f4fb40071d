package main

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// stepKind is one kind of disturbance.
type stepKind int

const (
	// termRestart: SIGTERM one process, wait for it to exit 0 and the
	// group to recover without it, start it again, wait for recovery.
	termRestart stepKind = iota
	// killRestart: SIGKILL one process, wait until the group dropped it
	// (session timeout) and recovered, start it again.
	killRestart
	// killInRebalance: SIGTERM one process and start it again; as soon as
	// the new incarnation shows up in the group (the rebalance is under
	// way), SIGKILL victim (which may be the one joining).
	killInRebalance
	// stopAll: SIGTERM every process at once, wait for all to exit 0,
	// start them all again.
	stopAll
	// killJoinerJoined: SIGTERM one process and start it again; SIGKILL
	// the new incarnation once the broker has answered its JoinGroup
	// (classic groups: it is a member and the group has left
	// PreparingRebalance), so while it syncs or waits for the next
	// cooperative round. kfake arms a classic member's session timer only
	// when a reply reaches it: a joiner killed before its JoinGroup reply
	// is never expired, one killed after it is, as in Kafka (see
	// docs/reliability.md). Under KIP-848 it is killInRebalance of the
	// joiner.
	killJoinerJoined
)

var stepKindNames = [...]string{
	termRestart:      "SIGTERM+restart",
	killRestart:      "SIGKILL+restart",
	killInRebalance:  "SIGKILL during rebalance",
	stopAll:          "SIGTERM all+restart",
	killJoinerJoined: "SIGKILL of the joiner after its JoinGroup reply",
}

func (k stepKind) String() string {
	if k >= 0 && int(k) < len(stepKindNames) {
		return stepKindNames[k]
	}
	return fmt.Sprintf("stepKind(%d)", int(k))
}

// step is one planned disturbance.
type step struct {
	kind   stepKind
	slot   int           // the process signalled (termRestart, killRestart) or restarted (killInRebalance)
	victim int           // killInRebalance: the process killed during the rebalance
	settle time.Duration // how long the group works undisturbed before the step
}

func (s step) String() string {
	switch s.kind {
	case termRestart, killRestart:
		return fmt.Sprintf("%v of slot %d", s.kind, s.slot)
	case killJoinerJoined:
		return fmt.Sprintf("%v: restart slot %d, kill it once joined", s.kind, s.slot)
	case killInRebalance:
		if s.victim == s.slot {
			return fmt.Sprintf("%v: restart slot %d, kill it while it joins", s.kind, s.slot)
		}
		return fmt.Sprintf("%v: restart slot %d, kill slot %d while it joins", s.kind, s.slot, s.victim)
	default:
		return s.kind.String()
	}
}

// shortPlan is the -short plan: one step of each kind, processes chosen
// by the seed. Its kill during a rebalance kills a member that was
// already in the group, never the one joining: with a classic group,
// kfake mishandles a member killed before its JoinGroup reply (see
// docs/reliability.md: it keeps it forever, or expires the live members
// waiting in JoinGroup), which Kafka does not. The joiner is killed by
// the last step instead, once its JoinGroup was answered, where kfake
// expires it as Kafka does. The random plans of the default and -long
// modes kill the joining member while it joins too.
func shortPlan(seed int64, procs int) []step {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	kinds := []stepKind{termRestart, killRestart, killInRebalance, stopAll}
	steps := make([]step, len(kinds), len(kinds)+1)
	for i, k := range kinds {
		steps[i] = randomStep(r, k, procs)
		if k == killInRebalance && steps[i].victim == steps[i].slot {
			steps[i].victim = (steps[i].slot + 1 + r.IntN(procs-1)) % procs
		}
	}
	// Drawn after the others, so that they stay what they were.
	joiner := randomStep(r, killJoinerJoined, procs)
	joiner.victim = joiner.slot
	return append(steps, joiner)
}

// randomPlan is a plan of n steps drawn from the seed: graceful restarts
// most often, then kills, kills during rebalances and full stops.
func randomPlan(seed int64, procs, n int) []step {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	weighted := []stepKind{termRestart, termRestart, termRestart, killRestart, killRestart, killInRebalance, killInRebalance, stopAll}
	steps := make([]step, n)
	for i := range steps {
		steps[i] = randomStep(r, weighted[r.IntN(len(weighted))], procs)
	}
	return steps
}

func randomStep(r *rand.Rand, k stepKind, procs int) step {
	return step{
		kind:   k,
		slot:   r.IntN(procs),
		victim: r.IntN(procs),
		settle: 200*time.Millisecond + time.Duration(r.IntN(800))*time.Millisecond,
	}
}

// Plan names, the values of -plan.
const (
	planRandom       = "random"
	planStopAll      = "stop-all"
	planJoinerJoined = "kill-joiner-joined"
)

var planNames = []string{planRandom, planStopAll, planJoinerJoined}

// planFor returns the named plan of n steps for seed (-short has its own,
// shortPlan).
func planFor(name string, seed int64, procs, n int) []step {
	switch name {
	case planStopAll:
		return uniformPlan(seed, stopAll, procs, n)
	case planJoinerJoined:
		return uniformPlan(seed, killJoinerJoined, procs, n)
	}
	return randomPlan(seed, procs, n)
}

// uniformPlan is n steps of kind k, the process and the pauses drawn from
// the seed: "-plan stop-all -rounds 20" is 20 consecutive stops of every
// process at once.
func uniformPlan(seed int64, k stepKind, procs, n int) []step {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	steps := make([]step, n)
	for i := range steps {
		steps[i] = randomStep(r, k, procs)
		steps[i].victim = steps[i].slot
	}
	return steps
}

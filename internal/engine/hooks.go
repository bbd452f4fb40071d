package engine

import (
	"time"

	"github.com/sluice-go/sluice"
)

// This file holds the event hooks: hookSet, the configured hooks sorted by
// event once per Run, by the per-event interfaces of package sluice
// (sluice.HookPartitionAssigned and so on). An event no hook handles costs
// a length check; stages read the clock only when some hook handles stage
// calls (Stage.Observed).

// hookSet is the configured hooks by event, each slice in registration
// order. It is built once and only read after.
type hookSet struct {
	partitionAssigned  []sluice.HookPartitionAssigned
	partitionRevoked   []sluice.HookPartitionRevoked
	partitionLost      []sluice.HookPartitionLost
	partitionPaused    []sluice.HookPartitionPaused
	partitionResumed   []sluice.HookPartitionResumed
	recordsDelivered   []sluice.HookRecordsDelivered
	recordsCompleted   []sluice.HookRecordsCompleted
	valuesFiltered     []sluice.HookValuesFiltered
	recordDeadLettered []sluice.HookRecordDeadLettered
	inFlight           []sluice.HookInFlight
	stageCall          []sluice.HookStageCall
	stageRetry         []sluice.HookStageRetry
	stageFailed        []sluice.HookStageFailed
	stuck              []sluice.HookStuck
	polled             []sluice.HookPolled
	joined             []sluice.HookJoined
	committed          []sluice.HookCommitted
	highWatermark      []sluice.HookHighWatermark
}

// add files h under every event it handles and returns how many.
func (hs *hookSet) add(h Hook) int {
	n := 0
	addIf(&hs.partitionAssigned, h, &n)
	addIf(&hs.partitionRevoked, h, &n)
	addIf(&hs.partitionLost, h, &n)
	addIf(&hs.partitionPaused, h, &n)
	addIf(&hs.partitionResumed, h, &n)
	addIf(&hs.recordsDelivered, h, &n)
	addIf(&hs.recordsCompleted, h, &n)
	addIf(&hs.valuesFiltered, h, &n)
	addIf(&hs.recordDeadLettered, h, &n)
	addIf(&hs.inFlight, h, &n)
	addIf(&hs.stageCall, h, &n)
	addIf(&hs.stageRetry, h, &n)
	addIf(&hs.stageFailed, h, &n)
	addIf(&hs.stuck, h, &n)
	addIf(&hs.polled, h, &n)
	addIf(&hs.joined, h, &n)
	addIf(&hs.committed, h, &n)
	addIf(&hs.highWatermark, h, &n)
	return n
}

func addIf[I any](s *[]I, h Hook, n *int) {
	if i, ok := h.(I); ok {
		*s = append(*s, i)
		*n++
	}
}

// newHookSet sorts hs by event.
func newHookSet(hs []Hook) *hookSet {
	set := &hookSet{}
	for _, h := range hs {
		set.add(h)
	}
	return set
}

// EventsOf returns how many events h handles: 0 means h implements none
// of the hook interfaces. Package pipeline calls it to reject such a hook
// when the option is applied.
func EventsOf(h Hook) int {
	var probe hookSet
	return probe.add(h)
}

func (hs *hookSet) PartitionAssigned(tp TopicPartition) {
	for _, h := range hs.partitionAssigned {
		h.OnPartitionAssigned(tp)
	}
}

func (hs *hookSet) PartitionRevoked(tp TopicPartition, drain time.Duration, timedOut bool) {
	for _, h := range hs.partitionRevoked {
		h.OnPartitionRevoked(tp, drain, timedOut)
	}
}

func (hs *hookSet) PartitionLost(tp TopicPartition) {
	for _, h := range hs.partitionLost {
		h.OnPartitionLost(tp)
	}
}

func (hs *hookSet) PartitionPaused(tp TopicPartition) {
	for _, h := range hs.partitionPaused {
		h.OnPartitionPaused(tp)
	}
}

func (hs *hookSet) PartitionResumed(tp TopicPartition) {
	for _, h := range hs.partitionResumed {
		h.OnPartitionResumed(tp)
	}
}

func (hs *hookSet) RecordsDelivered(tp TopicPartition, n int) {
	for _, h := range hs.recordsDelivered {
		h.OnRecordsDelivered(tp, n)
	}
}

func (hs *hookSet) RecordsCompleted(tp TopicPartition, n int, next int64) {
	for _, h := range hs.recordsCompleted {
		h.OnRecordsCompleted(tp, n, next)
	}
}

func (hs *hookSet) ValuesFiltered(tp TopicPartition, stage string, n int) {
	for _, h := range hs.valuesFiltered {
		h.OnValuesFiltered(tp, stage, n)
	}
}

func (hs *hookSet) RecordDeadLettered(tp TopicPartition, stage string) {
	for _, h := range hs.recordDeadLettered {
		h.OnRecordDeadLettered(tp, stage)
	}
}

func (hs *hookSet) InFlight(records, bytes int64) {
	for _, h := range hs.inFlight {
		h.OnInFlight(records, bytes)
	}
}

// completesRecords reports whether some hook wants completed records.
func (hs *hookSet) completesRecords() bool { return len(hs.recordsCompleted) > 0 }

// timesStages reports whether some hook wants stage-call timings.
func (hs *hookSet) timesStages() bool { return len(hs.stageCall) > 0 }

func (hs *hookSet) StageCall(stage string, tp TopicPartition, d time.Duration, err error) {
	for _, h := range hs.stageCall {
		h.OnStageCall(stage, tp, d, err)
	}
}

func (hs *hookSet) StageRetry(stage string, tp TopicPartition, attempt int, delay time.Duration, err error) {
	for _, h := range hs.stageRetry {
		h.OnStageRetry(stage, tp, attempt, delay, err)
	}
}

func (hs *hookSet) StageFailed(stage string, tp TopicPartition, err error) {
	for _, h := range hs.stageFailed {
		h.OnStageFailed(stage, tp, err)
	}
}

func (hs *hookSet) Stuck(stage string, tp TopicPartition, offset int64, since time.Duration) {
	for _, h := range hs.stuck {
		h.OnStuck(stage, tp, offset, since)
	}
}

// Polled reads the clock only when some hook wants polls.
func (hs *hookSet) Polled() {
	if len(hs.polled) == 0 {
		return
	}
	at := time.Now()
	for _, h := range hs.polled {
		h.OnPolled(at)
	}
}

func (hs *hookSet) Joined() {
	for _, h := range hs.joined {
		h.OnJoined()
	}
}

func (hs *hookSet) Committed(offs []Offset, took time.Duration, err error) {
	for _, h := range hs.committed {
		h.OnCommitted(offs, took, err)
	}
}

func (hs *hookSet) HighWatermark(tp TopicPartition, high int64) {
	for _, h := range hs.highWatermark {
		h.OnHighWatermark(tp, high)
	}
}

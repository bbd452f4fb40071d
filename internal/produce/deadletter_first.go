package produce

import (
	"context"
	"time"
)

// This file lets dead letters into a full buffer ahead of the Produce
// stages. A stage whose message found the library's buffer full sends it
// again as soon as a delivery report of its own frees room, while a dead
// letter comes from a partition's dead-letter goroutine, which has no
// report to wait for: with the stages keeping the buffer full it would
// find the room taken each time it tried, and the partition's commit
// would stay behind the invalid record for as long as the stages had
// messages to send. So while a dead letter waits for room
// (Tracker.deadLetters, counted by sendDeadLetter) the stages of the
// producer send nothing: the buffer drains, and the dead letter's next
// try, at most QueueFullWait later, finds room. franz's producer, whose
// own count of its buffer tells when room frees, has its dead letters
// wait inside Send instead, and the stages leave them the room.

// yieldToDeadLetters handles delivery reports (or waits QueueFullWait)
// while dead letters of the producer wait for room in its buffer. It
// returns false when the stage must stop: with nil when ctx ended, with
// the stage's error when a delivery failed or the producer closed.
func (st *producing) yieldToDeadLetters(ctx context.Context) (bool, error) {
	for st.tr.deadLetters.Load() > 0 {
		if ok, err := st.await(ctx, time.After(QueueFullWait)); !ok {
			return false, err
		}
	}
	return true, nil
}

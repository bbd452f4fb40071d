// Package rebalance is the client-independent rebalance handling of
// Sluice's Kafka sources, and the poll loop it runs in. source.Source
// (confluent-kafka-go) and franz.Source (franz-go) each implement
// [Backend] for their client and hand the rest to a [Core]:
//
//   - Rebalances (rebalance.go): each backend's rebalance callback
//     translates its client's event into one call of Core.Assigned,
//     Core.Revoked or Core.Lost, then answers its client. The partitions a
//     callback names are authoritative under both protocols (eager names
//     the whole assignment, cooperative only what moves), so the core
//     needs no protocol: an assignment starts graphs for what it does not
//     own yet; a revoke drains the graphs of what it owns of the set, then
//     commits what they finished (drain then commit), while the client
//     still owns the partitions in the group's eyes; a loss cancels them
//     and commits nothing of theirs. Once the shutdown drained, a revoke
//     or loss only drops the partitions out of the final commit.
//     A revoke runs in this order: the batch being built is delivered
//     (those records were polled before the revoke), the partitions leave
//     the owned set (Backend.GaveUpPaused hears of those left paused),
//     their graphs drain, then the commit is sent after the one in flight
//     and waited for, bounded; only then does the backend answer its
//     client.
//   - The owned-set fence: records and offsets of partitions the core
//     does not own are dropped, never delivered nor committed.
//   - Commits (commit.go) and the bounded shutdown sequence
//     (shutdown.go), below.
//   - The poll loop around them (core.go): batching and backpressure
//     (pause/resume, and the records of paused partitions it keeps until
//     they resume: hold.go), sharing the owned set.
//
// Validation of the settings both backends share is in [Settings]. The
// runtime's side of a rebalance, starting, draining and cancelling the
// graph of each partition (Group.Assign, Revoke, Lose), is
// internal/engine's.
//
// # Offsets flow
//
// The client's auto-commit is off: the core sends every commit itself,
// through Backend.Commit on a goroutine of its own, never more than one at
// a time.
//
//   - Every commit interval the poll loop collects Group.Offsets into
//     pending (newest offset per owned partition) and, when no commit is
//     in flight, hands pending to one background commit. An interval that
//     finds a commit in flight sends once it is answered. The poll loop
//     never waits for a background commit; it picks the outcome up on its
//     next round.
//   - A failed background commit puts its offsets back into pending
//     (unless newer ones came, or the partition was given up meanwhile):
//     the next interval retries them.
//   - A revoke or shutdown first waits for the commit in flight, then
//     sends its synchronous commit (the drained partitions' offsets,
//     merged with what was pending for them) and waits for it, both
//     within one commit timeout (40% of CloseTimeout). A synchronous
//     commit that cannot be sent in time (the earlier one is still
//     unanswered) is reported as failed; one sent but unanswered in time
//     is abandoned and stays the commit in flight, so nothing else is
//     sent before the client answers it.
//   - A loss drops the lost partitions' pending offsets and, when the
//     commit in flight holds one of them, waits for it (bounded the same)
//     before the backend lets the partitions go, so that it cannot land
//     after the next owner's commits.
//
// So commits reach the broker in the order they were sent, one after the
// other, and an offset sent later is never older than one sent before for
// the same ownership of a partition. Offsets of partitions the source does
// not own are never sent (the owned-set fence, applied when offsets are
// collected and again when a commit is sent).
//
// # Concurrency
//
// A Core is used by one goroutine, the poll goroutine: Run and every
// method a backend calls from inside Backend.Poll (rebalance callbacks
// included: a client that runs them on a goroutine of its own, as kgo
// does, hands them to the poll goroutine and waits). Only Backend.Commit
// and Backend.Close run elsewhere, on goroutines of their own counted in
// Options.Background.
package rebalance

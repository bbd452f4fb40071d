// Package source implements the Kafka [sluice.Source] on librdkafka
// (github.com/confluentinc/confluent-kafka-go/v2, cgo). Its [Config] is
// the client-independent [sluice.GroupConfig] plus librdkafka's
// Overrides:
//
//	src, err := source.NewSource(source.Config{
//		GroupConfig: sluice.GroupConfig{Brokers: brokers, Group: "billing", Topics: []string{"orders"}},
//		Overrides:   map[string]any{"security.protocol": "SSL"},
//	})
//
// # Poll loop
//
// One goroutine polls the client with a short timeout (100ms, 10ms while a
// partition is paused) and never blocks on the graphs: consecutive records
// of one partition are handed to Group.Deliver in one call (up to 128, and
// up to an eighth of pipeline.WithMaxInFlightBytes; a heavier record goes
// alone); when Deliver asks for a pause the partition is paused in
// librdkafka, and what Group.Resumable lists (checked whenever Group.Wake
// fires) is resumed. librdkafka returns nothing of a paused partition; the
// record polled after the delivery that paused it, if any, is kept by the
// source and delivered before the partition is resumed. Rebalance
// callbacks run inside Poll, on the same goroutine.
//
// # Offsets
//
// The source sends every commit itself, one at a time; librdkafka's
// auto-committer is off (enable.auto.commit=false) and nothing is stored
// in librdkafka. Every Config.CommitInterval the loop collects
// Group.Offsets and, unless a commit is in flight, commits them on a
// goroutine of its own (CommitOffsets returns once librdkafka answered,
// after the retries it makes itself), so the poll loop never waits for
// the broker. An interval that finds a commit in flight sends as soon as
// it is answered; a failed commit is retried at the next interval (the
// runtime reports an offset only when it moves). On revoke and on shutdown
// the source waits for the commit in flight and then commits
// synchronously, both bounded by 40% of Config.CloseTimeout; the final
// commit is retried while the coordinator answers REBALANCE_IN_PROGRESS.
// A final commit the group refuses because its membership moved on (also
// a REBALANCE_IN_PROGRESS still answered at the end of that bound) is
// logged as a warning and is no error: no record is lost, the next owner
// processes the records after the previous commit again.
// A lost partition is not committed, and a commit in flight that holds
// it is waited for (bounded the same) before the loss is acknowledged to
// librdkafka. So commits reach the broker in order, and one is never
// overtaken by an older one still being retried. Offsets of partitions
// the source does not own are never committed (an owned-set fence).
// Commit errors expected around rebalances (REBALANCE_IN_PROGRESS,
// ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH,
// FENCED_MEMBER_EPOCH, FENCED_INSTANCE_ID) are logged at debug level, but
// the final commit's as a warning. Group.Committed receives every commit's duration, and a
// *sluice.CommitError naming the commit (interval, revoke, shutdown) when it
// failed.
//
// # Rebalances
//
// The eager assignors (range, roundrobin) revoke everything on every
// rebalance (Assign/Unassign); cooperative-sticky, the default, and KIP-848
// (Overrides "group.protocol": "consumer"; the broker assigns, so
// partition.assignment.strategy, session.timeout.ms and
// heartbeat.interval.ms are not client settings there) move only what changes
// (IncrementalAssign/IncrementalUnassign). All three are tested against
// kfake. A revoked partition goes through Group.Revoke and a synchronous
// commit before it is unassigned; a lost one (AssignmentLost, e.g. after a
// heartbeat was rejected with ILLEGAL_GENERATION) through Group.Lose and no
// commit. A newly assigned partition that this consumer left paused in an
// earlier assignment is resumed, as librdkafka keeps a partition paused
// across revoke and re-assign; the others are not touched. The resume is
// sent before the assign call: sent while librdkafka starts the
// partition, it may be dropped as outdated, leaving the partition paused.
//
// A topic deleted and created again under the same name while Run reads
// it is a new topic, but librdkafka keeps the partitions' fetch position
// across the recreation: it only adopts the new topic ID when its
// metadata shows it, and says so in a debug log line of its "metadata"
// context, the one report of the change it gives (the source adds that
// context to the "debug" property and watches the lines; they reach
// Config.Logger only when Overrides sets "debug" itself). On that line,
// before its next poll or event and before serving a rebalance callback
// (so that a revoke does not commit the old topic's offsets onto the new
// one), the poll loop loses the topic's owned partitions (their graphs are
// cancelled, nothing of theirs is committed any more, a commit in flight
// that holds one is waited for), seeks them to the group's committed
// offset of the new topic or, without one, where auto.offset.reset says
// (the old topic's offsets were deleted with it; with Config.OffsetStore,
// its Claim), which also drops what librdkafka fetched before, and gives
// them new graphs. librdkafka waits fetch.error.backoff.ms after the fetch
// error that made it look before it fetches the new topic, so the loop
// sees the line first; a topic recreated again before librdkafka's
// metadata showed it may be fetched from the restart's start before its
// line is seen, so the loop learns the topic's ID just before the seek
// and leaves the partitions alone on a later line naming that ID. A commit of the old topic's offsets sent before
// the line was seen may still land on the new topic (librdkafka commits
// by topic name): the new topic is then consumed from there. See
// docs/lifecycle.md, "A topic deleted or recreated".
//
// # Offset store
//
// With Config.OffsetStore set (a sink that keeps its partitions' offsets
// in its own transactions, such as a txsink.Writer in exactly-once mode),
// every assignment calls its Claim once, inside the rebalance callback on
// the poll goroutine, with the partitions this member does not own yet
// (the whole new assignment under an eager assignor, the added partitions
// under cooperative-sticky and KIP-848), before their graphs are built and
// before librdkafka is given them. Each partition the store returns an
// offset for is assigned at that offset, earlier or later than the
// group's commit; one it leaves out starts at the group's committed offset
// (or auto.offset.reset). The claim is also where the store fences the
// partition's previous owner: that member's writes are refused from then
// on. A Claim error (or a negative offset, or one for a partition the
// store was not asked to claim) stops Run with an error naming
// Config.OffsetStore, the group and the partitions; nothing of them is
// delivered. The group's commits go on as usual, so lag tools keep
// working; a partition's commit moves once a record of it completed (a
// partition started past the group's commit, with nothing new to read,
// shows that difference as lag until then). The store and a transactional producer
// (confluent.NewTransactionalProducer) are two exactly-once modes: Run refuses
// a source with both before it joins the group.
//
// # Defaults
//
// On top of librdkafka's defaults the source sets auto.offset.reset=earliest,
// partition.assignment.strategy=cooperative-sticky (not with KIP-848),
// fetch.queue.backoff.ms=10 (librdkafka otherwise waits a second before
// fetching again once its local queue is over its thresholds, which stalls
// a consumer that pauses and resumes) and fetch.wait.max.ms=100 (a resumed
// partition otherwise waits up to 500ms behind a long-poll fetch of
// caught-up partitions). Config.Overrides may change all of these.
//
// # Timeouts
//
// At Run start the source derives the group timeouts from the runtime's
// drain timeout (Group.DrainTimeout), unless Overrides set them:
// max.poll.interval.ms, which librdkafka also sends as the group's
// rebalance timeout, is drain timeout + the commit timeout (40% of
// Config.CloseTimeout) + 6s and at least session.timeout.ms: 30s with the
// defaults, instead of librdkafka's 300s, which a member that died
// mid-rebalance held the group for. session.timeout.ms is 10s and
// heartbeat.interval.ms min(3s, session/3) (classic protocol only: with
// KIP-848 both are broker settings and librdkafka rejects them). An
// override of max.poll.interval.ms below drain timeout + commit timeout,
// the longest a revoke keeps the poll loop, makes Run fail before any
// other Group call.
//
// # Shutdown
//
// When ctx is done: Group.Shutdown (the drain); the final synchronous
// commit, once the background commit in flight was answered, so that it
// is the last commit sent; leaving the group (Unsubscribe, then serving the revoke in the
// poll loop until nothing is assigned); closing the client. The commit
// and the leave share the first 40% of Config.CloseTimeout, Close the
// rest, on its own goroutine. The source leaves the group itself because
// a rebalance callback served inside confluent-kafka-go's Close can block
// forever in IncrementalUnassign (librdkafka#4884; see shutdown.go);
// Close then has nothing to call back for. Run returns an error naming
// the step that did not finish in time; a Close past its bound is left
// running in the background.
//
// # Fatal errors
//
// A fatal client error (kafka.Error.IsFatal, e.g. a static member fenced by
// another instance with the same group.instance.id) makes Run call
// Group.Lose on every owned partition and return the error. With
// confluent-kafka-go v2.11.1 closing a consumer in that state never
// completes (confluent-kafka-go#1588), so Run closes it on a background
// goroutine that, with that version, never exits: the librdkafka handle
// leaks until the process ends. Treat a fatal error as a reason to exit.
//
// # Logs
//
// librdkafka's logs go to Config.Logger (syslog levels 0-3 as Error, 4 as
// Warn, 5-6 as Info, 7 as Debug); set the "debug" property in Overrides for
// librdkafka debug contexts. Values of secret properties are never logged.
package source

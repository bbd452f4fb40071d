// Package franz implements the Kafka [sluice.Source] and a producer (a
// sink.Producer: its graphs end in sink.Produce, its dead letters go
// through [Producer.DeadLetter]) on franz-go (github.com/twmb/franz-go/pkg/kgo),
// in pure Go: no cgo, so programs using it build with CGO_ENABLED=0. It gives the guarantees of the
// librdkafka source in package source (read its documentation too); this
// page says how, and where the two differ.
//
// Its [Config] is the client-independent [sluice.GroupConfig], the same
// value package source takes, plus kgo options:
//
//	src, err := franz.NewSource(franz.Config{
//		GroupConfig: sluice.GroupConfig{Brokers: brokers, Group: "billing", Topics: []string{"orders"}},
//		Opts:        []kgo.Opt{kgo.ClientID("billing")},
//	})
//
// # Poll loop
//
// One goroutine polls the client (PollRecords) with a short timeout (100ms,
// 10ms while a partition is paused) and never blocks on the graphs: the
// records of one partition in a fetch are handed to Group.Deliver in calls
// of at most 128 (and at most an eighth of pipeline.WithMaxInFlightBytes;
// a heavier record goes alone); when Deliver asks for a pause the
// partition is paused in kgo (PauseFetchPartitions) once the poll's
// records are handled, after the source took what kgo had buffered (up
// to half its share below), since kgo drops a paused partition's buffered
// records and fetches them again. The rest of what the
// source took for a paused partition is kept by it, not delivered: when
// Group.Resumable lists the partition (checked whenever Group.Wake fires)
// the source delivers it, and resumes the partition in kgo
// (ResumeFetchPartitions) once nothing of it is left. The source keeps at
// most an eighth of each in-flight limit (at least 128 records): a poll
// takes at most as many records as that leaves room for, none while
// the source holds an eighth of the byte budget (see docs/lifecycle.md,
// "Backpressure"), and none while the runtime's in-flight budget is full
// (a record taken then would only pause its partition, and kgo would
// fetch the rest of its batch again; the groups of exactly-once and of a
// follow.Source tell it as the runtime's does) except kgo's fetch errors
// (a deleted topic is seen only in a fetch) and one poll after each
// second the budget stays full. A partition revoked or lost while paused is resumed
// in kgo, which keeps pauses across assignments, and what the source kept
// of it is dropped. The high watermark of every fetched
// partition is reported to Group.HighWatermark when it moves; Polled after
// every poll, Joined at the first assignment (possibly empty).
//
// # Rebalances
//
// kgo runs OnPartitionsAssigned, OnPartitionsRevoked and OnPartitionsLost
// on its own goroutine and holds the rebalance until they return. Each of
// them hands its partitions to the poll loop (waking the poll in progress)
// and waits until the loop served them, so every Group call happens on the
// goroutine of Run: Group.Assign before kgo fetches the new partitions;
// Group.Revoke and a synchronous commit of what it returned before kgo
// rejoins (cooperative) or sends JoinGroup (eager); Group.Lose and no
// commit for lost partitions (kgo's fatal group errors: ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, a session that expired). kgo.BlockRebalanceOnPoll is
// not used: with it a poll blocks while a callback waits, which would
// deadlock a callback waiting for the poll loop. A callback that comes
// before the loop runs (kgo joins while a transactional producer's id
// initializes) waits for it; once Run stops serving (it leaves the
// group: the shutdown, a fatal error, a producer id that could not be
// initialized) the callbacks waiting are answered without a Group call
// and later ones return at once, so kgo's Close never waits for a loop
// that has ended.
//
// The default balancer is kgo's (cooperative-sticky). Eager assignors are
// chosen with kgo.Balancers in Config.Opts (kgo.RangeBalancer,
// kgo.RoundRobinBalancer, kgo.StickyBalancer). KIP-848 (the broker
// assigns) is kgo.ServerSideBalancer together with
// kgo.Balancers(kgo.RangeBalancer()) or kgo.Balancers(kgo.StickyBalancer()),
// on a Kafka 4.0+ cluster; kgo falls back to the classic protocol
// otherwise.
//
// # Offsets
//
// kgo's auto-commit is off (kgo.DisableAutoCommit): the source sends every
// commit itself, one at a time, with CommitOffsetsSync on a goroutine of
// its own. Every Config.CommitInterval the loop collects Group.Offsets and,
// unless a commit is in flight, commits them in the background; a failed
// commit is retried at the next interval. On revoke and on shutdown the
// source waits for the commit in flight, then commits synchronously, both
// bounded by 40% of Config.CloseTimeout; the final commit is retried while
// the coordinator answers REBALANCE_IN_PROGRESS; a final commit the group
// refuses because its membership moved on (also a REBALANCE_IN_PROGRESS
// still answered at the end of that bound) is a warning, no error: no
// record is lost, the next owner processes the records after the previous
// commit again. A commit in flight that
// holds a lost partition is waited for (bounded the same) before the loss
// is acknowledged to kgo. Offsets of partitions the source does not own are
// never committed (an owned-set fence). Group.Committed receives every
// commit's duration, and a *sluice.CommitError naming the commit when it failed;
// failures expected around rebalances are logged at debug level. Every
// commit runs under a context bounded by Config.CloseTimeout.
//
// # Offset store
//
// With Config.OffsetStore set (a sink that keeps its partitions' offsets
// in its own transactions, such as a txsink.Writer in exactly-once mode),
// every assignment calls its Claim once, on the poll goroutine while
// OnPartitionsAssigned waits, with the partitions this member does not own
// yet (the whole new assignment under an eager balancer, the added
// partitions under cooperative-sticky and KIP-848), before their graphs
// are built. kgo then fetches the group's committed offsets of the new
// partitions and, before it fetches any of their records, passes them to
// the source's kgo.AdjustFetchOffsetsFn, which replaces those the store
// named: such a partition starts at the store's offset, earlier or later
// than the group's commit; one it left out starts at the group's committed
// offset (or the reset offset). The claim is also where the store fences
// the partition's previous owner: that member's writes are refused from
// then on. A Claim error (or a negative offset, or one for a partition
// the store was not asked to claim) stops Run with an error naming
// Config.OffsetStore, the group and the partitions; nothing of them is
// delivered. The group's commits go on as usual, so lag tools keep
// working; a partition's commit moves once a record of it completed (a
// partition started past the group's commit, with nothing new to read,
// shows that difference as lag until then). The store and a transactional producer
// ([NewTransactionalProducer]) are two exactly-once modes: Run refuses a
// source with both before it joins the group.
//
// # Defaults and options
//
// Before Config.Opts the source sets kgo.FetchMaxWait(100ms) (kgo's 5s
// would keep a resumed partition waiting behind a long-poll fetch) and
// kgo.ConsumeResetOffset to the start of the partition (as
// auto.offset.reset=earliest; kgo already starts a partition without a
// commit at its start), and sizes kgo's prefetch from the runtime's
// in-flight limits (pipeline.WithMaxInFlightBytes, WithMaxInFlight), so
// that memory stays within the budget plus a constant at any partition
// count: kgo.MaxConcurrentFetches(4), kgo.FetchMaxBytes of a 32nd of the
// byte budget (at least 64 KiB, at most kgo's 50 MiB) and
// kgo.FetchMaxPartitionBytes of kgo's 1 MiB or less. Those are bytes on
// the wire, which compressed batches exceed once decompressed, so from
// the first batch read on the source lowers them (Client.UpdateFetchMaxBytes)
// to what decompresses to a 32nd of the byte budget and holds a 32nd of
// the record limit (or 1 MiB on the wire when that holds more records),
// one partition's part an eighth of the record limit at most, at the
// compression ratio and record size of the batches read lately; its first
// fetch asks for one batch. kgo's defaults
// (50 MiB a fetch, one fetch buffered per broker) held 600 MiB with a
// 16 MiB budget on the embedded broker. Config.Opts may change all of
// them (the source then leaves the fetch sizes alone), and everything else
// (TLS, SASL, fetch sizes, balancers, the group timeouts, InstanceID),
// except the options the source sets itself and relies on: kgo.SeedBrokers,
// kgo.ConsumerGroup, kgo.ConsumeTopics, kgo.ConsumeRegex,
// kgo.ConsumePartitions, kgo.ShareGroup, kgo.GroupProtocol,
// kgo.DisableAutoCommit, kgo.AutoCommitInterval, kgo.AutoCommitMarks,
// kgo.GreedyAutoCommit, kgo.AutoCommitCallback, kgo.OnPartitionsAssigned,
// kgo.OnPartitionsRevoked, kgo.OnPartitionsLost,
// kgo.OnPartitionsCallbackBlocked, kgo.BlockRebalanceOnPoll,
// kgo.AdjustFetchOffsetsFn, kgo.WithLogger and kgo.WithPools. NewSource
// finds them by applying Config.Opts to a probe client (kgo.NewClient dials nothing) and
// comparing each with kgo's default (Client.OptValues), and refuses them
// with an error naming the option and the reason. An option set to kgo's
// default value cannot be told from an unset one.
//
// The source gives kgo a pool of the []kgo.Record slices it decodes
// fetched batches into (kgo.WithPools with a kgo.PoolRecords) and
// recycles every record as its poll loop converts it, so the slices are
// reused instead of allocated per batch: that is about two fifths of what
// the client allocates per record, and the collector runs about half as
// often. Keys, values and headers are not pooled: they stay valid for as
// long as a graph, or the user's code, holds them.
//
// # Timeouts
//
// At Run start the source derives the group timeouts from the runtime's
// drain timeout (Group.DrainTimeout), unless Config.Opts set them:
// kgo.RebalanceTimeout is drain timeout + the commit timeout (40% of
// Config.CloseTimeout) + 6s, at least the session timeout (30s with the
// defaults, kgo's is 60s); kgo.SessionTimeout 10s (kgo's is 45s);
// kgo.HeartbeatInterval min(3s, session/3). A kgo.RebalanceTimeout in
// Config.Opts below drain timeout + commit timeout, the longest a revoke
// keeps the poll loop, makes Run fail before any other Group call. With
// KIP-848 the session and heartbeat are broker settings.
//
// # Shutdown
//
// When ctx is done: Group.Shutdown (the drain); the final synchronous
// commit, once the background commit in flight was answered; leaving the
// group (LeaveGroupContext; kgo's revoke while leaving is answered at
// once); closing the client. The commit and the leave share the first 40%
// of Config.CloseTimeout (the leave at least 10%), Close the rest, on its
// own goroutine. Run returns an error naming each step that did not finish
// in time.
//
// # Differences from the librdkafka source
//
//   - Options are kgo.Opt values, not librdkafka properties; Topics are
//     exact names (no "^" regular expressions).
//   - No librdkafka workarounds: kgo needs no assign/unassign calls from the
//     callbacks, so the source does not unsubscribe and drain revokes
//     itself before Close, and a fatal error does not leak the client.
//   - Run returns an error before ctx is done only when the client was
//     closed under it (kgo.ErrClientClosed); other fetch errors are logged
//     as warnings while kgo retries.
//   - A consumed topic deleted and created again under the same name is
//     consumed anew: kgo fails its partitions with UNKNOWN_TOPIC_ID (it
//     never adopts a new topic ID), so the source loses them (their graphs
//     are cancelled, nothing of theirs is committed), purges the topic from
//     the client and adds it back; the group assigns the new topic's
//     partitions, consumed from the start offset (the committed offsets
//     belonged to the deleted topic). The purge waits for kgo's metadata
//     loop, so it runs in the background, the topic paused meanwhile: the
//     other topics go on being consumed and committed, and Run stops when
//     ctx is done. The librdkafka source keeps its fetch position across
//     the recreation instead.
//   - Commits carry no leader epoch (-1).
//
// # Producing
//
// [NewProducer] creates one kgo client shared by every partition's
// sink.Produce stages and by [Producer.DeadLetter]; close it after Run
// returned. The contracts are package sink's (sink.Producer, sink.Produce;
// the librdkafka producer of package sink/confluent runs on the same
// internal core): a value commits only after its delivery was
// acknowledged; a Produce stage keeps at most its share of
// kgo.MaxBufferedRecords outstanding (1,024 to 16,384 messages, see
// sink.Produce) and has room for all their reports, so kgo's promise
// goroutine, which calls every promise one at a time,
// never waits on a stage's full channel; while kgo buffers
// kgo.MaxBufferedRecords records (or kgo.MaxBufferedBytes bytes) a stage
// or dead letter waits for a report (or 5ms) and sends again: kgo's
// blocking Produce is never entered deaf to the partition's end, and
// nothing is dropped. A dead letter carries the record's key, value,
// timestamp and headers, then the sluice.DeadLetterHeader* headers;
// within Run its call returns once kgo took it, and Run waits for the
// delivery report before the record counts as done (up to 1024 of a
// partition's dead letters in flight, one report channel each, so kgo's
// promise goroutine never waits on them either). Errors kgo does not retry
// (kerr with Retriable false, UNKNOWN_TOPIC_OR_PARTITION after
// kgo.UnknownTopicRetries, a closed client) are sluice.Permanent; a
// delivery timeout is transient.
//
// Defaults: kgo's acks=all and idempotent writes, a linger of 5ms
// ([DefaultProducerLinger], as librdkafka's and, since Kafka 4.0, Java's: fewer, larger
// produce requests for a steady flow, at most 5ms more before a delivery
// report), metadata at most every second
// ([DefaultProducerMetadataMinAge]: a partition that refused a write
// without naming its new leader is retried once kgo knows where it went,
// and kgo's 5s stalled the Produce stages writing to it), and
// ProducerConfig.DeliveryTimeout (30s) as
// each record's produce context. kgo.RecordDeliveryTimeout is refused: kgo counts it
// from the record's timestamp, which a dead letter keeps from the invalid
// record, so old records' dead letters would fail at once. Also refused in
// ProducerConfig.Opts, with an error naming the option: kgo.SeedBrokers,
// kgo.WithLogger, kgo.TransactionalID, kgo.ManualFlushing,
// kgo.DefaultProduceTopicAlways and the consumer options
// (kgo.ConsumerGroup, kgo.ConsumeTopics, kgo.ConsumeRegex,
// kgo.ConsumePartitions, kgo.ShareGroup), found against a probe client as
// for the source.
//
// [Producer.Close] flushes for up to ProducerConfig.CloseTimeout, then
// gives up on what is left (it ends the records' produce contexts and
// calls kgo.AbortBufferedRecords, bounded by a second), closes the
// client (bounded by a second) and returns a *sluice.CloseError naming
// the messages given up on by the input records they came from, as every
// sink.Producer does.
//
// # Exactly-once
//
// [NewTransactionalProducer] binds a transactional producer to a source
// (confluent.NewTransactionalProducer's twin): its Produce stages and dead
// letters and the input offsets commit in one Kafka transaction per
// commit interval, through the source's own kgo client (KIP-447), which
// then reads its input with read_committed. See docs/exactly-once.md
// ("Backends") for how it drives kgo and what differs from librdkafka.
//
// # Logs
//
// franz-go's logs go to Config.Logger through an adapter (kgo.WithLogger):
// kgo's Error and Warn levels map to slog's, its Info and Debug to slog's
// Debug (kgo logs a couple of dozen info lines when a client starts and
// more on every rebalance), and kgo only formats the levels the handler
// enables. The source's own events
// (assignments, revokes, losses, commit failures) are logged there too.
package franz

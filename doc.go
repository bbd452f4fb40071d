// Package sluice is the vocabulary shared by Sluice's runtime (package
// pipeline), its sources (source, franz, follow, testkit), its sinks (sink,
// franz) and its hooks (metrics): the types and values that cross the
// boundaries between them. It imports nothing else of the project, so
// every other package can import it.
//
// It holds:
//
//   - the data: [Record], [Header], [TopicPartition], [Offset], the
//     [Message] a producing stage writes and the [DeadLetter] a dead-letter
//     destination gets (with the [DeadLetterHeaderTopic] headers the Kafka
//     destinations add);
//   - the error marks a stage function returns: [Invalid] (bad input, to
//     the dead-letter destination) and [Permanent] (stop without
//     retrying); the [RetryPolicy] of everything else ([DefaultRetry]);
//   - the errors Run and the clients return: [StageError], [BuildError],
//     [PanicError], [CommitError], [CloseError], and the values they wrap
//     ([ErrRevoked], [ErrAbandoned], [ErrMissingTopic], ...);
//   - the contracts between the runtime and a source: [Source], [Group],
//     [AckGroup] (share groups, with [Ack]), and the [StartChecker] of a
//     dead-letter destination;
//   - [GroupConfig], the client-independent half of the Kafka
//     consumer-group sources' configuration (source.Config and
//     franz.Config embed it), with [DefaultCommitInterval] and
//     [DefaultCloseTimeout];
//   - the event hooks: [Hook] and one interface per event
//     ([HookPartitionAssigned], [HookStageCall], ...).
//
// Package pipeline runs a consumer (pipeline.Run, its options, the
// Builder, the Partition and the Stream a graph is built from); package
// stages holds the stages. A consumer imports this package for the
// records its functions take and the marks they return:
//
//	func decode(_ context.Context, r sluice.Record) (Order, error) {
//		var o Order
//		if err := json.Unmarshal(r.Value, &o); err != nil {
//			return o, sluice.Invalid(err) // bad data: to the dead-letter destination
//		}
//		return o, nil
//	}
package sluice

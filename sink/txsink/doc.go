// Package txsink writes a partition's values to a transactional store (a
// database) in batches, at least once or exactly once. It is the
// database-independent half of a database sink: package sink/postgres is
// one [Store]; a MySQL, ClickHouse or SQLite sink implements [Store] and
// [Tx] and gets the same batching, retries, error handling and
// exactly-once protocol, checked by package sink/txsink/txsinktest.
//
// # At least once
//
// [Writer.Write] is a terminal stage: it collects a partition's values
// into batches (a count, a byte weight, a linger time), writes each batch
// in one transaction and completes the values' records once the
// transaction committed. After a crash the records since the group's last
// commit are consumed again and their rows written again: make the writes
// idempotent (an upsert) or use exactly-once.
//
// # Exactly once
//
// With Options.ExactlyOnce, each transaction also stores the partition's
// position in the store's own offsets table, next to the rows, so rows
// and offset commit together or not at all. The Writer is then the
// source's offset store too (pass it as source.Config.OffsetStore or
// franz.Config.OffsetStore): at every assignment it claims the
// partitions (Store.Claim raises each partition's owner epoch and returns
// the stored position) and the source starts where the store says, not
// where the group's commit says. The group's commits still follow, so lag
// tools keep working; the store is the truth.
//
// The position holds three things:
//   - Next, where the partition resumes: the oldest record not finished
//     when the transaction ran (every record before it was written,
//     filtered out or had its dead letter delivered);
//   - Written, the newest offset whose value the Writer wrote: on resume,
//     values of records up to Written are skipped (completed without a
//     write), since their rows are in the store already;
//   - Invalid, the offsets at or past Next whose values the store refused
//     (sluice.Invalid): those are not skipped on resume but written
//     again, so their dead letters are sent again if they had not been.
//
// A commit that fails may have committed all the same (the connection
// dropped during it): the Writer reads the position back (Store.Read) and
// takes the batch as committed if it finds exactly the position it
// stored; when even the read fails, it writes nothing until a later read
// tells. A partition whose first record comes before the stored Next
// means the source could not start there (the topic was deleted and
// created again, or truncated): Run stops with an error naming the
// partition rather than skip the new records as written.
//
// Fencing: a transaction stores the position only if the owner epoch it
// was claimed with is still the partition's (Tx.StoreOffset, [ErrFenced]);
// the next owner's Claim raised it, so a member that lost the partition
// (a zombie) cannot commit rows or offsets over its successor. A fenced
// Writer rolls the batch back and stops writing that partition: its
// records stay uncommitted until the source takes the partition away.
//
// One exactly-once Writer serves one consumer group, and a partition's
// graph writes through it once: its Write stage takes the partition's
// claim, and a second Write stage of the same Writer in that graph fails
// for want of one. A second exactly-once Writer cannot be the source's
// offset store too, so to fill several tables from one record, write them
// from one Store (one transaction).
//
// Exactly-once needs each value to come from one record, in offset order:
// put the Writer after Map and Filter, not after a Pool that reorders,
// a FlatMap or a Batch. The Writer checks this and stops Run with an
// error naming the partition and offset otherwise. Side effects outside
// the store (an HTTP call, a message) are not part of the transaction:
// they happen at least once.
//
// # Errors
//
// A Store classifies its errors: marked with sluice.Invalid, the value's
// fault (a constraint violation, a bad value, when writing or at commit):
// the Writer writes the batch's values one at a time (Tx.WriteOne) to
// find which, commits the rest and dead-letters those; if the store then
// still refuses the batch, which it accepted value by value, no value is
// to blame and Run stops. Marked with sluice.Permanent, the store cannot
// be used (bad credentials, a missing table): Run stops with the error.
// Anything else is transient (a lost connection, a serialization
// failure, a deadlock): the whole transaction is retried under the
// stage's retry policy. An error marked sluice.Invalid from Begin or
// StoreOffset names no value either: Run stops with it as permanent.
package txsink

// Package postgres writes a partition's values into a PostgreSQL table,
// at least once or exactly once, on github.com/jackc/pgx/v5.
//
// [New] returns a txsink.Writer of [Row]s (one value per column of
// Config.Columns): add its Write stage at the end of each partition's
// graph. Rows go in batches, one transaction each: through COPY for plain
// inserts, through multi-row INSERT ... ON CONFLICT DO UPDATE with
// Config.Conflict (an upsert, which makes redelivered rows harmless; rows
// of one batch with the same key are written in order, the later
// updating the earlier).
//
// # Exactly once
//
// With Config.ExactlyOnce each transaction also stores the partition's
// position in an offsets table (Config.OffsetsTable, see [OffsetsDDL]),
// and the Writer is the source's offset store: set
// source.Config.OffsetStore or franz.Config.OffsetStore to it. Then:
//   - a partition resumes where the table says, not where the group's
//     commit says, and rows of records already written are not written
//     again: after a crash, a kill or a rebalance each record's row is in
//     the table once;
//   - each assignment raises the partition's owner epoch in the offsets
//     table, and a transaction stores its position only under the epoch
//     it was claimed with, so a member that lost the partition (a zombie)
//     cannot commit rows over its successor's;
//   - the group's commits still follow (lag tools work); the table is the
//     truth.
//
// Values must reach the Writer one per record, in offset order (Map and
// Filter before it are fine; a reordering Pool, a FlatMap or a Batch are
// not): Run stops with an error naming the offset otherwise. Nothing but
// the rows and the position is inside the transaction: a side effect of
// a stage before the Writer (an HTTP call, a produced message) happens at
// least once. docs/postgres.md says what each mode guarantees and costs.
//
// # Errors
//
// A row PostgreSQL refuses (a constraint violation, SQLSTATE class 23,
// including a deferred constraint checked at commit; a bad value, class
// 22), a value pgx cannot encode for its column and a Row with the wrong
// number of values are dead-lettered, with an error naming the table, and
// the rest of their batch committed: the batch is written again row by
// row, each in a savepoint, to find them. Bad credentials, a
// missing database, schema, table, column or privilege (classes 28, 3D, 3F, 42) stop
// Run with the error, which names them; so does a missing offsets table
// without Config.CreateOffsetsTable, at the first claim. Everything else
// (a lost connection, a serialization failure, a deadlock, a server
// restart) is transient: the batch's transaction is retried under the
// stage's retry policy (pipeline.WithRetry), on a new connection when the
// old one broke. In exactly-once mode, a commit that failed without
// saying whether it committed is settled by reading the position back
// before the batch is written again.
package postgres

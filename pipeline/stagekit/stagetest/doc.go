// Package stagetest checks that a stage keeps the ticket contract every
// stage must keep, whoever wrote it, in the spirit of testing/slogtest:
// one call runs the whole suite on a stage (see [Run]).
//
// The contract (docs/stages.md, package stagekit): every value's ticket
// completes exactly once (done, dropped, failed as invalid, or failed with
// an error that stops pipeline.Run), so a record commits exactly when every
// value derived from it finished, never before and never twice; values
// derived from one record keep it uncommitted until all of them
// completed; an invalid value dead-letters its record once; the stage's
// goroutines exit when the partition is revoked (a drain, which completes
// what the stage was fed within the drain timeout) or lost (its context is
// cancelled) and Run returns; a stage never holds values forever.
//
// The suite runs the stage between a source of input values (the i-th
// record of one partition becomes [Stage.Input](i)) and, for a stage with
// outputs, a sink of its own that completes each output value when the
// check says so: at once, or held and completed one by one in the order
// they arrived, or in the reverse order. Every check runs in its own
// testing/synctest bubble over a testkit.Harness, so time (a batch's
// maxWait, the drain timeout) passes only when every goroutine is blocked,
// and every committed offset is compared exactly.
//
// Each check is a subtest named for the clause it checks, and each
// failure message names the stage and the clause:
//
//   - "each input yields its outputs once"
//   - "commits exactly the completed prefix"
//   - "no commit before every derived value completed"
//   - "invalid values dead-lettered once"
//   - "revoke drains and Run returns"
//   - "loss cancels and Run returns"
//   - "no goroutine left"
//
// The first three need the stage's outputs and are skipped for a stage
// that ends a graph ([Stage.End]); the dead-letter check is skipped when
// no input is invalid ([Stage.Invalid]). A stage that completes a ticket
// twice, or completes it and still passes the value on, makes Run stop
// with stagekit.ErrTicketCompleted: the check that sees it reports Run's
// error under its clause.
package stagetest

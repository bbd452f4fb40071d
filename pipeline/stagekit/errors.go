package stagekit

import "github.com/sluice-go/sluice/internal/engine"

// ErrTicketCompleted is wrapped by the *sluice.StageError that stops
// pipeline.Run when a stage used a ticket with no reference left: it
// passed on a value whose ticket it had completed ([Stage.Done], Drop or
// Fail, then [Outlet.Send]), completed one reference twice, or called
// Retain, Join or Split on a ticket already completed. The error names the
// stage that used the ticket, the partition, and the record's offset while
// the record is still held (-1 once it left). The partition's context is
// cancelled with the error, and nothing more of the partition is
// committed (in share mode: acknowledged); see the package documentation
// for what may have been committed before.
var ErrTicketCompleted = engine.ErrTicketCompleted

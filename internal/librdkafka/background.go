package librdkafka

import "sync"

// SourceBackground returns the WaitGroup counting the client calls a
// *source.Source runs on goroutines of their own (its commits, its Close).
// Run stops waiting for one past its bound (Config.CloseTimeout) and
// leaves it running: it returns once librdkafka is done with it, which
// takes the broker (an unanswered commit is retried until the coordinator
// answers, and Close waits for it). Tests in this module wait on it before
// they stop the broker, so that such calls end rather than outlive the
// test. Package source sets it once, in its init; like SourceSlot, a
// function set here keeps it out of the API users see.
var SourceBackground func(src any) *sync.WaitGroup

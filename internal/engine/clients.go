package engine

import "sync/atomic"

// buildsStarted counts the graph builds every Run of the process started;
// each graph keeps the number of its own (graph.buildSeq).
var buildsStarted atomic.Uint64

// ClientStamp records when a client meant to serve every partition (a
// Kafka producer) was created, relative to the graph builds of the
// process, so that a stage using it can tell a client created while its
// own graph was being built: by the builder, which runs once per
// partition, so each partition (and each reassignment) would get a client
// of its own that nothing closes. The zero ClientStamp is no stamp.
type ClientStamp struct {
	builds uint64 // buildsStarted when the client was created
	set    bool
}

// StampClient returns the stamp of a client created now.
func StampClient() ClientStamp { return ClientStamp{builds: buildsStarted.Load(), set: true} }

// CreatedDuringBuild reports whether the client stamped c was created
// after the build of in's graph started, that is inside the builder. Call
// it from the builder, when adding the stage that uses the client. A zero
// in or c reports false.
func CreatedDuringBuild[T any](in Stream[T], c ClientStamp) bool {
	if in.e == nil || !c.set {
		return false
	}
	return c.builds >= in.e.g.buildSeq
}

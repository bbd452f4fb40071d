package franz

import "testing"

// As TestSourceCommitsAnotherTopicWhileAPurgeWaitsForMetadata, with a
// transactional producer bound to the source (exactly-once, the same
// runner and client): the offsets of stays are committed in the
// producer's transactions while the purge of orders waits, and orders
// is consumed anew once the broker answers.
func TestTransactionalSourceCommitsAnotherTopicWhileAPurgeWaitsForMetadata(t *testing.T) {
	commitsWhileAPurgeWaits(t, txnEnd)
}

// As TestSourceStopsWithinCloseTimeoutWhileAPurgeWaitsForMetadata, with a
// transactional producer bound to the source: Run must return within
// Config.CloseTimeout of its context's end (plus a margin), and the
// producer close cleanly after.
func TestTransactionalSourceStopsWithinCloseTimeoutWhileAPurgeWaitsForMetadata(t *testing.T) {
	stopsWhileAPurgeWaits(t, txnEnd)
}

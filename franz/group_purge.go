package franz

// How the group source consumes a topic anew (runner.topicsGone).
//
// kgo purges a topic from a client (PurgeTopicsFromClient) on its metadata
// loop, after the Metadata request in flight there was answered; kgo
// retries a slow one, so the purge may wait for many seconds. The poll
// loop must not wait for it: it commits the offsets of the other topics,
// delivers their records, serves the rebalances kgo hands over and sees
// Run's context end. So the purge runs on a goroutine of its own,
// counted in Source.background.
//
// That is safe with kgo's group management (consumer_group.go,
// consumer.go purgeTopics): the purge takes kgo's consumer and group
// locks, which kgo never holds while it waits for a rebalance callback,
// and then only signals the group (a rejoin, or a heartbeat under
// KIP-848); the rebalance that follows hands its callbacks to the poll
// loop as any other (rebalance.go): a revoke of the purged topic's
// partitions finds them lost already, or, if the group assigned them
// again while the purge waited, owned with nothing fetched and so
// nothing to commit. The topic's partitions were lost
// before the purge started, so nothing of the old topic is committed, and
// a partition of it the group assigns while the purge waits gets no
// record: the topic stays paused in kgo (PauseFetchTopics) until it is
// purged, which also keeps kgo from fetching it under its old ID, answered
// with UNKNOWN_TOPIC_ID at once, at the pace of the broker's answers.
// The pause ends with the purge, before the topic is added back.
//
// Closing the client ends a purge still waiting for the metadata loop to
// take it (kgo stops waiting once the client's context is cancelled); one
// the loop took finishes first. So Run returns with no purge running,
// unless Close itself did not finish in time: then the purge ends with
// it, in the background.

// goneAgain is the debug log of a topic reported gone while its purge
// runs (runner.topicsGone).
const goneAgain = "the topic, reported gone again, is already being consumed anew (its purge from the client waits for kgo's metadata loop)"

// consumeAnew pauses topic in the client, then, on a goroutine of its
// own, purges it from the client, resumes it and adds it back
// (AddConsumeTopics), unless Run is leaving the group by then. It records
// the purge in r.purges. Poll goroutine only.
func (r *runner) consumeAnew(topic string) {
	done := make(chan struct{})
	if r.purges == nil {
		r.purges = make(map[string]chan struct{})
	}
	r.purges[topic] = done
	cl := r.cl
	cl.PauseFetchTopics(topic)
	r.s.background.Add(1)
	go func() {
		defer r.s.background.Done()
		defer close(done)
		cl.PurgeTopicsFromClient(topic)
		if r.leaving.Load() {
			return // the client is about to close: nothing is consumed any more
		}
		cl.ResumeFetchTopics(topic)
		cl.AddConsumeTopics(topic)
	}()
}

// purging reports whether topic's purge from the client still runs,
// forgetting it once it is done. Poll goroutine only.
func (r *runner) purging(topic string) bool {
	done, ok := r.purges[topic]
	if !ok {
		return false
	}
	select {
	case <-done:
		delete(r.purges, topic)
		return false
	default:
		return true
	}
}

// awaitPurges waits for every purge started: once the client is closed,
// each returns at once. Poll goroutine only.
func (r *runner) awaitPurges() {
	for topic, done := range r.purges {
		<-done
		delete(r.purges, topic)
	}
}

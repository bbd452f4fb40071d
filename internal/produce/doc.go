// Package produce is the client-independent half of Sluice's producers
// (package sink/confluent on confluent-kafka-go, package franz on
// franz-go, and testkit's fake): the Produce stage's loop (the
// outstanding bound, delivery reports, the drain, stopping at once when
// the partition's context ends, a closed producer), the dead-letter
// destination (original bytes plus the sluice.dlq.* headers, waiting for
// the delivery report) and the bookkeeping behind a bounded Close
// (pending reports, the messages given up on, CloseError).
//
// A backend implements [Client] for its library, owns one [Tracker] per
// producer, and embeds the [Core] that [NewCore] makes of the two in its
// Producer: that makes the Producer a [Backend], and so a sink.Producer,
// which sink.Produce ([Stage]) and the backend's DeadLetter
// ([CoreDeadLetter]) send through. Nothing here is generic over the
// client: every receiver's report channel is a chan [Event]. Everything
// the user sees (names, error prefixes, the ErrClosed sentinel) comes from
// the backend through [Names].
package produce

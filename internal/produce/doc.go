// Package produce is the client-independent half of Sluice's producers
// (package sink on confluent-kafka-go, package franz on franz-go): the
// Produce stage's loop (the outstanding bound, delivery reports, the drain,
// stopping at once when the partition's context ends, a closed producer),
// the dead-letter destination (original bytes plus the sluice.dlq.*
// headers, waiting for the delivery report) and the bookkeeping behind a
// bounded Close (pending reports, the messages given up on, CloseError).
//
// A backend implements [Client] for its library and owns one [Tracker]
// per producer; everything the user sees (names, error prefixes, the
// ErrClosed sentinel) comes from the backend through [Names].
package produce

// Package txsinktest checks and stands in for a txsink.Store. Run is the
// conformance suite a Store passes when txsink.Writer can rely on it (a
// database sink runs it against a real database); MemStore is the
// in-memory reference store, for tests of a graph ending in a
// txsink.Writer that need no database: it can refuse values, fail
// commits and lose commit replies on request.
package txsinktest

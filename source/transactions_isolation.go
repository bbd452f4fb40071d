package source

import "fmt"

// exactlyOnceIsolation refuses an isolation.level override other than
// read_committed on a source with a transactional producer bound. The
// rewind after an abort (Rewind: Consumer.Committed) must not read a
// committed offset older than one a committed transaction wrote, and
// librdkafka (v2.11.1, src/rdkafka.c: rd_kafka_committed) sends its
// OffsetFetch with require_stable_offsets only under read_committed, its
// default: under read_uncommitted it gets the previous offset while the
// last transaction's commit markers are still being written, and the
// rewind processes again records whose outputs are committed. Input
// written by transactions must be read committed anyway.
func (c Config) exactlyOnceIsolation() error {
	v, ok := c.Overrides["isolation.level"]
	if !ok || fmt.Sprint(v) == "read_committed" {
		return nil
	}
	return fmt.Errorf(`source: Config.Overrides["isolation.level"] is %q, but a transactional producer is bound (exactly-once): the source must read committed (its rewinds read the committed offsets with require_stable_offsets only then); remove the override`, fmt.Sprint(v))
}

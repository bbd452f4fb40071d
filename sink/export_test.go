package sink

// Pending returns how many messages p handed to librdkafka whose delivery
// report no receiver has read yet (for tests in package sink_test).
func Pending(p *Producer) int64 { return p.pending.Load() }

package franz

// ProducerPending returns how many messages p handed to kgo whose
// delivery report no receiver has read yet (for tests in franz_test).
func ProducerPending(p *Producer) int64 { return p.tr.Pending() }

// MaxBufferedBytesOf returns the kgo.MaxBufferedBytes p's client was
// created with (0: no limit), for tests in franz_test.
func MaxBufferedBytesOf(p *Producer) int64 { return p.maxBytes }

// MaxBuffered is the bound of kgo's buffer that p's Produce stages share
// (kgo.MaxBufferedRecords), for tests in franz_test.
func MaxBuffered(p *Producer) int { return (client{p}).MaxBuffered() }

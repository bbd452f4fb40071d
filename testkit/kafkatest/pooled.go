package kafkatest

// TestingM is what a TestMain's m offers: *testing.M, and what
// goleak.VerifyTestMain takes.
type TestingM interface{ Run() int }

// Pooled wraps a TestMain's m so that the Apache Kafka brokers that
// [NewBroker] started for the package's tests are stopped once the tests
// ran, before the caller checks for leaks:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(kafkatest.Pooled(m)) }
//
// With kfake it changes nothing. A broker process never outlives the test
// binary in any case (it is killed when the binary ends, however it ends);
// Pooled ends them earlier and tidily.
func Pooled(m TestingM) TestingM { return pooledM{m} }

type pooledM struct{ m TestingM }

func (p pooledM) Run() int {
	defer closePool()
	return p.m.Run()
}

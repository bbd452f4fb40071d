// Package kafkatest starts a Kafka broker for tests and examples, with
// helpers to create topics, produce records, read them back, commit and
// inspect offsets and set group configs, and a [Logger] for the clients
// under test. Pair it with testkit.Start to run a pipeline on a
// real client against the real protocol: either backend's source and
// producer (source.NewSource and package sink/confluent on librdkafka, or
// franz.NewSource and franz.NewProducer on franz-go) connect to
// [Broker.Addr] like to any cluster.
//
// Two brokers, one API:
//
//   - kfake, franz-go's in-process broker (the default): starts in
//     milliseconds, needs nothing installed and supports fault injection
//     ([NewKfake], [Broker.Cluster]), but implements the protocol without
//     being Kafka; a test that depends on a detail where they differ
//     should say so.
//   - Apache Kafka ([ApacheKafkaVersion]), when the environment variable
//     [EnvBroker] is SLUICE_TEST_BROKER=apache: [NewBroker] then starts
//     real brokers in Java processes on loopback (Java 17+ and Maven
//     needed; the jars are fetched once and cached). A package's tests
//     share one single-node cluster, reset between tests; wrap the
//     package's TestMain in [Pooled]. [StartApache] starts one directly,
//     and go run ./testkit/kafkatest/localkafka runs one from the command
//     line.
//
// [NewBroker] picks the broker from the environment, so one test runs on
// both; [NewKfake] always starts kfake, for tests that inject faults.
//
// It is a package of its own so that unit tests using only testkit's fake
// source and harness link no Kafka client.
package kafkatest

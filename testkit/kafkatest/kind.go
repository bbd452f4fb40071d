package kafkatest

import (
	"fmt"
	"os"
)

// Kind names the broker a Broker runs on.
type Kind string

const (
	// Kfake is franz-go's kfake, in this process: starts in milliseconds,
	// needs nothing installed, supports fault injection ([Broker.Cluster]),
	// and differs from Kafka in places (docs/reliability.md lists those
	// the tests met).
	Kfake Kind = "kfake"
	// Apache is Apache Kafka (the version [ApacheKafkaVersion] names) in
	// Java processes on loopback. It needs Java 17+ and Maven.
	Apache Kind = "apache"
)

// EnvBroker is the environment variable that picks the broker of
// [NewBroker]: "kfake" (the default, also when unset) or "apache".
const EnvBroker = "SLUICE_TEST_BROKER"

// KindFromEnv returns the Kind that [EnvBroker] names, or an error naming
// the variable and its value when it names none.
func KindFromEnv() (Kind, error) {
	return ParseKind(os.Getenv(EnvBroker))
}

// ParseKind parses "kfake", "apache" or "" (kfake).
func ParseKind(s string) (Kind, error) {
	switch Kind(s) {
	case "", Kfake:
		return Kfake, nil
	case Apache:
		return Apache, nil
	}
	return "", fmt.Errorf("kafkatest: %s=%q: want %q or %q", EnvBroker, s, Kfake, Apache)
}

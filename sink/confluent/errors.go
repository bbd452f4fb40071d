package confluent

import (
	"errors"
	"fmt"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/sluice-go/sluice"
)

// permanentCodes are the client errors that producing the same message
// again cannot fix: the client is closed or broken, the message or the
// request is refused for what it is, the topic does not exist (librdkafka
// already waited topic.metadata.propagation.max.ms for it), or the
// configuration or credentials are wrong. librdkafka has already retried
// what it considers retriable before it reports a delivery failure.
var permanentCodes = map[kafka.ErrorCode]bool{
	kafka.ErrState:                              true, // closed client
	kafka.ErrPurgeQueue:                         true, // given up on by Close
	kafka.ErrPurgeInflight:                      true,
	kafka.ErrFatal:                              true,
	kafka.ErrMsgSizeTooLarge:                    true,
	kafka.ErrRecordListTooLarge:                 true,
	kafka.ErrInvalidRecord:                      true,
	kafka.ErrUnknownTopic:                       true,
	kafka.ErrUnknownPartition:                   true,
	kafka.ErrUnknownTopicOrPart:                 true,
	kafka.ErrTopicException:                     true,
	kafka.ErrInvalidArg:                         true,
	kafka.ErrInvalidType:                        true,
	kafka.ErrInvalidConfig:                      true,
	kafka.ErrInvalidRequiredAcks:                true,
	kafka.ErrNotImplemented:                     true,
	kafka.ErrUnsupportedVersion:                 true,
	kafka.ErrUnsupportedForMessageFormat:        true,
	kafka.ErrTopicAuthorizationFailed:           true,
	kafka.ErrClusterAuthorizationFailed:         true,
	kafka.ErrTransactionalIDAuthorizationFailed: true,
	kafka.ErrAuthentication:                     true,
	kafka.ErrSaslAuthenticationFailed:           true,
}

// classify marks err, a failure to produce or deliver a message, with
// sluice.Permanent when producing again cannot help (see
// permanentCodes, and any fatal error of the client), so that Run stops at
// once instead of retrying; other errors (a delivery timed out while the
// cluster was unreachable) stay transient.
func (p *Producer) classify(err error) error {
	var kerr kafka.Error
	switch {
	case errors.Is(err, ErrClosed):
		return sluice.Permanent(err)
	case errors.As(err, &kerr) && (kerr.IsFatal() || permanentCodes[kerr.Code()]):
		return sluice.Permanent(err)
	}
	if ferr := p.fatalError(); ferr != nil {
		return sluice.Permanent(fmt.Errorf("%w (the producer failed for good: %v)", err, ferr))
	}
	return err
}

// fatalError returns the client's fatal error (after which it produces
// nothing), nil if none or if the client is closing.
func (p *Producer) fatalError() error {
	var err error
	p.tr.WhileOpen(func() { err = p.p.GetFatalError() })
	return err
}

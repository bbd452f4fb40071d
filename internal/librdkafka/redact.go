package librdkafka

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// harmless are the sasl.* and ssl.* properties whose values are logged:
// every other property of those families is redacted, so that one added
// to librdkafka later (or misspelt) is never logged by mistake.
var harmless = map[string]bool{
	"sasl.mechanism":                        true,
	"sasl.mechanisms":                       true,
	"sasl.kerberos.service.name":            true,
	"sasl.kerberos.principal":               true,
	"sasl.kerberos.min.time.before.relogin": true,
	"sasl.oauthbearer.method":               true,
	"sasl.oauthbearer.scope":                true,
	"sasl.oauthbearer.token.endpoint.url":   true,
	"sasl.oauthbearer.client.id":            true,
	"ssl.endpoint.identification.algorithm": true,
	"ssl.cipher.suites":                     true,
	"ssl.curves.list":                       true,
	"ssl.sigalgs.list":                      true,
	"ssl.ca.location":                       true,
	"ssl.ca.certificate.stores":             true,
	"ssl.crl.location":                      true,
	"enable.ssl.certificate.verification":   true,
}

// Secret reports whether the value of property k must never be logged:
// every sasl.* and ssl.* property but the harmless ones (names, paths of
// public material, algorithms), and any property whose name mentions a
// password, secret, key, token, credential, passphrase, PEM, certificate
// or JAAS configuration.
func Secret(k string) bool {
	k = strings.ToLower(k)
	if harmless[k] {
		return false
	}
	if strings.HasPrefix(k, "sasl.") || strings.HasPrefix(k, "ssl.") || strings.HasPrefix(k, "ssl_") {
		return true
	}
	for _, s := range []string{"password", "secret", "key", "token", "jaas", "credential", "passphrase", "pem", "certificate"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// Redacted renders m for logging, sorted by key, with the values of
// [Secret] properties replaced by "[redacted]".
func Redacted(m kafka.ConfigMap) []any {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	attrs := make([]any, 0, len(keys))
	for _, k := range keys {
		v := "[redacted]"
		if !Secret(k) {
			switch x := m[k].(type) {
			case string:
				v = x
			case int:
				v = strconv.Itoa(x)
			default:
				v = fmt.Sprint(x)
			}
		}
		attrs = append(attrs, slog.String(k, v))
	}
	return attrs
}

package source

import (
	"fmt"
	"math"
	"strconv"
)

// floatProperties are the librdkafka properties of type double
// (rdkafka_conf.c, _RK_C_DBL, librdkafka v2.11): the only ones a
// non-integral number may be given for. They are producer properties
// (a consumer ignores them with a warning); they are listed so that a
// configuration shared between producer and consumer is accepted.
var floatProperties = map[string]bool{
	"queue.buffering.max.ms": true,
	"linger.ms":              true, // alias of queue.buffering.max.ms
}

// normalizeOverride converts the value of Overrides[k] to one of the types
// confluent-kafka-go's ConfigMap accepts (string, bool, int): it rejects
// every other number type with "Invalid value type" when the client is
// created. Numbers decoded from JSON or YAML are float64, so a float with
// an integral value becomes an int; a non-integral one is an error, except
// for librdkafka's float properties, which get it as text.
func normalizeOverride(k string, v any) (any, error) {
	switch x := v.(type) {
	case string, bool, int:
		return v, nil
	case int8:
		return int(x), nil
	case int16:
		return int(x), nil
	case int32:
		return int(x), nil
	case int64:
		return intFrom(k, x)
	case uint:
		return uintToInt(k, uint64(x))
	case uint8:
		return int(x), nil
	case uint16:
		return int(x), nil
	case uint32:
		return uintToInt(k, uint64(x))
	case uint64:
		return uintToInt(k, x)
	case float32:
		return floatOverride(k, float64(x), 32)
	case float64:
		return floatOverride(k, x, 64)
	default:
		return nil, fmt.Errorf("source: Config.Overrides[%q]: unsupported value type %T (want a string, bool or number)", k, v)
	}
}

func intFrom(k string, x int64) (any, error) {
	if x < math.MinInt || x > math.MaxInt {
		return nil, fmt.Errorf("source: Config.Overrides[%q] = %d: out of range", k, x)
	}
	return int(x), nil
}

func uintToInt(k string, x uint64) (any, error) {
	if x > math.MaxInt {
		return nil, fmt.Errorf("source: Config.Overrides[%q] = %d: out of range", k, x)
	}
	return int(x), nil
}

func floatOverride(k string, x float64, bits int) (any, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil, fmt.Errorf("source: Config.Overrides[%q] = %v: not a finite number", k, x)
	}
	if floatProperties[k] {
		return strconv.FormatFloat(x, 'g', -1, bits), nil
	}
	if x != math.Trunc(x) {
		return nil, fmt.Errorf("source: Config.Overrides[%q] = %v: librdkafka wants an integer for this property", k, x)
	}
	// -MinInt (2^63 or 2^31) is exact as a float64, MaxInt is not.
	if x < math.MinInt || x >= -math.MinInt {
		return nil, fmt.Errorf("source: Config.Overrides[%q] = %v: out of range", k, x)
	}
	return int(x), nil
}

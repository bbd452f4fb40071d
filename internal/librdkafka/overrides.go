package librdkafka

import (
	"fmt"
	"math"
	"strconv"
)

// floatProperties are the librdkafka properties of type double
// (rdkafka_conf.c, _RK_C_DBL, librdkafka v2.11): the only ones a
// non-integral number may be given for. They are producer properties
// (a consumer ignores them with a warning); the source accepts them too so
// that a configuration shared between producer and consumer works.
var floatProperties = map[string]bool{
	"queue.buffering.max.ms": true,
	"linger.ms":              true, // alias of queue.buffering.max.ms
}

// NormalizeOverrides returns a copy of m with every value converted by
// [NormalizeOverride]; field names the map in errors ("source:
// Config.Overrides").
func NormalizeOverrides(field string, m map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		nv, err := NormalizeOverride(field, k, v)
		if err != nil {
			return nil, err
		}
		out[k] = nv
	}
	return out, nil
}

// NormalizeOverride converts the value of property k to one of the types
// confluent-kafka-go's ConfigMap accepts (string, bool, int): it rejects
// every other number type with "Invalid value type" when the client is
// created, and renders a float64 in exponent form ("1e+06", which
// librdkafka refuses for an integer property). Numbers decoded from JSON
// or YAML are float64, so a float with an integral value becomes an int;
// a non-integral one is an error, except for librdkafka's float
// properties, which get it as text. Errors read "<field>[k] ...".
func NormalizeOverride(field, k string, v any) (any, error) {
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
		return intFrom(field, k, x)
	case uint:
		return uintToInt(field, k, uint64(x))
	case uint8:
		return int(x), nil
	case uint16:
		return int(x), nil
	case uint32:
		return uintToInt(field, k, uint64(x))
	case uint64:
		return uintToInt(field, k, x)
	case float32:
		return floatOverride(field, k, float64(x), 32)
	case float64:
		return floatOverride(field, k, x, 64)
	default:
		return nil, fmt.Errorf("%s[%q]: unsupported value type %T (want a string, bool or number)", field, k, v)
	}
}

func intFrom(field, k string, x int64) (any, error) {
	if x < math.MinInt || x > math.MaxInt {
		return nil, fmt.Errorf("%s[%q] = %d: out of range", field, k, x)
	}
	return int(x), nil
}

func uintToInt(field, k string, x uint64) (any, error) {
	if x > math.MaxInt {
		return nil, fmt.Errorf("%s[%q] = %d: out of range", field, k, x)
	}
	return int(x), nil
}

func floatOverride(field, k string, x float64, bits int) (any, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil, fmt.Errorf("%s[%q] = %v: not a finite number", field, k, x)
	}
	if floatProperties[k] {
		return strconv.FormatFloat(x, 'g', -1, bits), nil
	}
	if x != math.Trunc(x) {
		return nil, fmt.Errorf("%s[%q] = %v: librdkafka wants an integer for this property", field, k, x)
	}
	// -MinInt (2^63 or 2^31) is exact as a float64, MaxInt is not.
	if x < math.MinInt || x >= -math.MinInt {
		return nil, fmt.Errorf("%s[%q] = %v: out of range", field, k, x)
	}
	return int(x), nil
}

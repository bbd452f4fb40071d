package franz

import (
	"reflect"
	"runtime"
	"strings"
)

// runtimeFuncName returns the unqualified name of function fn, or "".
func runtimeFuncName(fn any) string {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func {
		return ""
	}
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return ""
	}
	name := f.Name()
	return name[strings.LastIndexByte(name, '.')+1:]
}

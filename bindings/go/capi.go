package omprpc

// The only file besides client.go that touches C: conversions between Go and C strings,
// status names, versions, the ABI handshake.

/*
#include <stdlib.h>
#include <string.h>
#include "omprpc.h"
*/
import "C"

import (
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Timeout values of the C API.
const (
	timeoutInfinite = int64(C.OMPRPC_TIMEOUT_INFINITE)
	timeoutDefault  = int64(C.OMPRPC_TIMEOUT_DEFAULT)
)

// HeaderABIVersion is OMPRPC_ABI_VERSION of the header this package was compiled against.
const HeaderABIVersion = uint32(C.OMPRPC_ABI_VERSION)

// Version is the loaded library's version string.
func Version() string { return C.GoString(C.omprpc_version()) }

// ABIVersion is the loaded library's C ABI version (omprpc_abi_version()).
func ABIVersion() uint32 { return uint32(C.omprpc_abi_version()) }

func statusName(s Status) string { return C.GoString(C.omprpc_status_name(C.int(s))) }

var (
	abiOnce sync.Once
	abiErr  error
)

// abiMismatch is the error for a library whose ABI differs from the header's.
func abiMismatch(header, library uint32) error {
	if header == library {
		return nil
	}
	return newError("start", StatusInvalidArgument,
		"ABI mismatch: this Go package was compiled against OMPRPC_ABI_VERSION %d, but the loaded libomprpc (%s) "+
			"reports ABI %d; rebuild the library and the package from the same checkout", header, Version(), library)
}

// checkABI refuses a library built for another ABI; checked once, on the first Start.
func checkABI() error {
	abiOnce.Do(func() { abiErr = abiMismatch(HeaderABIVersion, ABIVersion()) })
	return abiErr
}

// cstring copies s to C memory (free it with C.free). A NUL byte would silently cut the
// string short in C, so it is refused.
func cstring(op, what, s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, newError(op, StatusInvalidArgument, "%s contains a NUL byte", what)
	}
	return C.CString(s), nil
}

// optCString is cstring, with NULL for an empty s.
func optCString(op, what, s string) (*C.char, error) {
	if s == "" {
		return nil, nil
	}
	return cstring(op, what, s)
}

func freeC(p *C.char) {
	if p != nil {
		C.free(unsafe.Pointer(p))
	}
}

// takeBytes copies a string the library returned into Go memory and releases it.
func takeBytes(p *C.char) []byte {
	if p == nil {
		return nil
	}
	n := C.strlen(p)
	b := make([]byte, int(n))
	adviseHugePages(b)
	copy(b, unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n)))
	if n >= freeInBackground {
		// Freeing a large string gives its pages back to the OS (munmap), ~15 ms for a
		// 64 MB turn: not on the caller's path. Nothing reads p after the copy.
		go C.omprpc_string_free(p)
	} else {
		C.omprpc_string_free(p)
	}
	return b
}

// freeInBackground is the size from which takeBytes frees the library's string on another
// goroutine; hugePagesFrom the size from which it asks for huge pages for its copy.
const (
	freeInBackground = 1 << 20
	hugePagesFrom    = 4 << 20
)

// takeString is takeBytes for text.
func takeString(p *C.char) string {
	if p == nil {
		return ""
	}
	s := C.GoString(p)
	C.omprpc_string_free(p)
	return s
}

// ms converts a duration to whole milliseconds, rounding up (a C deadline never passes
// before the Go one it stands for).
func ms(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// BuildArgv returns the argv Start would spawn for opts, exactly (system prompts included);
// it starts nothing.
func BuildArgv(opts Options) ([]string, error) {
	js, err := opts.startJSON(nil)
	if err != nil {
		return nil, err
	}
	cs, err := cstring("build_argv", "options", string(js))
	if err != nil {
		return nil, err
	}
	defer freeC(cs)
	var out, cerr *C.char
	st := C.omprpc_build_argv(cs, &out, &cerr)
	if st != C.OMPRPC_STATUS_OK {
		return nil, errorFromJSON("build_argv", Status(st), takeBytes(cerr))
	}
	var argv []string
	if err := unmarshal("build_argv", takeBytes(out), &argv); err != nil {
		return nil, err
	}
	return argv, nil
}

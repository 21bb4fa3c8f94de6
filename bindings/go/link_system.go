//go:build omprpc_system

package omprpc

// -tags omprpc_system: an installed library (`make install PREFIX=…`). Only -lomprpc is set
// here; the header and library directories come from the compiler's default search paths
// or from the environment, e.g.
//
//	CGO_CFLAGS="-I$PREFIX/include" CGO_LDFLAGS="-L$PREFIX/lib -Wl,-rpath,$PREFIX/lib" go build -tags omprpc_system
//
// (Once the project ships an omprpc.pc, this file becomes `#cgo pkg-config: omprpc`.)

/*
#cgo LDFLAGS: -lomprpc
*/
import "C"

//go:build omprpc_system

package omprpc

// -tags omprpc_system: an installed library (`make install PREFIX=…`), found through
// pkg-config and its omprpc.pc:
//
//	PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig go build -tags omprpc_system
//
// At run time the loader finds libomprpc.so.<ABI> through its usual search (ldconfig for a
// system prefix, else LD_LIBRARY_PATH, or CGO_LDFLAGS="-Wl,-rpath,$PREFIX/lib" at build time).

/*
#cgo pkg-config: omprpc
*/
import "C"

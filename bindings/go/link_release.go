//go:build omprpc_release && !omprpc_system && !windows

package omprpc

// -tags omprpc_release: the checkout's optimised build (`make release` / `cargo build --release`).
// Outside a checkout the stand-in header of missing-library/ says what to do (see link_debug.go).

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -I${SRCDIR}/missing-library
#cgo LDFLAGS: -L${SRCDIR}/../../target/release -lomprpc -Wl,-rpath,${SRCDIR}/../../target/release
*/
import "C"

//go:build !omprpc_release && !omprpc_system

package omprpc

// Default: the checkout's debug build (`cargo build` at the repository root), found through
// an rpath, so `go test` works from a fresh `cargo build` with no environment.

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: -L${SRCDIR}/../../target/debug -lomprpc -Wl,-rpath,${SRCDIR}/../../target/debug
*/
import "C"

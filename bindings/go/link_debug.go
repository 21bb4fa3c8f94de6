//go:build !omprpc_release && !omprpc_system && !windows

package omprpc

// Default: the checkout's debug build (`cargo build` at the repository root), found through
// an rpath, so `go test` works from a fresh `cargo build` with no environment. Outside a
// checkout ../../include does not exist and the stand-in header of missing-library/ is found
// instead: its #error tells the user to use the release archive with -tags omprpc_system.

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -I${SRCDIR}/missing-library
#cgo LDFLAGS: -L${SRCDIR}/../../target/debug -lomprpc -Wl,-rpath,${SRCDIR}/../../target/debug
*/
import "C"

//go:build omprpc_release && !omprpc_system

package omprpc

// -tags omprpc_release: the checkout's optimised build (`make release` / `cargo build --release`).

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: -L${SRCDIR}/../../target/release -lomprpc -Wl,-rpath,${SRCDIR}/../../target/release
*/
import "C"

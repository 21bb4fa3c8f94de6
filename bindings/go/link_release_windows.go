//go:build windows && omprpc_release && !omprpc_system

package omprpc

// Windows, -tags omprpc_release: the checkout's optimised build, through its import library
// (see link_debug_windows.go for the directories' order and how the program finds the DLL).

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -I${SRCDIR}/missing-library
#cgo LDFLAGS: -L${SRCDIR}/../../target/x86_64-pc-windows-gnu/release -L${SRCDIR}/../../target/release -lomprpc
*/
import "C"

//go:build windows && !omprpc_release && !omprpc_system

package omprpc

// Windows, no tags: the checkout's debug build, linked through its import library
// (libomprpc.dll.a, which cargo writes beside omprpc.dll). Cross-built from Linux
// (make windows-bindings-test) it is target/x86_64-pc-windows-gnu/debug; built on Windows, target/debug.
// The cross-build's directory comes first: target/debug then holds the Linux build, whose
// libomprpc.a the linker would otherwise take for a Windows library. Windows has no rpath: the
// program finds omprpc.dll beside its .exe or on PATH (docs/windows.md).

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -I${SRCDIR}/missing-library
#cgo LDFLAGS: -L${SRCDIR}/../../target/x86_64-pc-windows-gnu/debug -L${SRCDIR}/../../target/debug -lomprpc
*/
import "C"

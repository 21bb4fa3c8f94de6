package omprpc

/*
#include "omprpc.h"
*/
import "C"

import (
	"runtime"
	"syscall"
	"unsafe"
)

// EventHandle is EventFD's Windows counterpart (EventFD fails there with ErrInvalidArgument):
// a manual-reset event that is set (signalled) while the library holds events nobody has
// taken yet, and once the client is closed — for a program that waits on it with its own
// handles (syscall.WaitForSingleObject, WaitForMultipleObjects) instead of parking a
// goroutine on Events. The client owns it: never reset, set or close it. It is valid until
// Close, after which the value may name another object; EventHandle then returns ErrClosed.
// Everything EventFD's comment says about the pump and prompt_complete holds for it too.
//
// The pump itself does not wait on it: it waits inside the library for the next batch, which
// Close wakes, on every platform.
func (c *Client) EventHandle() (syscall.Handle, error) {
	defer runtime.KeepAlive(c)
	var h unsafe.Pointer
	err := c.h.do("event_handle", func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_event_handle(p, &h, perr)
	})
	if err != nil {
		return syscall.InvalidHandle, err
	}
	return syscall.Handle(uintptr(h)), nil
}

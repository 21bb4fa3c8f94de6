package omprpc

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Status is an omprpc_status: the result of a C call. Its values are never renumbered; its
// constants (StatusOK …) are generated from the header's enum into status_gen.go.
type Status int

// String is the status name the library gives it ("TIMEOUT"; "UNKNOWN" for other values).
func (s Status) String() string { return statusName(s) }

// Sentinel errors, one per failure status. Every error this package returns for a failed
// call matches exactly one of them with errors.Is.
var (
	ErrInvalidArgument = errors.New("omprpc: invalid argument")
	ErrInvalidJSON     = errors.New("omprpc: invalid JSON")
	ErrInvalidUTF8     = errors.New("omprpc: invalid UTF-8")
	ErrTimeout         = errors.New("omprpc: timeout")
	ErrCommandFailed   = errors.New("omprpc: command failed")
	ErrProcessExited   = errors.New("omprpc: agent process exited")
	ErrClosed          = errors.New("omprpc: client closed")
	ErrConcurrency     = errors.New("omprpc: another prompt-lifecycle call is running")
	ErrProtocol        = errors.New("omprpc: protocol error")
	ErrIO              = errors.New("omprpc: I/O error")
	ErrNotFound        = errors.New("omprpc: not found")
	ErrCancelled       = errors.New("omprpc: cancelled by the agent")
	ErrLimitExceeded   = errors.New("omprpc: limit exceeded")
	ErrPanic           = errors.New("omprpc: internal panic")
	// ErrUnknownStatus stands for a status this binding does not know (a newer library).
	ErrUnknownStatus = errors.New("omprpc: unknown status")
)

var sentinels = [...]error{
	StatusInvalidArgument: ErrInvalidArgument,
	StatusInvalidJSON:     ErrInvalidJSON,
	StatusInvalidUTF8:     ErrInvalidUTF8,
	StatusTimeout:         ErrTimeout,
	StatusCommandFailed:   ErrCommandFailed,
	StatusProcessExited:   ErrProcessExited,
	StatusClosed:          ErrClosed,
	StatusConcurrency:     ErrConcurrency,
	StatusProtocol:        ErrProtocol,
	StatusIO:              ErrIO,
	StatusNotFound:        ErrNotFound,
	StatusCancelled:       ErrCancelled,
	StatusLimitExceeded:   ErrLimitExceeded,
	StatusPanic:           ErrPanic,
}

// Sentinel returns the sentinel error of a failure status (ErrUnknownStatus for others).
func (s Status) Sentinel() error {
	if s > 0 && int(s) < len(sentinels) {
		return sentinels[s]
	}
	return ErrUnknownStatus
}

// Error is a failed call: the status, its name (Code) and the library's message.
// errors.Is(err, ErrTimeout) and friends match through Unwrap. When a context deadline
// ended the wait, the error also matches context.DeadlineExceeded.
type Error struct {
	Status  Status
	Code    string
	Message string
	// Op names the call that failed ("prompt_and_wait"); empty when unknown.
	Op     string
	ctxErr error
}

func (e *Error) Error() string {
	if e.Op != "" {
		return fmt.Sprintf("omprpc: %s: %s: %s", e.Op, e.Code, e.Message)
	}
	return fmt.Sprintf("omprpc: %s: %s", e.Code, e.Message)
}

// Unwrap gives the status's sentinel (and the context's error when a context ended the call).
func (e *Error) Unwrap() []error {
	if e.ctxErr != nil {
		return []error{e.Status.Sentinel(), e.ctxErr}
	}
	return []error{e.Status.Sentinel()}
}

// CommandError is the agent's `success:false` answer to a command (also a late prompt
// failure). errors.Is(err, ErrCommandFailed) holds, and errors.As finds the *Error too.
type CommandError struct {
	// Command is the command the agent refused ("prompt", "set_model" …).
	Command string
	// Message is the agent's own error text.
	Message string
	// Code is the agent's errorCode, when it sent one.
	Code string
	Err  *Error
}

func (e *CommandError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("omprpc: command %s failed (%s): %s", e.Command, e.Code, e.Message)
	}
	return fmt.Sprintf("omprpc: command %s failed: %s", e.Command, e.Message)
}

// Unwrap gives the underlying *Error (which unwraps to ErrCommandFailed).
func (e *CommandError) Unwrap() error { return e.Err }

// wireError is the library's out_error JSON.
type wireError struct {
	Code      string `json:"code"`
	Status    Status `json:"status"`
	Message   string `json:"message"`
	Command   string `json:"command"`
	Error     string `json:"error"`
	ErrorCode string `json:"errorCode"`
}

// errorFromJSON builds the Go error of a failed call from its status and error JSON
// (which may be empty: out_error is optional).
func errorFromJSON(op string, st Status, js []byte) error {
	var w wireError
	if len(js) > 0 && json.Unmarshal(js, &w) == nil {
		if w.Status != 0 {
			st = w.Status
		}
	} else {
		w.Message = "(no error detail)"
	}
	if w.Code == "" {
		w.Code = st.String()
	}
	e := &Error{Status: st, Code: w.Code, Message: w.Message, Op: op}
	if st == StatusCommandFailed && w.Command != "" {
		msg := w.Error
		if msg == "" {
			msg = w.Message
		}
		return &CommandError{Command: w.Command, Message: msg, Code: w.ErrorCode, Err: e}
	}
	return e
}

// newError is an error raised by the binding itself, with the library's status vocabulary.
func newError(op string, st Status, format string, args ...any) *Error {
	return &Error{Status: st, Code: st.String(), Message: fmt.Sprintf(format, args...), Op: op}
}

// closedMessage is the core's own CLOSED message for a client its host closed: the handle is
// gone by then, so the binding says it (errortable_test.go holds the two equal).
const closedMessage = "the client is closed: close() stopped the agent"

func closedError(op string) *Error {
	return newError(op, StatusClosed, closedMessage)
}

// withContext marks a timeout the context's deadline caused.
func withContext(err error, ctxErr error) error {
	var e *Error
	if ctxErr != nil && errors.As(err, &e) && e.Status == StatusTimeout {
		c := *e
		c.ctxErr = ctxErr
		return &c
	}
	return err
}
